import FerryJSON
import Glibc

/// A connection to a Varlink service over a Unix socket.
///
/// Calls may be issued concurrently and are pipelined on the one connection; replies
/// come back in call order and reach the right caller. A `more` call's stream holds the
/// connection until it ends (later calls are answered after it). All clients of the
/// process share one event-loop thread.
///
/// ```swift
/// let client = try VarlinkClient(address: "unix:/run/ferry/ferry.sock")
/// let info = try await client.call("org.varlink.service.GetInfo")
/// for try await event in client.callMore("org.example.Watch", ["since": 42]) { ... }
/// ```
public final class VarlinkClient: Sendable {
    private let connection: ClientConnection

    /// Connects to `address`: `unix:PATH`, `unix:@abstract`, or a bare path.
    /// - Throws: `VarlinkClientError.invalidAddress` or `.system` (e.g. `connect` failing
    ///   with `ENOENT` or `ECONNREFUSED`).
    public init(address: String, maxMessageSize: Int = 16 << 20) throws(VarlinkClientError) {
        var path = address
        if address.hasPrefix("unix:") {
            path = String(address.dropFirst("unix:".count))
            // Parameters after ";" (e.g. ";mode=0600") only matter to a listener.
            if let semicolon = path.firstIndex(of: ";") { path = String(path[..<semicolon]) }
        } else if address.contains(":") {
            throw .invalidAddress(address)
        }
        guard !path.isEmpty else { throw .invalidAddress(address) }
        let loop: EventLoop
        let fd: Int32
        do {
            loop = try Self.sharedLoop()
            fd = try UnixSocket.connect(path: path)
        } catch {
            throw .system(error)
        }
        let connection = ClientConnection(loop: loop, fd: fd, maxMessageSize: maxMessageSize)
        self.connection = connection
        loop.execute { connection.register() }
    }

    /// Closes the connection once replies still awaited (a `callMore` stream that
    /// outlives the client, say) have arrived.
    deinit {
        let connection = self.connection
        connection.loop.execute { connection.closeWhenNothingPending() }
    }

    /// Calls `method` and returns the reply's parameters (always a JSON object).
    /// - Throws: `VarlinkClientError.remote` with the service's error name and
    ///   parameters, `.connectionClosed`, `.protocolViolation` or `.system`.
    public func call(
        _ method: String, _ parameters: [String: JSONValue] = [:]
    ) async throws(VarlinkClientError) -> JSONValue {
        try await call(VarlinkCallMessage(method: method, parameters: parameters))
    }

    /// Sends `message` (a plain call: its `oneway` and `more` must be false) and returns the
    /// reply's parameters, as `call(_:_:)`.
    public func call(_ message: VarlinkCallMessage) async throws(VarlinkClientError) -> JSONValue {
        try await send(message.encoded()) { .single($0) }
    }

    /// Sends `message` (a plain call) and returns the reply with the objects at `paths` (from
    /// the reply's parameters, for example `[.key("record"), .key("payload")]`) left as the
    /// text the service sent, byte for byte (`VarlinkClientReply.captured`). Throws as
    /// `call(_:_:)`.
    public func call(
        _ message: VarlinkCallMessage, capturing paths: [[JSONPathComponent]]
    ) async throws(VarlinkClientError) -> VarlinkClientReply {
        let full = paths.map { [.key("parameters")] + $0 }
        return try await send(message.encoded()) { .capturing($0, paths: full) }
    }

    /// Queues a call's `bytes` on the loop and waits for its one reply, handed over through
    /// the `Pending` that `awaiting` makes of the continuation.
    private func send<T: Sendable>(
        _ bytes: [UInt8],
        awaiting: @escaping @Sendable (CheckedContinuation<Result<T, VarlinkClientError>, Never>) -> ClientConnection.Pending
    ) async throws(VarlinkClientError) -> T {
        let connection = self.connection
        let result: Result<T, VarlinkClientError> = await withCheckedContinuation { continuation in
            connection.loop.execute {
                if let error = connection.send(bytes, awaiting: awaiting(continuation)) {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Queues a `more` call's `bytes` and returns the stream of its replies, handed over
    /// through the `Pending` that `awaiting` makes of the stream's continuation. Ending the
    /// stream early closes the connection.
    private func openStream<T: Sendable>(
        _ bytes: [UInt8],
        awaiting: @escaping @Sendable (AsyncThrowingStream<T, Error>.Continuation) -> ClientConnection.Pending
    ) -> AsyncThrowingStream<T, Error> {
        let connection = self.connection
        let (stream, continuation) = AsyncThrowingStream<T, Error>.makeStream()
        continuation.onTermination = { termination in
            if case .cancelled = termination {
                connection.loop.execute { connection.close() }
            }
        }
        connection.loop.execute {
            if let error = connection.send(bytes, awaiting: awaiting(continuation)) {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }

    /// Calls `method` with `"more": true` and streams every reply's parameters until the
    /// one without `continues`. An error reply ends the stream by throwing
    /// `VarlinkClientError.remote`.
    ///
    /// Stopping early (breaking out of the loop, cancelling the task) closes the
    /// connection, as the spec prescribes for a client that is no longer interested;
    /// other calls waiting on this client then fail with `.connectionClosed`.
    public func callMore(
        _ method: String, _ parameters: [String: JSONValue] = [:]
    ) -> AsyncThrowingStream<JSONValue, Error> {
        openStream(VarlinkCallMessage(method: method, parameters: parameters, more: true).encoded()) { .stream($0) }
    }

    /// `callMore` with the objects at `paths` (from each reply's parameters) left as the text
    /// the service sent, as `call(_:capturing:)`.
    public func callMore(
        _ method: String, _ parameters: [String: JSONValue], capturing paths: [[JSONPathComponent]]
    ) -> AsyncThrowingStream<VarlinkClientReply, Error> {
        let full = paths.map { [.key("parameters")] + $0 }
        return openStream(VarlinkCallMessage(method: method, parameters: parameters, more: true).encoded()) {
            .capturingStream($0, paths: full)
        }
    }

    /// Sends a `oneway` call: the service runs it and sends no reply. Returns once the
    /// call is queued on the connection.
    /// - Throws: `VarlinkClientError.connectionClosed` (or the error the connection
    ///   closed with) when it can no longer send.
    public func oneway(_ method: String, _ parameters: [String: JSONValue] = [:]) async throws(VarlinkClientError) {
        let bytes = VarlinkCallMessage(method: method, parameters: parameters, oneway: true).encoded()
        let connection = self.connection
        let failure: VarlinkClientError? = await withCheckedContinuation { continuation in
            connection.loop.execute {
                continuation.resume(returning: connection.send(bytes, awaiting: nil))
            }
        }
        if let failure { throw failure }
    }

    /// Closes the connection; calls still waiting fail with `.connectionClosed`.
    public func close() {
        let connection = self.connection
        connection.loop.execute { connection.close() }
    }

    private static let shared = Locked<EventLoop?>(nil)

    /// The event loop all clients of the process share, started on first use.
    private static func sharedLoop() throws(SystemCallError) -> EventLoop {
        try shared.withLock { (loop) throws(SystemCallError) -> EventLoop in
            if let loop { return loop }
            let created = try EventLoop(name: "varlink-client")
            loop = created
            return created
        }
    }
}
