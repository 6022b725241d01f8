import FerryRelay
import FerrySystemd
import Foundation

/// `ferry-relay serve`: opens the state (SQLite or PostgreSQL, see `RelayBackend`), listens, tells systemd, and stops cleanly on SIGTERM.
enum ServeCommand {
    static func run(_ configuration: RelayConfiguration) -> Never {
        let logger = RelayLogger(level: configuration.logLevel, identifier: "ferry-relay")
        // SIGTERM and SIGINT are taken with sigwait below, so every thread started from here on
        // must have them blocked; a peer that closes early must not kill the process.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        raiseFileLimit()

        let server: MicroHTTPDServer
        let backend: RelayBackend
        do {
            let hub = LongPollHub()
            backend = try RelayBackend.open(configuration, hub: hub, logger: logger)
            let service = RelayService(configuration: configuration, storage: backend.storage, blobs: backend.blobs, logger: logger,
                                       hub: hub)
            server = try MicroHTTPDServer(service: service, host: configuration.listenHost, port: configuration.listenPort)
            var certificate: String?, key: String?
            if let c = configuration.tlsCertificate, let k = configuration.tlsKey {
                certificate = try String(contentsOfFile: c, encoding: .utf8)
                key = try String(contentsOfFile: k, encoding: .utf8)
            }
            try server.start(certificatePEM: certificate, keyPEM: key)
        } catch {
            logger.error("cannot start: \(error)")
            fail("cannot start: \(error)", status: 1)
        }
        let scheme = configuration.tlsCertificate == nil ? "http" : "https"
        let address = configuration.listenHost.contains(":") ? "[\(configuration.listenHost)]" : configuration.listenHost
        let listening = "\(scheme)://\(address):\(server.port)"
        logger.notice("listening on \(listening)", ["listen": listening, "state_directory": configuration.stateDirectory])
        SystemdNotifier.ready(status: "listening on \(listening)")

        for warning in configuration.warnings { logger.warning(warning) }
        startSweeper(server.service)

        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        logger.notice("stopping (signal \(received))")
        SystemdNotifier.stopping(status: "stopping")
        server.stop()
        if !backend.close() { logger.warning("the database's write-ahead log could not be emptied; it is read back at the next start") }
        logger.notice("stopped")
        exit(0)
    }

    /// Drops tombstones past the retention at start and then periodically (every hour, or a
    /// quarter of the retention when that is shorter, at least every second).
    static func startSweeper(_ service: RelayService) {
        let retention = service.configuration.tombstoneRetentionDays * 86_400
        let interval = max(1, min(3600, retention / 4))
        let thread = Thread {
            while true {
                service.sweepTombstones()
                Thread.sleep(forTimeInterval: interval)
            }
        }
        thread.name = "ferry-relay-sweeper"
        thread.start()
    }

    /// Long-polls hold a descriptor each: lift the soft limit to the hard one.
    static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }
}
