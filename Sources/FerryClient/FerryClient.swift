import FerryAPI
import FerryJSON
import FerryVarlink

/// A typed client of ferryd's API (`io.ferry.Store` and `io.ferry.Engine`) over its Unix socket.
///
/// One client holds one connection. Calls may be made concurrently from any task: they are
/// pipelined on the connection and each caller gets its own reply. `watch` opens a connection
/// of its own, so a long-running watch never holds up other calls.
///
/// Every method throws only `FerryClientError`, whose description says what went wrong and
/// what to do about it. Every record method takes an optional `space`; `nil` means the
/// device's private space.
///
/// ```swift
/// let ferry = try FerryClient.connect()
/// let note = try await ferry.put(entity: "note", payload: ["title": "milk"])
/// for try await event in ferry.watch(entities: ["note"]) { ... }
/// ```
public final class FerryClient: Sendable {
    /// The socket this client is connected to.
    public let socketPath: String
    private let varlink: VarlinkClient

    /// Connects to ferryd listening on `socketPath`.
    /// - Throws: `FerryClientError.daemonNotRunning` when there is no socket there,
    ///   `.nobodyListening` for a socket file nobody listens on, `.notASocket` for a directory
    ///   or another file, `.permissionDenied` when the socket may not be opened,
    ///   `.connectionFailed` otherwise.
    public init(socketPath: String) throws(FerryClientError) {
        self.socketPath = socketPath
        self.varlink = try Self.open(socketPath)
    }

    /// Connects to ferryd at `socketPath`, or when it is nil at the default path
    /// (`FerryClient.defaultSocketPath()`: `$FERRY_SOCKET`, else
    /// `$XDG_RUNTIME_DIR/ferry/ferryd.sock`, else `/run/user/<uid>/ferry/ferryd.sock`).
    /// - Throws: as `init(socketPath:)`.
    public static func connect(socketPath: String? = nil) throws(FerryClientError) -> FerryClient {
        try FerryClient(socketPath: socketPath ?? defaultSocketPath())
    }

    /// Closes the connection. Calls still waiting fail with `.connectionClosed`; watches
    /// started from this client are not affected (they have their own connections).
    public func close() {
        varlink.close()
    }

    /// Opens a Varlink connection to `path`, mapping connect failures to `FerryClientError`.
    static func open(_ path: String) throws(FerryClientError) -> VarlinkClient {
        // Bare, so a ";" in the path is not taken for address parameters; only a path with a
        // ":" (which a bare address cannot hold) needs the "unix:" prefix.
        guard !path.isEmpty else { throw .connectionFailed(path: path, reason: "the socket path is empty") }
        do {
            return try VarlinkClient(address: path.contains(":") ? "unix:" + path : path)
        } catch {
            throw FerryClientError(error, socketPath: path)
        }
    }

    /// Calls `method` and returns the reply's parameters.
    /// - Throws: the `FerryClientError` that the Varlink failure maps to.
    func call(_ method: String, _ parameters: [String: JSONValue] = [:]) async throws(FerryClientError) -> [String: JSONValue] {
        try await call(VarlinkCallMessage(method: method, parameters: parameters))
    }

    /// Calls with the objects at `paths` (from the reply's parameters) left as text.
    func call(_ message: VarlinkCallMessage, capturing paths: [[JSONPathComponent]]) async throws(FerryClientError)
        -> (parameters: [String: JSONValue], captured: VarlinkCapturedText) {
        let reply: VarlinkClientReply
        do {
            reply = try await varlink.call(message, capturing: paths)
        } catch {
            throw FerryClientError(error, socketPath: socketPath)
        }
        guard let object = reply.parameters.objectValue else {
            throw .malformedReply(WireError(field: "parameters", expected: "object"))
        }
        return (object, reply.captured)
    }

    /// Calls a method whose reply holds one record under `"record"`, reading its payload as
    /// the daemon sent it (`WireRecord.payloadText`); nil when the reply has no record.
    func callForRecord(_ message: VarlinkCallMessage) async throws(FerryClientError) -> WireRecord? {
        let (reply, captured) = try await call(message, capturing: [WireRecord.payloadPath(.key("record"))])
        return try decode { () throws(WireError) -> WireRecord? in
            guard var record = try reply.optionalRecord("record") else { return nil }
            try record.resolvePayload(from: captured)
            return record
        }
    }

    func call(_ message: VarlinkCallMessage) async throws(FerryClientError) -> [String: JSONValue] {
        try await call(message, capturing: []).parameters
    }

    /// Runs `decode` on a reply, turning a `WireError` into `.malformedReply`.
    func decode<T>(_ decode: () throws(WireError) -> T) throws(FerryClientError) -> T {
        do {
            return try decode()
        } catch {
            throw .malformedReply(error)
        }
    }
}
