/// Something the server reports to its logger: refused peers, protocol violations,
/// failures it survived. Delivered on the server's event-loop thread; keep the logger quick.
public enum VarlinkServerEvent: Sendable, CustomStringConvertible {
    /// The peer policy refused a connection; it is answered with
    /// `org.varlink.service.PermissionDenied` and closed. `nil` when the credentials
    /// could not be read.
    case peerRefused(PeerCredentials?)
    /// `maxConnections` was reached; a new connection was closed at once.
    case connectionLimitReached(limit: Int)
    /// A client sent something that is not a Varlink call (not JSON, not an object, too
    /// large, too deep); its connection was closed.
    case protocolViolation(peer: PeerCredentials?, reason: String)
    /// A client did not read its streamed replies; the call ended and the connection
    /// was closed.
    case slowPeerDisconnected(peer: PeerCredentials?)
    /// A system call failed on a connection or the listener; the server went on.
    case systemCallFailed(SystemCallError)
    /// All connections together held `maxBufferedBytes`; this one, holding `held` bytes of
    /// calls not yet handled, was closed when it sent more.
    case bufferBudgetExceeded(peer: PeerCredentials?, held: Int, budget: Int)
    /// All connections together held `maxBufferedBytes`; this one, holding `held` bytes of
    /// replies it did not read (for `stalled` at least), was closed.
    case unreadRepliesDropped(peer: PeerCredentials?, held: Int, budget: Int, stalled: Duration)
    /// A client stopped in the middle of a message for longer than the timeout; its
    /// connection was closed.
    case incompleteMessageTimedOut(peer: PeerCredentials?, held: Int, timeout: Duration)

    public var description: String {
        switch self {
        case let .peerRefused(peer): return "refused peer \(peer.map(String.init(describing:)) ?? "with unknown credentials")"
        case let .connectionLimitReached(limit): return "connection limit of \(limit) reached; closed a new connection"
        case let .protocolViolation(peer, reason):
            return "closed connection of \(peer.map(String.init(describing:)) ?? "unknown peer"): \(reason)"
        case let .slowPeerDisconnected(peer):
            return "disconnected slow peer \(peer.map(String.init(describing:)) ?? "unknown")"
        case let .systemCallFailed(error): return error.description
        case let .bufferBudgetExceeded(peer, held, budget):
            return "closed connection of \(peer.map(String.init(describing:)) ?? "unknown peer") holding \(held) bytes of "
                + "unhandled calls: all connections together reached the cap of \(budget) bytes"
        case let .unreadRepliesDropped(peer, held, budget, stalled):
            return "closed connection of \(peer.map(String.init(describing:)) ?? "unknown peer") holding \(held) bytes of "
                + "replies it has not read for \(stalled): all connections together reached the cap of \(budget) bytes"
        case let .incompleteMessageTimedOut(peer, held, timeout):
            return "closed connection of \(peer.map(String.init(describing:)) ?? "unknown peer"): it had not finished a "
                + "message \(timeout) after starting it (\(held) bytes of it so far; a message must arrive whole within that time)"
        }
    }
}
