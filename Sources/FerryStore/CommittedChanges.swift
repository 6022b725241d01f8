/// What one commit added to the change log, as the store tells its commit observer.
///
/// `records` holds every change with `after < seq <= through` that the commit made, in
/// increasing `seq`, each at the version it made current. Sequence numbers of work rolled back
/// inside the transaction are never used, so `records` may have fewer entries than
/// `through - after`: the numbers missing from it hold no change, in the store as here.
public struct CommittedChanges: Sendable {
    /// The greatest sequence number committed before this commit.
    public let after: Int64
    /// The greatest sequence number this commit used.
    public let through: Int64
    public let records: [Record]

    public init(after: Int64, through: Int64, records: [Record]) {
        self.after = after
        self.through = through
        self.records = records
    }
}
