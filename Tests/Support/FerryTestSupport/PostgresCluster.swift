import Foundation

/// A throwaway PostgreSQL cluster for tests: `initdb` in a temporary directory, then `postgres`
/// on 127.0.0.1 and a free port (trust authentication, superuser `ferry`, fsync off), stopped
/// with SIGINT when the test process exits.
///
/// PostgreSQL refuses to run as root, so under root both run as `nobody` (`setpriv`, with the
/// directory chowned to it); as any other user they run as that user. `shared()` starts one
/// cluster per test process; each test takes a database of its own (`createDatabase()`).
/// Needs Debian's `postgresql` (`make test` installs it); `FERRY_PG_BIN` overrides where its
/// programs are looked for.
///
/// `@unchecked Sendable`: `process` changes only in `start` and `stop`, which hold `lock`.
public final class PostgresCluster: @unchecked Sendable {
    public let directory: String
    public let port: Int
    private let bin: String
    private let lock = NSLock()
    private var process: Process?

    /// Why the cluster could not be started, with its log.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private final class Registry: @unchecked Sendable {
        // @unchecked: `cluster` is guarded by `lock`.
        let lock = NSLock()
        var cluster: Result<PostgresCluster, Failure>?
    }
    private static let registry = Registry()

    /// The test process's cluster, started on first use and stopped at exit.
    public static func shared() throws -> PostgresCluster {
        registry.lock.lock(); defer { registry.lock.unlock() }
        if let cluster = registry.cluster { return try cluster.get() }
        let result: Result<PostgresCluster, Failure>
        do { result = .success(try PostgresCluster()) } catch let error as Failure { result = .failure(error) } catch {
            result = .failure(Failure(description: "\(error)"))
        }
        registry.cluster = result
        if case .success = result {
            atexit {
                PostgresCluster.registry.lock.lock()
                let cluster = try? PostgresCluster.registry.cluster?.get()
                PostgresCluster.registry.lock.unlock()
                cluster?.stop()
            }
        }
        return try result.get()
    }

    /// Starts a new cluster (prefer `shared()`; call `stop()` when done with this one).
    /// - Parameter durable: commits wait for fsync (PostgreSQL's defaults), as a production
    ///   server would; tests leave it off for speed, benchmarks turn it on.
    public init(durable: Bool = false) throws {
        bin = try PostgresCluster.findBin()
        PostgresCluster.removeAbandoned()
        let asRoot = geteuid() == 0
        // nobody must reach the directory: under root, /tmp rather than a private $TMPDIR.
        let base = asRoot ? "/tmp" : NSTemporaryDirectory()
        directory = (base as NSString).appendingPathComponent("ferry-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        if asRoot, chown(directory, 65534, 65534) != 0 {
            throw Failure(description: "chown \(directory) to nobody: errno \(errno)")
        }
        let initdb = try PostgresCluster.run(unprivileged: asRoot, bin + "/initdb",
                                             ["-D", directory + "/data", "-U", "ferry", "--auth=trust", "-E", "UTF8",
                                              "--locale=C", "--no-sync", "--no-instructions"])
        guard initdb.status == 0 else {
            throw Failure(description: "initdb failed (\(initdb.status)): \(initdb.output)")
        }
        var lastLog = ""
        for _ in 0..<3 {
            let port = PostgresCluster.freePort()
            let p = try PostgresCluster.process(unprivileged: asRoot, bin + "/postgres", [
                "-D", directory + "/data", "-k", directory, "-p", String(port),
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=\(durable ? "on" : "off")",
                "-c", "synchronous_commit=\(durable ? "on" : "off")", "-c", "full_page_writes=\(durable ? "on" : "off")", "-c", "max_connections=300", "-c", "log_min_messages=warning",
            ])
            let logPath = directory + "/postgres.log"
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            p.standardOutput = log
            p.standardError = log
            try p.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, p.isRunning {
                let ready = try PostgresCluster.run(unprivileged: false, bin + "/psql", PostgresCluster.psqlArguments(port: port) + ["-c", "SELECT 1"])
                if ready.status == 0 {
                    self.port = port
                    process = p
                    return
                }
                usleep(50_000)
            }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            lastLog = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw Failure(description: "postgres did not start: \(lastLog)")
    }

    deinit { stop() }

    /// A libpq connection string for `database`.
    public func conninfo(database: String) -> String {
        "host=127.0.0.1 port=\(port) dbname=\(database) user=ferry"
    }

    /// Creates an empty database of its own; its connection string.
    public func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try sql("CREATE DATABASE \(name)")
        return conninfo(database: name)
    }

    /// Runs SQL with psql on the `postgres` database; its output.
    @discardableResult
    public func sql(_ statement: String, database: String = "postgres") throws -> String {
        let r = try PostgresCluster.run(unprivileged: false, bin + "/psql",
                                        PostgresCluster.psqlArguments(port: port, database: database) + ["-c", statement])
        guard r.status == 0 else { throw Failure(description: "psql failed (\(r.status)): \(r.output)") }
        return r.output
    }

    /// SIGINT (fast shutdown), wait, and remove the directory.
    public func stop() {
        lock.lock(); defer { lock.unlock() }
        guard let p = process else { return }
        process = nil
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) the postmaster and every server process it
    /// started: a database that stalls, its connections open and answering nothing.
    public func freeze(_ frozen: Bool) throws {
        let text = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
        guard let postmaster = text.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw Failure(description: "no postmaster pid in postmaster.pid")
        }
        var pids = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // Fields after "(comm)": state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == postmaster { pids.append(pid) }
        }
        for pid in pids { kill(pid, frozen ? SIGSTOP : SIGCONT) }
    }

    // MARK: Helpers

    static func psqlArguments(port: Int, database: String = "postgres") -> [String] {
        ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", "ferry", "-d", database]
    }

    /// The newest /usr/lib/postgresql/N/bin with initdb (or $FERRY_PG_BIN).
    static func findBin() throws -> String {
        if let dir = ProcessInfo.processInfo.environment["FERRY_PG_BIN"] { return dir }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for v in versions where FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(v)/bin/initdb") {
            return "/usr/lib/postgresql/\(v)/bin"
        }
        throw Failure(description: "no PostgreSQL server found in /usr/lib/postgresql/*/bin: install Debian's postgresql (make test does)")
    }

    /// A process, as nobody when `unprivileged` (setpriv execs, so its pid is the program's).
    static func process(unprivileged: Bool, _ path: String, _ arguments: [String]) throws -> Process {
        let p = Process()
        if unprivileged {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", path] + arguments
        } else {
            p.executableURL = URL(fileURLWithPath: path)
            p.arguments = arguments
        }
        var env = ProcessInfo.processInfo.environment
        env["LC_ALL"] = "C"
        env["PGTZ"] = "UTC"
        for k in ["PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGSERVICE", "PGOPTIONS"] { env.removeValue(forKey: k) }
        if unprivileged { env["HOME"] = "/tmp" }
        p.environment = env
        p.currentDirectoryURL = URL(fileURLWithPath: "/")
        return p
    }

    /// Runs to the end; (status, stdout and stderr).
    static func run(unprivileged: Bool, _ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try ChildProcess.runToEnd(try process(unprivileged: unprivileged, path, arguments))
    }

    static func freePort() -> Int { LoopbackPort.free() }

    /// Stops and removes clusters whose test process died without stopping them.
    static func removeAbandoned() {
        for base in Set(["/tmp", NSTemporaryDirectory()]) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix("ferry-pg-") {
                guard let pid = Int32(name.split(separator: "-")[2]), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
                let dir = (base as NSString).appendingPathComponent(name)
                if let text = try? String(contentsOfFile: dir + "/data/postmaster.pid", encoding: .utf8),
                   let first = text.split(separator: "\n").first, let server = Int32(first) {
                    kill(server, SIGQUIT)
                    usleep(200_000)
                }
                try? FileManager.default.removeItem(atPath: dir)
            }
        }
    }
}
