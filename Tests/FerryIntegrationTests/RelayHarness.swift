import FerryTestSupport
import Foundation
import Glibc
import Testing

/// A real `ferry-relay serve` process on 127.0.0.1 with a free port and a private state
/// directory, and its admin commands.
final class RelayHarness: @unchecked Sendable {
    // @unchecked: `process` is only replaced by the test that owns the harness, between runs.
    let root: String
    let configPath: String
    let port: Int
    let logPath: String
    private let child: ChildProcess
    /// The running relay, if any.
    var process: Process? { child.process }

    var url: String { "http://127.0.0.1:\(port)" }

    init(extraConfig: String = "", name: String = "relay") throws {
        root = NSTemporaryDirectory() + "ferry-it-\(name)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        port = try Self.freePort()
        configPath = root + "/ferry-relay.conf"
        logPath = root + "/relay.log"
        child = ChildProcess(logPath: logPath)
        try """
            [Relay]
            Listen=127.0.0.1:\(port)
            StateDirectory=\(root)/state
            MaxWaitSeconds=30
            LogLevel=info
            \(extraConfig)
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        child.crash()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Starts the relay and waits until `/healthz` answers (with [TLS] in its configuration:
    /// until it logs that it listens).
    func start() throws {
        try child.start(executable: try BuiltExecutable.path("ferry-relay"), arguments: ["serve", "--config", configPath])
        let p = child.process!
        let tls = ((try? String(contentsOfFile: configPath, encoding: .utf8)) ?? "").contains("[TLS]")
        let runs = log.components(separatedBy: "listening on https://").count
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if !p.isRunning { throw HarnessError("ferry-relay exited at start: \(self.log)") }
            if tls ? log.components(separatedBy: "listening on https://").count > runs : Self.healthy(port: port) { return }
            usleep(20_000)
        }
        throw HarnessError("ferry-relay did not answer on port \(port) within 30 s: \(self.log)")
    }

    /// SIGTERM, and wait. Returns the exit status.
    @discardableResult
    func stop() -> Int32 { child.stop() }

    /// SIGKILL: no chance to clean up.
    func crash() { child.crash() }

    /// What the relay logged, over all its runs.
    var log: String { child.log }

    /// `ferry-relay admin ARGS` with this relay's configuration.
    func admin(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try runCommand(try BuiltExecutable.path("ferry-relay"), ["admin", "--config", configPath] + arguments)
    }

    /// Makes `a`'s private space an owner here with a relay transport at `url` (the operator's
    /// token), and pairs `b` (the same owner, then a code from `a`) at the same URL.
    func pair(_ a: SyncDevice, _ b: SyncDevice, url: String) async throws -> (owner: String, token: String) {
        let owner = try #require(try await a.client().spaces().first { $0.name == "private" }?.owner)
        let (token, _) = try createOwner(owner)
        _ = try await a.client().addTransport(name: "relay", kind: "relay", location: url, token: token)
        try await b.joinOwner(of: a)
        let (code, _) = try await a.client().relayPairingCode()
        _ = try await b.client().addTransport(name: "relay", kind: "relay", location: url, code: code)
        return (owner, token)
    }

    /// Creates `owner` and returns its first token.
    func createOwner(_ owner: String, quota: Int64? = nil) throws -> (token: String, tokenID: String) {
        var arguments = ["create-owner", "--owner", owner, "--device", "test"]
        if let quota { arguments += ["--quota", String(quota)] }
        let result = try admin(arguments)
        guard result.status == 0 else { throw HarnessError("create-owner failed: \(result.output)") }
        var token: String?, id: String?
        for line in result.output.split(separator: "\n") {
            if line.hasPrefix("token: ") { token = String(line.dropFirst(7)) }
            if line.hasPrefix("token id: ") { id = String(line.dropFirst(10)) }
        }
        guard let token, let id else { throw HarnessError("create-owner printed no token: \(result.output)") }
        return (token, id)
    }

    /// Token ids of `owner`, by device name.
    func tokens(_ owner: String) throws -> [(id: String, device: String)] {
        let result = try admin(["tokens", owner])
        return result.output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t").map(String.init)
            return fields.count >= 5 ? (fields[0], fields[4]) : nil
        }
    }

    static func healthy(port: Int) -> Bool {
        guard let reply = try? rawHTTP(port: port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") else { return false }
        return reply.hasPrefix("HTTP/1.1 200") || reply.hasPrefix("HTTP/1.0 200")
    }

    /// One raw HTTP exchange on a fresh loopback connection; the whole reply as text.
    static func rawHTTP(port: Int, _ request: String, timeout: Int = 5) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket failed") }
        defer { close(fd) }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { throw HarnessError("connect failed") }
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func freePort() throws -> Int {
        let port = LoopbackPort.free()
        guard port > 0 else { throw HarnessError("no free loopback port") }
        return port
    }
}
