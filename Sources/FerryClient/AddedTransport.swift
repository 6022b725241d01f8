/// What `FerryClient.addTransport` did: the transport's status, and what the add could not
/// check.
public struct AddedTransport: Sendable {
    /// The transport as `transports` lists it.
    public var transport: TransportStatus
    /// Set when part of the add could not be checked now (a relay token, when the relay could
    /// not be reached): the transport is added all the same, and its status says what is
    /// wrong once it finds out.
    public var warning: String?
}
