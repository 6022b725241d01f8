import FerryTestSupport
import Foundation

/// A real `ferry-relay serve` on 127.0.0.1 (a free port it picks) with a temporary state
/// directory, plus the admin commands on the same state. With `.postgresql` the state is a new
/// database in the shared test cluster, or the `conninfo` given (to share one between relays).
final class RelayHarness: @unchecked Sendable {
    // @unchecked: `process` and `port` change only in start/stop/crash, called by the owning test.
    let root: String
    let configPath: String
    let logPath: String
    private let child: ChildProcess
    /// The running relay, if any.
    var process: Process? { child.process }
    private(set) var port = 0

    /// The PostgreSQL database, when the backend is PostgreSQL.
    let conninfo: String?

    init(backend: TestBackend = .sqlite, conninfo: String? = nil, extraConfig: String = "") throws {
        root = NSTemporaryDirectory() + "ferry-relay-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        configPath = root + "/ferry-relay.conf"
        logPath = root + "/relay.log"
        child = ChildProcess(logPath: logPath)
        var config = "[Relay]\nListen=127.0.0.1:0\nStateDirectory=\(root)/state\nLogLevel=info\n" + extraConfig
        switch backend {
        case .sqlite:
            self.conninfo = nil
        case .postgresql:
            let database = try conninfo ?? PostgresCluster.shared().createDatabase()
            self.conninfo = database
            config += "\n[Relay]\nStorage=postgresql\n[PostgreSQL]\nConnection=\(database)\nPoolSize=3\n"
        }
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        child.crash()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// What the relay logged, over all its runs.
    var log: String { child.log }

    /// Starts serve and waits for its "listening on" line.
    func start() throws {
        let before = self.log.components(separatedBy: "listening on http://127.0.0.1:").count
        try child.start(executable: try BuiltExecutable.path("ferry-relay"), arguments: ["serve", "--config", configPath])
        let p = child.process!
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let parts = self.log.components(separatedBy: "listening on http://127.0.0.1:")
            if parts.count > before, let port = Int(parts.last!.prefix { $0.isNumber }) {
                self.port = port
                return
            }
            if !p.isRunning { throw HTTPTestClient.Failure(description: "ferry-relay exited at start: \(self.log)") }
            usleep(20_000)
        }
        throw HTTPTestClient.Failure(description: "ferry-relay did not listen within 30 s: \(self.log)")
    }

    /// SIGTERM and wait; the exit status.
    @discardableResult
    func stop() -> Int32 { child.stop() }

    /// SIGKILL: no chance to clean up.
    func crash() { child.crash() }

    /// Runs `ferry-relay admin ARGS` on this state; (status, output).
    @discardableResult
    func admin(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try ChildProcess.runToEnd(try BuiltExecutable.path("ferry-relay"), ["admin", "--config", configPath] + arguments)
    }

    /// `admin create-owner`: the owner's first token.
    func createOwner(_ owner: String, quota: Int? = nil) throws -> String {
        var args = ["create-owner", "--owner", owner, "--device", "test"]
        if let quota { args += ["--quota", String(quota)] }
        let (status, output) = try admin(args)
        guard status == 0, let line = output.split(separator: "\n").first(where: { $0.hasPrefix("token: ") }) else {
            throw HTTPTestClient.Failure(description: "create-owner failed (\(status)): \(output)")
        }
        return String(line.dropFirst("token: ".count))
    }

    func call(_ method: String, _ target: String, token: String? = nil, body: [UInt8]? = nil,
              headers: [String] = []) throws -> HTTPTestClient.Response {
        try HTTPTestClient.call(port: port, method, target, token: token, body: body, headers: headers)
    }
}
