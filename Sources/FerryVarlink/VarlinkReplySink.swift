import FerryJSON

/// Where a method handler sends the intermediate replies of a `more` call.
///
/// Each `send` queues one reply with `"continues": true` on the connection, in order,
/// before the final reply (the handler's return value). Memory per connection is
/// bounded: when the client does not read and the queued replies exceed the server's
/// `outputBufferLimit`, `send` waits up to `slowPeerGrace` for room and then throws
/// `VarlinkSinkError.peerTooSlow`; nothing is dropped silently. When the client goes
/// away, `send` throws `.peerGone` and the handler's task is cancelled.
public final class VarlinkReplySink: Sendable {
    private let channel: ReplyChannel
    /// Intermediate replies are allowed (`more` without `oneway`).
    private let streaming: Bool
    /// Replies are suppressed (`oneway`): `send` succeeds without sending.
    private let suppressed: Bool
    private let finished = Locked(false)

    init(channel: ReplyChannel, more: Bool, oneway: Bool) {
        self.channel = channel
        self.streaming = more && !oneway
        self.suppressed = oneway
    }

    /// False once the client has disconnected.
    public var isPeerConnected: Bool { !channel.output.isClosed }

    /// Queues an intermediate reply (`"continues": true`) for a `more` call.
    ///
    /// For a `oneway` call it does nothing: the spec forbids any reply.
    /// - Throws: `VarlinkSinkError.notStreaming` when the call was made without `more`;
    ///   `.peerGone` when the client disconnected; `.peerTooSlow` when the outgoing
    ///   buffer stayed full for the grace period; `.callFinished` after the handler returned.
    public func send(_ parameters: [String: JSONValue]) async throws(VarlinkSinkError) {
        if finished.withLock({ $0 }) { throw .callFinished }
        if suppressed { return }
        guard streaming else { throw .notStreaming }
        let bytes = VarlinkReplyMessage(parameters: parameters, continues: true).encoded()
        switch await channel.output.reserve(bytes.count, grace: channel.slowPeerGrace) {
        case .success:
            channel.deliver(bytes)
        case let .failure(error):
            throw error
        }
    }

    /// Queues an intermediate reply encoded beforehand (see `VarlinkEncodedReply`), with the
    /// same rules as `send(_ parameters:)`.
    public func send(_ reply: VarlinkEncodedReply) async throws(VarlinkSinkError) {
        if finished.withLock({ $0 }) { throw .callFinished }
        if suppressed { return }
        guard streaming else { throw .notStreaming }
        switch await channel.output.reserve(reply.bytes.count, grace: channel.slowPeerGrace) {
        case .success:
            channel.deliver(reply.bytes)
        case let .failure(error):
            throw error
        }
    }

    /// Queues an intermediate reply now, without waiting, from any thread (on the server's
    /// event-loop thread it is written at once, with no hand-off): for pushing one change to
    /// many watchers from the thread that committed it. Fails with `.peerTooSlow` when the
    /// connection's reply buffer has no room right now (nothing is queued then; the caller
    /// can fall back to `send`, which waits for room), `.peerGone` when the client left.
    public func sendNow(_ reply: VarlinkEncodedReply) -> VarlinkSinkError? {
        if finished.withLock({ $0 }) { return .callFinished }
        if suppressed { return nil }
        guard streaming else { return .notStreaming }
        if let error = channel.output.tryReserve(reply.bytes.count) { return error }
        channel.deliver(reply.bytes)
        return nil
    }

    /// `sendNow` for several replies in order, handed to the connection together (one job for
    /// its event loop and one write, not one per reply). A reply that has no room first sends
    /// the ones gathered before it (on the event-loop thread they are written at once, which
    /// can make room) and is tried again; when it still has no room it stops there, as
    /// `sendNow` would fail on it, and the ones before it are sent.
    /// - Returns: how many replies were sent, and the error that stopped the rest (nil when
    ///   all were sent).
    public func sendNow(_ replies: [VarlinkEncodedReply]) -> (sent: Int, error: VarlinkSinkError?) {
        if finished.withLock({ $0 }) { return (0, .callFinished) }
        if suppressed { return (replies.count, nil) }
        guard streaming else { return (0, .notStreaming) }
        // Replies `first..<sent` are reserved and not handed over yet.
        var first = 0
        var sent = 0
        func handOver() {
            if sent - first == 1 {
                channel.deliver(replies[first].bytes)   // one reply: its own buffer, no copy
            } else if sent > first {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(replies[first..<sent].reduce(0) { $0 + $1.bytes.count })
                for reply in replies[first..<sent] { bytes += reply.bytes }
                channel.deliver(bytes)
            }
            first = sent
        }
        while sent < replies.count {
            if let error = channel.output.tryReserve(replies[sent].bytes.count) {
                if sent == first { return (sent, error) }
                handOver()
                continue
            }
            sent += 1
        }
        handOver()
        return (sent, nil)
    }

    /// Marks the call finished; later `send`s throw `.callFinished`.
    func finish() {
        finished.withLock { $0 = true }
    }
}
