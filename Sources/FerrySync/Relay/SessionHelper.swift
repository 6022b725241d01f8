import FerryJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Synchronization

/// ferryd's URLSession requests (`https://` relays, and `http://` ones behind a proxy), made in a
/// helper process (`ferryd --https-helper`, `SessionHelperService`) instead of in ferryd.
///
/// FoundationNetworking ends its process on some broken answers (a connection closed inside an
/// answer's head traps: "Transfer completed, but there's no response"), and a relay, a proxy or
/// a network that cuts a connection there must not stop ferryd and every app that writes to
/// it. What it promises:
/// - The helper starts with the first request and again with the first one after it ended.
/// - When the helper ends, every request it had in flight fails (`URLError` `.unknown`, saying
///   so: the transport's usual retry), and the end is logged through `log`.
/// - A cancelled request is cancelled in the helper; its call returns once the helper answers,
///   so a download's file is never written after its call returned.
/// - The helper gets its socket at `helperFD` (ferryd's other descriptors are close-on-exec),
///   default signal handling and none of systemd's variables, and ends when ferryd's end of
///   the socket closes (at ferryd's exit too).
public final class SessionHelper: Sendable {
    /// The argument that starts ferryd as the helper.
    public static let flag = "--https-helper"
    /// The helper's socket descriptor.
    public static let helperFD: Int32 = 3

    /// The helper `RelaySession`s use; nil (tests, tools): requests are made in-process.
    static let installed = Mutex<SessionHelper?>(nil)

    /// Makes every `RelaySession` request through `helper` (nil: in this process).
    public static func install(_ helper: SessionHelper?) {
        installed.withLock { $0 = helper }
    }

    private let executable: String
    /// The helper's `argv[0]` (what `ps` shows).
    private let name: String
    private let log: @Sendable (String) -> Void

    private struct Running {
        let channel: SessionHelperChannel
        let pid: pid_t
        let generation: Int
    }

    /// How often a helper with requests in flight is asked whether it is alive, and how long
    /// it may go without answering before it is ended (stopped, or stuck: its requests would
    /// otherwise wait for ever, and ferryd's stop with them).
    private let pingInterval: Duration
    private let silenceLimit: Duration

    private struct Pending {
        let generation: Int
        let continuation: CheckedContinuation<SessionHelperFrame, any Error>
    }

    private struct State {
        var running: Running?
        var generation = 0
        var nextID: Int64 = 1
        var pending: [Int64: Pending] = [:]
        /// When the running helper last answered anything (a reply or a ping).
        var heard = ContinuousClock.now
        /// The generation ended for its silence, for what its end is called.
        var silenced: Int?
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - executable: ferryd's own binary, started with `flag`.
    ///   - name: its `argv[0]`.
    ///   - log: told (in words) when the helper ended with requests in flight or could not start.
    ///   - pingInterval, silenceLimit: how often a busy helper is asked whether it is alive,
    ///     and how long it may go without answering before it is ended.
    public init(executable: String, name: String, log: @escaping @Sendable (String) -> Void,
                pingInterval: Duration = .seconds(5), silenceLimit: Duration = .seconds(20)) {
        self.executable = executable
        self.name = name
        self.log = log
        self.pingInterval = pingInterval
        self.silenceLimit = silenceLimit
    }

    /// Ends the helper (its requests in flight fail); the next request starts another.
    public func stop() {
        state.withLock { $0.running }?.channel.shutDown()
    }

    /// The pid of the running helper, if one runs.
    var pid: pid_t? { state.withLock { $0.running?.pid } }

    /// Sends the request `header` (with `body`) to the helper; its reply frame.
    /// - Throws: `URLError` when the helper cannot start or ends before it answers.
    func call(_ header: [String: JSONValue], body: [UInt8] = []) async throws -> SessionHelperFrame {
        let id = state.withLock { s in defer { s.nextID += 1 }; return s.nextID }
        var header = header
        header["id"] = .int(id)
        let frame = SessionHelperFrame(header: .object(header), body: body)
        let cancel = SessionHelperFrame(header: ["id": .int(id), "op": "cancel"])
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SessionHelperFrame, any Error>) in
                let channel: SessionHelperChannel
                do {
                    channel = try state.withLock { s throws(URLError) in
                        let running: Running
                        if let current = s.running { running = current } else { running = try start(&s) }
                        s.pending[id] = Pending(generation: running.generation, continuation: continuation)
                        return running.channel
                    }
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                // A large body blocks until the helper reads it: not on the cooperative pool.
                // A failed write means the helper is gone; its reader fails the request. A task
                // cancelled before the request was registered is cancelled in the helper too.
                let cancelled = Task.isCancelled
                DispatchQueue.global().async {
                    if !channel.write(frame) { channel.shutDown(); return }
                    if cancelled { channel.write(cancel) }
                }
            }
        } onCancel: {
            guard let channel = state.withLock({ s in s.pending[id] == nil ? nil : s.running?.channel }) else { return }
            DispatchQueue.global().async { channel.write(cancel) }
        }
    }

    /// Starts a helper (under the state lock) and its reader thread.
    private func start(_ s: inout State) throws(URLError) -> Running {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw failure("cannot make a socket for the https helper: \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(ends[1]) }
        // What the helper writes to stderr (a trap's "Fatal error" line) comes back to be logged
        // as its words, not as a line of ferryd's own.
        var errors: [Int32] = [-1, -1]
        if socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &errors) != 0 { errors = [-1, -1] }
        defer { if errors[1] >= 0 { Glibc.close(errors[1]) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy: the helper keeps only this socket.
        posix_spawn_file_actions_adddup2(&actions, ends[1], Self.helperFD)
        if errors[1] >= 0 { posix_spawn_file_actions_adddup2(&actions, errors[1], 2) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // ferryd ignores SIGTERM, SIGINT and SIGHUP (it reads them from a dispatch source) and an
        // ignored signal stays ignored across exec: the helper gets them back at their default.
        var defaults = sigset_t()
        sigfillset(&defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(name), strdup(Self.flag), nil]
        defer { for a in argv { free(a) } }
        // ferryd's environment (proxies, CA bundles), without Swift's crash backtrace: a trap
        // leaves its one "Fatal error" line in ferryd's log, and ferryd says what it means.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        // systemd's variables are ferryd's: the helper neither notifies nor takes sockets.
        for name in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID"] {
            environment.removeValue(forKey: name)
        }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for e in envp { free(e) } }
        let code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard code == 0 else {
            Glibc.close(ends[0])
            if errors[0] >= 0 { Glibc.close(errors[0]) }
            let message = "cannot start the https helper \(executable): \(String(cString: strerror(code)))"
            log(message)
            throw failure(message)
        }
        s.generation += 1
        let running = Running(channel: SessionHelperChannel(fd: ends[0]), pid: pid, generation: s.generation)
        s.running = running
        s.heard = .now
        let reader = Thread { [self] in read(running) }
        reader.name = "https-helper-reader"
        reader.start()
        let watchdog = Thread { [self] in watch(running) }
        watchdog.name = "https-helper-watch"
        watchdog.start()
        if errors[0] >= 0 {
            let fd = errors[0], helper = pid
            let relay = Thread { [self] in relayErrors(from: fd, pid: helper) }
            relay.name = "https-helper-stderr"
            relay.start()
        }
        return running
    }

    /// Logs each line the helper `pid` writes to stderr (at most 500 bytes of each, 100 lines
    /// of it) until it ends, then closes `fd`.
    private func relayErrors(from fd: Int32, pid: pid_t) {
        defer { Glibc.close(fd) }
        var pending: [UInt8] = []
        var logged = 0
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            pending += chunk[0..<n]
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<end].prefix(500), as: UTF8.self)
                pending.removeSubrange(...end)
                if !line.isEmpty && logged < 100 { log("the https helper (pid \(pid)) said: \(line)"); logged += 1 }
            }
            if pending.count > 4096 { pending.removeAll() }
        }
        if !pending.isEmpty && logged < 100 { log("the https helper (pid \(pid)) said: \(String(decoding: pending.prefix(500), as: UTF8.self))") }
    }

    /// While `running` is the helper: with requests in flight, pings it every `pingInterval`,
    /// and ends it when it has not answered for `silenceLimit` (its reader then fails them).
    private func watch(_ running: Running) {
        let ping = SessionHelperFrame(header: ["op": "ping"])
        while true {
            let (seconds, attoseconds) = pingInterval.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            let (current, busy, silent) = state.withLock { s in
                (s.running?.generation == running.generation,
                 s.pending.values.contains { $0.generation == running.generation },
                 ContinuousClock.now - s.heard)
            }
            guard current else { return }
            guard busy else {
                state.withLock { $0.heard = .now }   // idle: nothing to wait for, nothing to blame
                continue
            }
            if silent > silenceLimit {
                state.withLock { $0.silenced = running.generation }
                log("the https helper (pid \(running.pid)) has not answered for \(silent.components.seconds) s (stopped or stuck): ending it")
                kill(running.pid, SIGKILL)
                running.channel.shutDown()
                return
            }
            DispatchQueue.global().async { running.channel.write(ping) }
        }
    }

    /// Hands each reply to its request until the helper's socket ends; then fails what is
    /// left of that helper's requests and reaps it.
    private func read(_ running: Running) {
        while let frame = try? running.channel.read() {
            let id = frame.header["id"]?.intValue
            let pending = state.withLock { s in
                s.heard = .now
                return id.flatMap { s.pending.removeValue(forKey: $0) }
            }
            pending?.continuation.resume(returning: frame)
        }
        let (orphans, silenced) = state.withLock { s -> ([Pending], Bool) in
            if s.running?.generation == running.generation { s.running = nil }
            let mine = s.pending.filter { $0.value.generation == running.generation }
            for id in mine.keys { s.pending.removeValue(forKey: id) }
            return (Array(mine.values), s.silenced == running.generation)
        }
        running.channel.close()
        // Its end is closed: it is ending, or it broke the format and is told to.
        kill(running.pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(running.pid, &status, 0) < 0 && errno == EINTR {}
        let how = silenced ? "did not answer for \(Self.words(silenceLimit)) and was ended" : Self.describe(status)
        if !orphans.isEmpty {
            let requests = orphans.count == 1 ? "1 request in flight, which failed" : "\(orphans.count) requests in flight, which failed"
            log("the https helper (pid \(running.pid)) \(how) with \(requests) and will be tried again as usual")
        }
        for orphan in orphans {
            orphan.continuation.resume(throwing: failure("the helper process making the request (ferryd --https-helper) \(how) "
                + "during it; ferryd starts another for the next one"))
        }
    }

    /// `duration` in whole seconds, or milliseconds below one second.
    static func words(_ duration: Duration) -> String {
        duration < .seconds(1) ? "\(duration.components.attoseconds / 1_000_000_000_000_000) ms" : "\(duration.components.seconds) s"
    }

    /// How a helper ended, from its wait status.
    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        if signal == 0 { return "exited with status \((status >> 8) & 0xff)" }
        let trap = "a trap in FoundationNetworking, as on an answer cut off in its head"
        let name = [SIGILL: "SIGILL: \(trap)", SIGTRAP: "SIGTRAP: \(trap)", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT"][signal]
        return "was ended by signal \(signal)" + (name.map { " (\($0))" } ?? "")
    }

    private func failure(_ message: String) -> URLError {
        URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: message])
    }
}
