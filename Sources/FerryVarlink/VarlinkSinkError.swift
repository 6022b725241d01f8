/// Why a streamed reply could not be queued.
public enum VarlinkSinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The client disconnected (or the server is shutting down). Stop producing; what
    /// the handler returns is dropped.
    case peerGone
    /// The client reads slower than the handler sends: the connection's outgoing buffer
    /// stayed above `limit` bytes for the whole grace period. Nothing was queued. The
    /// handler should end the call now, typically by throwing an error that tells the
    /// client where to resume; that final reply is still sent, then the connection closes.
    case peerTooSlow(limit: Int)
    /// The call was made without `more` (or with `oneway`), so intermediate replies are
    /// not allowed; return the single reply instead.
    case notStreaming
    /// The handler already returned; the sink outlived its call.
    case callFinished

    public var description: String {
        switch self {
        case .peerGone: return "the peer disconnected"
        case let .peerTooSlow(limit): return "the peer is too slow: more than \(limit) bytes of replies are waiting"
        case .notStreaming: return "the call was not made with \"more\""
        case .callFinished: return "the call has already finished"
        }
    }
}
