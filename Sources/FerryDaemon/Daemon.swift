import FerryAPI
import FerryJSON
import FerryModel
import FerryStore
import FerrySync
import FerrySystemd
import FerryVarlink
import Foundation

/// ferryd: opens the store, serves the API on the Unix socket, runs the engine loop, and
/// speaks systemd's protocols (READY/STATUS/WATCHDOG/STOPPING, socket activation, journald).
public enum Daemon {
    /// Runs ferryd with `arguments` (without the program name) and returns the exit code.
    public static func main(arguments: [String], environment: [String: String]) async -> Int32 {
        // ferryd started by itself as its https helper (`SessionHelper`).
        if arguments == [SessionHelper.flag] { return await SessionHelperService.run(fd: SessionHelper.helperFD) }
        let options: CommandLineOptions
        do {
            options = try CommandLineOptions.parse(arguments)
        } catch {
            FileHandle.standardError.write(Data("ferryd: \(error)\n\(CommandLineOptions.usage)".utf8))
            return 2
        }
        if options.help { print(CommandLineOptions.usage, terminator: ""); return 0 }
        if options.version { print("ferryd \(FerryVersion.string)"); return 0 }

        var config = DaemonConfiguration(environment: environment)
        let configPath = options.configPath ?? DaemonConfiguration.defaultConfigPath(environment: environment)
        do {
            if let text = try DaemonConfiguration.readFile(configPath, required: options.configPath != nil) {
                try config.apply(configText: text, file: configPath)
            }
        } catch {
            FileHandle.standardError.write(Data("ferryd: invalid configuration: \(error)\n".utf8))
            return 1
        }
        if let dir = options.stateDirectory { config.stateDirectory = dir }
        if let socket = options.socketPath { config.socketPath = socket }
        if let level = options.logLevel { config.logLevel = level }
        // A relay token lets whoever reads it read and write the owner's sealed data.
        var status = stat()
        if config.transports.contains(where: { $0.token != nil }), stat(configPath, &status) == 0, status.st_mode & 0o077 != 0 {
            FileHandle.standardError.write(Data(("ferryd: warning: \(configPath) holds a relay token and others may read it (mode "
                + String(status.st_mode & 0o777, radix: 8) + "): make it private with 'chmod 600 \(configPath)'\n").utf8))
        }
        if options.checkConfig {
            for t in config.transports {
                if let missing = DeclaredTransports.missingFolder(t) {
                    FileHandle.standardError.write(Data("ferryd: warning: \(configPath):\(t.sectionLine): [Transport \(t.name)]: \(missing)\n".utf8))
                }
            }
            let problems = startUpProblems(config, configPath: configPath)
            if !problems.isEmpty {
                FileHandle.standardError.write(Data(("ferryd: " + problems.joined(separator: "\nferryd: ") + "\n").utf8))
                return 1
            }
            print("# configuration OK (\(FileManager.default.fileExists(atPath: configPath) ? configPath : "built-in defaults")); "
                + "the settings in effect:\n")
            print(config.effectiveSettings, terminator: "")
            return 0
        }
        return await run(config: config, configPath: options.configPath ?? configPath, configRequired: options.configPath != nil,
                         logLevelOverride: options.logLevel, stateDirectoryOverride: options.stateDirectory,
                         socketOverride: options.socketPath, environment: environment)
    }

    /// What start-up would refuse or leave out in `config` beyond what parsing checks: a
    /// declared transport it could not use (a location inside a ferry-v1 directory, a second
    /// section at a place another one syncs through), a socket path longer than a Unix
    /// socket's. For `--check-config`; each names where to look.
    static func startUpProblems(_ config: DaemonConfiguration, configPath: String) -> [String] {
        var problems: [String] = []
        var taken: [(t: DaemonConfiguration.DeclaredTransport, info: TransportInfo)] = []
        for t in config.transports {
            do throws(TransportConfiguration.Problem) {
                let configuration = try DeclaredTransports.configuration(of: t)
                if let twin = taken.first(where: { $0.t.space == t.space && TransportConfiguration.samePlace($0.info, kind: t.kind, config: configuration) }) {
                    problems.append("\(configPath):\(t.sectionLine): [Transport \(t.name)] would not be used: [Transport \(twin.t.name)] "
                        + "of space \(t.space) syncs through the same place; keep one of them")
                    continue
                }
                taken.append((t, TransportInfo(space: t.space, name: t.name, kind: t.kind, config: configuration)))
            } catch {
                problems.append("\(configPath):\(t.sectionLine): [Transport \(t.name)] would not be used: \(error.message)")
            }
        }
        let maxSocketPath = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1
        if config.socketPath.utf8.count > maxSocketPath {
            problems.append("the socket path \(config.socketPath) is \(config.socketPath.utf8.count) bytes; a Unix socket's path holds at most "
                + "\(maxSocketPath): choose a shorter one (Socket= or --socket)")
        }
        return problems
    }

    /// - Parameters:
    ///   - configRequired: the config file was named (`--config`): a reload that cannot read
    ///     it keeps the running configuration, instead of going back to the defaults.
    ///   - logLevelOverride: `--log-level`, which wins over the file at every reload too.
    ///   - stateDirectoryOverride, socketOverride: `--state-dir` and `--socket`, which the
    ///     file's values do not change (a reload does not report them as changed).
    static func run(config: DaemonConfiguration, configPath: String, configRequired: Bool = false, logLevelOverride: LogLevel? = nil,
                    stateDirectoryOverride: String? = nil, socketOverride: String? = nil,
                    environment: [String: String]) async -> Int32 {
        let logger = Logger(level: config.logLevel, identifier: "ferryd")
        let started = Int64(Date().timeIntervalSince1970 * 1000)
        // URLSession requests (https:// relays) are made by a helper process, ferryd's own
        // binary (/proc/self/exe: still there when a package upgrade replaced the file), so
        // that an answer FoundationNetworking traps on ends the helper, not ferryd.
        let httpsHelper = access("/proc/self/exe", X_OK) == 0
            ? SessionHelper(executable: "/proc/self/exe", name: CommandLine.arguments.first ?? "ferryd",
                            log: { logger.warning($0, ["component": "https-helper"]) })
            : nil
        SessionHelper.install(httpsHelper)
        raiseDescriptorLimit(to: config.maxConnections + 256)

        // One daemon per state directory.
        if mkdir(config.stateDirectory, 0o700) != 0 && errno != EEXIST {
            _ = try? FileManager.default.createDirectory(atPath: config.stateDirectory, withIntermediateDirectories: true,
                                                         attributes: [.posixPermissions: 0o700])
        }
        let lockFD = open(config.stateDirectory + "/ferryd.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if lockFD < 0 || flock(lockFD, LOCK_EX | LOCK_NB) != 0 {
            logger.error("another ferryd is using the state directory \(config.stateDirectory) (or it is not writable): stop it first, or pass --state-dir")
            return 1
        }
        let store: Store
        do {
            store = try Store(configuration: config.storeConfiguration)
        } catch {
            logger.error("cannot open the store: \(error)")
            return 1
        }
        let hub = WatchHub(lastSeq: store.lastSeq)
        let feed = ChangeFeed(store: store, hub: hub)
        let relayTimeout = Duration.seconds(config.relayTimeoutSeconds)
        let sync = SyncEngine(store: store, options: config.syncOptions, log: SyncLog { level, message, fields in
            switch level {
            case .error: logger.error(message, fields)
            case .warning: logger.warning(message, fields)
            case .notice: logger.notice(message, fields)
            case .info: logger.info(message, fields)
            case .debug: logger.debug(message, fields)
            }
        }, makeTransport: { info, keys, node throws(TransportFailure) in
            try TransportConfiguration.transport(info, keys: keys, device: node, store: store, relayTimeout: relayTimeout)
        })
        let engine = EngineLoop(store: store, logger: logger, watchdogTimeout: SystemdNotifier.watchdogTimeout) {
            EngineState.summary(sync.health, paused: sync.isPaused)
        }
        store.setCommitObserver { commit in
            hub.committed(commit.through)
            feed.publish(commit)
            engine.wake()
            sync.localChange(spaces: Set(commit.records.map(\.space)))
        }
        DeclaredTransports.apply(config.transports, to: store, logger: logger)
        // Every space has its owner (keys made on first start) before the socket answers, so
        // no client ever sees a space without its owner id.
        for space in store.spaces() {
            do { _ = try sync.keyring.keys(for: space.name) } catch {
                logger.error("cannot read or make the owner keys of space \(space.name): \(error)")
                return 1
            }
        }

        var service = VarlinkService(vendor: FerryVersion.vendor, product: "ferryd", version: FerryVersion.string, url: FerryVersion.url)
        do {
            try service.register(StoreInterface.definition, methods: StoreAPI(store: store, hub: hub, feed: feed, logger: logger).methods)
            try service.register(EngineInterface.definition,
                                 methods: EngineAPI(store: store, engine: engine, sync: sync, startedAt: started,
                                                    configPath: configPath, stateDirectory: config.stateDirectory,
                                                    socketPath: config.socketPath, logger: logger).methods)
        } catch {
            logger.error("internal error: the API definition does not load: \(error)")
            return 1
        }

        // Socket activation, or our own socket.
        let endpoint: VarlinkServer.Endpoint
        var socketDescription = config.socketPath
        do {
            // Taken (close-on-exec, LISTEN_* unset) only when meant for this process.
            let passed = environment["LISTEN_PID"] == String(getpid())
                ? try SocketActivation.takeListenDescriptors()
                : try SocketActivation.listenDescriptors(environment: environment, processID: getpid())
            if let first = passed.first {
                endpoint = .listeningDescriptor(first.fd)
                socketDescription = SocketProbe.boundPath(of: first.fd) ?? "the socket passed by systemd (fd \(first.fd))"
                logger.info("using the socket passed by systemd: \(socketDescription)")
            } else {
                if SocketProbe.isServed(config.socketPath) {
                    logger.error("another ferryd is already serving \(config.socketPath): stop it first, or pass --socket")
                    return 1
                }
                endpoint = .unixPath(config.socketPath)
            }
        } catch {
            logger.error("cannot use the sockets systemd passed: \(error)")
            return 1
        }
        var serverConfig = VarlinkServerConfiguration()
        serverConfig.outputBufferLimit = config.watchBufferBytes
        serverConfig.slowPeerGrace = .milliseconds(Int(config.slowWatcherGraceSeconds * 1000))
        serverConfig.maxConnections = config.maxConnections
        serverConfig.connectionLimitReply = VarlinkReplyMessage(VarlinkError(StoreInterface.name + ".TooManyConnections", parameters: [
            "limit": .int(Int64(config.maxConnections)),
            "message": .string("ferryd has \(config.maxConnections) connections open, its limit: close some (an app that opens one per "
                + "call and never closes them?), or raise MaxConnections in ferryd.conf and restart ferryd"),
        ])).encoded()
        serverConfig.busyPoll = .microseconds(config.busyPollMicroseconds)
        let ownUID = getuid()
        let server = VarlinkServer(
            service: service, endpoint: endpoint, configuration: serverConfig,
            peerPolicy: { peer in peer.userID == ownUID || peer.userID == 0 },
            logger: { event in
                switch event {
                case .peerRefused(let peer):
                    logger.warning("refused a connection from \(peer.map { "uid \($0.userID) (pid \($0.processID))" } ?? "an unknown peer"): "
                                   + (ownUID == 0 ? "only root may use this ferryd" : "only uid \(ownUID) and root may use this ferryd"),
                                   ["peer_uid": peer.map { String($0.userID) } ?? "?"])
                default:
                    logger.notice(event.description)
                }
            })
        // Signals are caught before the socket answers, so that a SIGHUP or SIGTERM sent as
        // soon as ferryd is reachable is handled, not fatal.
        let signals = SignalStream(signals: [SIGTERM, SIGINT, SIGHUP])
        do {
            try await server.start()
        } catch {
            logger.error("cannot listen on \(config.socketPath): \(error)")
            return 1
        }

        let engineTask = Task { await engine.run() }
        await sync.reconcile()
        // The outbox's counts only: counting the records walks the whole table, which on a large
        // store would hold READY=1 back (`ferryctl status` counts them when asked).
        let outbox = try? store.outboxCounts()
        if let failure = store.sweepFailure {
            logger.warning("could not remove unreferenced attachments at start (\(failure)); ferryd runs on, and the next "
                + "start tries again: if the disk is full, free space")
        }
        if let old = store.replacedNodeID {
            logger.notice("this state directory was last used on another machine (its machine id differs): this device "
                + "is now node \(store.nodeID) instead of \(old), so it and the machine it was copied from sync as two "
                + "devices", ["node": store.nodeID.description])
        }
        let status = outbox.map { EngineLoop.status(state: "idle", outbox: $0) } ?? "idle"
        logger.info("ferryd \(FerryVersion.string) ready: node \(store.nodeID), socket \(socketDescription), \(status)",
                    ["node": store.nodeID.description])
        SystemdNotifier.ready(status: status)

        for await signal in signals.stream {
            if signal == SIGHUP {
                SystemdNotifier.reloading(status: "reloading the configuration")
                var fresh = DaemonConfiguration(environment: environment)
                do {
                    // A file that is gone reloads the defaults, unless it was named (then it is an error).
                    if let text = try DaemonConfiguration.readFile(configPath, required: configRequired) {
                        try fresh.apply(configText: text, file: configPath)
                    }
                    if let level = logLevelOverride { fresh.logLevel = level }
                    logger.setLevel(fresh.logLevel)
                    DeclaredTransports.apply(fresh.transports, to: store, logger: logger)
                    await sync.reconcile()
                    // Compared with the running settings, the command line's values holding.
                    var compared = fresh
                    if let dir = stateDirectoryOverride { compared.stateDirectory = dir }
                    if let socket = socketOverride { compared.socketPath = socket }
                    let later = compared.keysTakingEffectAtNextStart(comparedWith: config)
                    logger.notice("configuration reloaded: log level \(fresh.logLevel.name)\(logLevelOverride == nil ? "" : " (from --log-level)") "
                        + "and the [Transport] sections"
                        + (later.isEmpty ? "" : "; changed, taking effect at the next start: \(later.joined(separator: ", "))"))
                } catch {
                    logger.error("configuration not reloaded, the running one stays: \(error)")
                }
                SystemdNotifier.notify("READY=1")
                engine.refreshStatus()
                continue
            }
            break
        }
        logger.info("stopping: finishing in-flight calls")
        SystemdNotifier.stopping(status: "stopping")
        // Watchers end now, told where to resume; they would otherwise hold the stop for its grace.
        feed.stop()
        hub.stop()
        await server.stop(gracePeriod: .seconds(5))
        // The transports' requests end when they are cancelled; a helper that does not let
        // them (stuck) is ended after 5 s, so that the stop does not wait on it.
        let helperStop = Task {
            try? await Task.sleep(for: .seconds(5))
            if !Task.isCancelled { httpsHelper?.stop() }
        }
        await sync.stop()
        helperStop.cancel()
        engineTask.cancel()
        _ = await engineTask.value
        signals.cancel()
        // The database file alone then holds every write (a backup copies it, not the log).
        if !store.close() { logger.warning("the store's write-ahead log could not be emptied; it is read back at the next start") }
        logger.info("stopped")
        return 0
    }
}

/// Raises the soft limit on open descriptors (often 1,024) towards the hard limit, so that
/// MaxConnections clients fit.
func raiseDescriptorLimit(to wanted: Int) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
    limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// Checks whether something already answers on a Unix socket path.
enum SocketProbe {
    /// The path a listening Unix socket is bound to, if it has one.
    static func boundPath(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw -> String in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }

    static func isServed(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, b) in bytes.enumerated() { buffer[i] = b }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0
    }
}

/// Delivers Unix signals as an async stream (the default handlers are turned off).
/// `@unchecked Sendable`: `sources` is set once in `init` and only cancelled afterwards.
final class SignalStream: @unchecked Sendable {
    let stream: AsyncStream<Int32>
    private let sources: [DispatchSourceSignal]

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        var sources: [DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
