import Glibc

/// Limits and modes of a `VarlinkServer`.
public struct VarlinkServerConfiguration: Sendable {
    /// Largest message accepted from a client (without its NUL); a bigger one closes the
    /// connection. Varlink's customary limit: 16 MiB.
    public var maxMessageSize: Int = 16 << 20
    /// Deepest JSON nesting accepted in a call; deeper calls close the connection.
    public var maxJSONDepth: Int = 256
    /// Per-connection cap on reply bytes queued but not yet read by the client. Streamed
    /// replies beyond it wait, then fail with `VarlinkSinkError.peerTooSlow`.
    public var outputBufferLimit: Int = 4 << 20
    /// How long a streamed reply waits for room before the peer counts as too slow.
    public var slowPeerGrace: Duration = .seconds(5)
    /// How long a too-slow peer then gets to read what is queued, its final reply (the error
    /// telling it what to do) included, before it is disconnected. Longer than the grace, so
    /// that a client that stalled for a while still learns why its stream ended; the queue
    /// it drains is capped by `outputBufferLimit`.
    public var slowPeerDrainTime: Duration = .seconds(30)
    /// Connections beyond this are closed as soon as they are accepted.
    public var maxConnections: Int = 4096
    /// Written (whole or not at all, without waiting) to a connection closed for
    /// `maxConnections` before it is closed: an encoded error reply, which its client reads as
    /// the answer to its first call and so learns why. Nil: it is closed with nothing.
    public var connectionLimitReply: [UInt8]?
    /// Cap on what all connections together hold in memory: calls read but not yet handled
    /// (an unfinished message included) and replies queued but not yet read. Past it, a
    /// connection holding more than its fair share (`fairShareBytes`) is closed when it
    /// reads more, and streamed replies beyond a connection's fair share wait for room (then
    /// end with `VarlinkSinkError.peerTooSlow`). Each connection's own caps still apply.
    public var maxBufferedBytes: Int = 256 << 20
    /// What a connection may always hold, whatever the others do.
    public var fairShareBytes: Int = 256 << 10
    /// How long a message may take from its first byte to its NUL: a client that stops in
    /// the middle of one for longer is disconnected (its memory is not held for ever).
    public var incompleteMessageTimeout: Duration = .seconds(30)
    /// How long a connection the peer policy refused is kept for its first call (answered
    /// `PermissionDenied`): one that sends nothing is closed after this, so refused peers
    /// cannot hold connections (up to `maxConnections`) by staying silent.
    public var refusedPeerGrace: Duration = .seconds(1)
    /// Mode of the socket file the server creates.
    public var socketMode: mode_t = 0o600
    /// Mode of the directories the server creates for the socket.
    public var directoryMode: mode_t = 0o700
    /// The longest the server's loop polls for the next call before it sleeps
    /// (`EventLoop.init(name:busyPoll:)`, which adapts the time to how quickly calls come): a
    /// client making one call after another is then not kept waiting for the server thread to
    /// wake. Zero turns it off.
    public var busyPoll: Duration = .zero
    /// `listen(2)` backlog.
    public var backlog: Int32 = 1024

    public init() {}
}
