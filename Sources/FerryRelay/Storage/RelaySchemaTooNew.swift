/// A relay database whose schema a newer ferry-relay wrote: this one does not know its tables,
/// so it neither serves from it nor migrates it.
public struct RelaySchemaTooNew: Error, CustomStringConvertible {
    /// The version the database has, and the newest this ferry-relay knows.
    public let found: Int
    public let known: Int

    public var description: String {
        "the database has schema version \(found), newer than this ferry-relay knows (\(known)): "
            + "a newer ferry-relay wrote it; run that version or a later one"
    }
}
