import FerryJSON
import Glibc

/// A Varlink server on a Unix stream socket.
///
/// One event-loop thread (epoll, non-blocking sockets) serves every connection; method
/// handlers run as Swift tasks. Calls on one connection run one at a time, so replies
/// leave in call order. Each accepted peer's credentials (`SO_PEERCRED`) go through the
/// peer policy; a refused peer gets `org.varlink.service.PermissionDenied` for its first
/// call and is disconnected.
///
/// Lifecycle: `start()` binds and begins serving; `stop(gracePeriod:)` stops accepting,
/// lets running calls finish until the grace period ends, then cancels the rest. `run()`
/// does both around the caller's task, stopping when the task is cancelled.
public actor VarlinkServer {
    /// Where the server listens.
    public enum Endpoint: Sendable, Hashable {
        /// A socket file the server creates (with its directories); it is removed on stop.
        case unixPath(String)
        /// An already-listening socket, e.g. from `SocketActivation`; closed on stop.
        case listeningDescriptor(Int32)
    }

    private enum State {
        case idle
        case starting
        case running(ServerCore)
        case stopping(Task<Void, Never>)
        case stopped
    }

    public nonisolated let endpoint: Endpoint
    public nonisolated let service: VarlinkService
    public nonisolated let configuration: VarlinkServerConfiguration
    private let peerPolicy: VarlinkPeerPolicy
    private let logger: VarlinkServerLogger
    private var state: State = .idle

    /// - Parameters:
    ///   - peerPolicy: decides from the peer's credentials whether it may connect
    ///     (default: everyone; the socket's 0600 mode already limits who can connect).
    ///   - logger: receives refused peers, protocol violations and survived failures.
    public init(
        service: VarlinkService, endpoint: Endpoint,
        configuration: VarlinkServerConfiguration = VarlinkServerConfiguration(),
        peerPolicy: @escaping VarlinkPeerPolicy = { _ in true },
        logger: @escaping VarlinkServerLogger = { _ in }
    ) {
        self.service = service
        self.endpoint = endpoint
        self.configuration = configuration
        self.peerPolicy = peerPolicy
        self.logger = logger
    }

    /// Creates (or adopts) the listening socket and starts serving.
    /// - Throws: `VarlinkServerError.system` when the socket, its directory or the event
    ///   loop cannot be set up; `.alreadyStarted` when called twice.
    public func start() async throws(VarlinkServerError) {
        guard case .idle = state else { throw .alreadyStarted }
        state = .starting
        do throws(VarlinkServerError) {
            state = .running(try await makeCore())
        } catch {
            state = .idle
            throw error
        }
    }

    private func makeCore() async throws(VarlinkServerError) -> ServerCore {
        if case let .unixPath(path) = endpoint, let (directory, reason) = UnixSocket.unsafeDirectory(forSocket: path) {
            throw .unsafeDirectory(path: directory, reason: reason)
        }
        let fd: Int32
        do {
            switch endpoint {
            case let .unixPath(path):
                fd = try UnixSocket.listen(
                    path: path, socketMode: configuration.socketMode,
                    directoryMode: configuration.directoryMode, backlog: configuration.backlog)
            case let .listeningDescriptor(descriptor):
                try UnixSocket.setNonBlocking(descriptor)
                fd = descriptor
            }
        } catch {
            throw .system(error)
        }
        let loop: EventLoop
        do {
            loop = try EventLoop(name: "varlink-server", busyPoll: configuration.busyPoll)
        } catch {
            Syscall.close(fd)
            throw .system(error)
        }
        let core = ServerCore(
            loop: loop, service: service, configuration: configuration, peerPolicy: peerPolicy, logger: logger)
        let registered: Result<Void, SystemCallError> = await withCheckedContinuation { continuation in
            loop.execute {
                do throws(SystemCallError) {
                    try core.startListening(fd)
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        if case let .failure(error) = registered {
            Syscall.close(fd)
            await loop.shutdown()
            throw .system(error)
        }
        return core
    }

    /// Stops serving: closes the listener (and removes the socket file it created), lets
    /// running calls finish for up to `gracePeriod`, then cancels what is left, closes
    /// every connection and ends the event-loop thread. Safe to call more than once.
    public func stop(gracePeriod: Duration = .seconds(5)) async {
        switch state {
        case .idle, .starting, .stopped:
            // A stop racing a start that has not finished leaves that start's result alone.
            if case .idle = state { state = .stopped }
        case let .stopping(drain):
            await drain.value
        case let .running(core):
            let endpoint = self.endpoint
            let drain = Task {
                core.loop.execute { core.beginDrain() }
                if case let .unixPath(path) = endpoint { _ = unlink(path) }
                let deadline = Task {
                    try? await Task.sleep(for: gracePeriod)
                    if !Task.isCancelled { core.loop.execute { core.closeAll() } }
                }
                await core.waitUntilDrained()
                deadline.cancel()
                await core.loop.shutdown()
            }
            state = .stopping(drain)
            await drain.value
            state = .stopped
        }
    }

    /// Starts, serves until the calling task is cancelled, then stops gracefully.
    /// - Throws: what `start()` throws.
    public func run(gracePeriod: Duration = .seconds(5)) async throws(VarlinkServerError) {
        try await start()
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        await stop(gracePeriod: gracePeriod)
    }

    /// The bytes all connections hold now: calls read but not yet handled, and replies not yet
    /// read by their clients (0 when not running).
    public func bufferedBytes() async -> Int {
        guard case let .running(core) = state else { return 0 }
        return core.budget.total
    }

    /// The number of open connections (0 when not running).
    public func connectionCount() async -> Int {
        guard case let .running(core) = state else { return 0 }
        return await withCheckedContinuation { continuation in
            core.loop.execute { continuation.resume(returning: core.connectionCount) }
        }
    }
}

/// Decides whether a connecting peer may use the server, from its kernel credentials.
public typealias VarlinkPeerPolicy = @Sendable (PeerCredentials) -> Bool

/// Receives the server's reports; called on the event-loop thread.
public typealias VarlinkServerLogger = @Sendable (VarlinkServerEvent) -> Void
