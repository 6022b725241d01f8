/// The identity of the process at the other end of a Unix socket, as the kernel
/// recorded it when the connection was made (`SO_PEERCRED`).
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var processID: Int32
    public var userID: UInt32
    public var groupID: UInt32

    public init(processID: Int32, userID: UInt32, groupID: UInt32) {
        self.processID = processID
        self.userID = userID
        self.groupID = groupID
    }

    public var description: String { "pid \(processID) uid \(userID) gid \(groupID)" }
}
