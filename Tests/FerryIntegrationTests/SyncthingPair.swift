import FerryJSON
import FerryTestSupport
import Foundation

/// Two real Syncthing instances on loopback that keep one directory each in sync, as one shared
/// folder: a real file-sync tool for tests that point two ferryd daemons at the two directories.
///
/// Everything stays on 127.0.0.1: each instance listens for the sync protocol on a free loopback
/// port and knows the other by a static `tcp://127.0.0.1:<port>` address; global and local
/// discovery, relays, NAT traversal, usage and crash reporting and upgrades are off, so nothing
/// talks to the network. Each instance's REST API is on a loopback port with `apiKey`.
///
/// Syncthing writes incoming files as `.syncthing.<name>.tmp` and renames them into place, and
/// keeps a `.stfolder` marker directory in each folder.
final class SyncthingPair: Sendable {
    /// The shared folder's id on both instances.
    static let folderID = "ferry-test"
    /// The REST API key of both instances.
    static let apiKey = "ferry-syncthing-pair-test-key"

    /// The syncthing executable on the PATH, or nil when it is not installed (Debian:
    /// `apt-get install syncthing`; `make test-deps` does it).
    static var executable: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") + ["/usr/bin"] {
            let candidate = "\(dir)/syncthing"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// One Syncthing process with its home (keys, config, database, log) and folder.
    final class Instance: Sendable {
        let name: String
        let home: String
        let folder: String
        let deviceID: String
        let guiPort: UInt16
        let listenPort: UInt16
        let process: Process

        init(name: String, home: String, folder: String, deviceID: String, guiPort: UInt16, listenPort: UInt16, process: Process) {
            self.name = name
            self.home = home
            self.folder = folder
            self.deviceID = deviceID
            self.guiPort = guiPort
            self.listenPort = listenPort
            self.process = process
        }

        var logPath: String { home + "/syncthing.log" }
        var isRunning: Bool { process.isRunning }

        /// The last lines of the log (and of stdout/stderr, where a Go panic would land).
        func logTail(lines: Int = 25) -> String {
            var text = "--- syncthing \(name) (\(home)) log tail:\n"
            for path in [logPath, home + "/stdout.log"] {
                let all = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                text += all.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
                if path == logPath { text += "\n--- stdout/stderr tail:\n" }
            }
            return text
        }

        /// A REST call: the parsed JSON body, or nil for an empty one. Throws on a non-2xx status.
        @discardableResult
        func rest(_ method: String, _ path: String, timeout: Int = 30) async throws -> JSONValue? {
            let port = guiPort
            let body = try await runOffPool {
                try loopbackHTTP(port: port, method: method, path: path, headers: ["X-API-Key": SyncthingPair.apiKey], timeout: timeout)
            }
            let text = body.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty { return nil }
            do { return try JSONParser.parse(text) } catch { throw HarnessError("syncthing \(name) \(method) \(path): not JSON (\(error)): \(text.prefix(300))") }
        }
    }

    let a: Instance
    let b: Instance
    /// Syncthing's version string (from /rest/system/version), e.g. "v1.19.2-ds1".
    let version: String
    /// How long start() waited from launching the processes until the two were connected.
    let connectTime: Duration

    private init(a: Instance, b: Instance, version: String, connectTime: Duration) {
        self.a = a
        self.b = b
        self.version = version
        self.connectTime = connectTime
    }

    deinit { stop() }

    /// Starts two instances with homes under `root` (`root/syncthing-a`, `root/syncthing-b`),
    /// syncing `folderA` (instance A) with `folderB` (instance B) as one shared folder id, and
    /// returns once both answer on their REST API and are connected to each other. Creates the
    /// folders if missing.
    static func start(root: String, folderA: String, folderB: String) async throws -> SyncthingPair {
        guard let exe = executable else { throw HarnessError("syncthing is not installed (apt-get install syncthing)") }
        let fm = FileManager.default
        let homeA = root + "/syncthing-a", homeB = root + "/syncthing-b"
        for dir in [homeA, homeB, folderA, folderB] { try fm.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        // Keys and certificate (the device ID is derived from the certificate).
        let idA = try await generate(exe: exe, home: homeA)
        let idB = try await generate(exe: exe, home: homeB)

        var lastError: Error = HarnessError("syncthing pair did not start")
        // A free port can be taken between choosing it and Syncthing binding it: retry with new ones.
        for _ in 0..<3 {
            let ports = try freeLoopbackPorts(4)
            let (guiA, syncA, guiB, syncB) = (ports[0], ports[1], ports[2], ports[3])
            try config(name: "A", folder: folderA, deviceID: idA, guiPort: guiA, listenPort: syncA,
                       peerName: "B", peerID: idB, peerPort: syncB)
                .write(toFile: homeA + "/config.xml", atomically: true, encoding: .utf8)
            try config(name: "B", folder: folderB, deviceID: idB, guiPort: guiB, listenPort: syncB,
                       peerName: "A", peerID: idA, peerPort: syncA)
                .write(toFile: homeB + "/config.xml", atomically: true, encoding: .utf8)
            // A first, and B only once A listens: B dials A as it starts and finds it. Started
            // together, each one's first dial can find the other not yet listening, and
            // Syncthing's redial backoff then takes up to ~20 s to connect them.
            let started = ContinuousClock.now
            let instA = try launch(exe: exe, name: "A", home: homeA, folder: folderA, deviceID: idA, guiPort: guiA, listenPort: syncA)
            var instB: Instance?
            do {
                try await waitListening(instA)
                instB = try launch(exe: exe, name: "B", home: homeB, folder: folderB, deviceID: idB, guiPort: guiB, listenPort: syncB)
                try await waitListening(instB!)
                try await waitConnected(instA, to: instB!)
                try await waitConnected(instB!, to: instA)
                let connectTime = ContinuousClock.now - started
                let version = try await instA.rest("GET", "/rest/system/version")?["version"]?.stringValue ?? "?"
                return SyncthingPair(a: instA, b: instB!, version: version, connectTime: connectTime)
            } catch {
                terminate([instA.process] + (instB.map { [$0.process] } ?? []))
                lastError = HarnessError("\(error)\n\(instA.logTail())" + (instB.map { "\n" + $0.logTail() } ?? ""))
            }
        }
        throw lastError
    }

    /// Waits until both sides report the folder idle and in sync with each other, or throws after
    /// `timeout` with both sides' status and log tails. Call `rescan()` first after writing files:
    /// until a scan notices a change, both sides look in sync without it.
    ///
    /// In sync means, on each side: connected to the other; /rest/db/status state "idle",
    /// needTotalItems 0, no pull errors; /rest/db/completion 100 for itself and for the other
    /// device; and both sides agree on the global item count, bytes and sequence. It must hold on
    /// two polls in a row (a side is briefly idle between a scan and the pull it causes).
    func waitInSync(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        var streak = 0
        var last = ""
        while true {
            try checkRunning()
            let (inSync, report) = try await syncState()
            last = report
            streak = inSync ? streak + 1 : 0
            if streak >= 2 { return }
            if ContinuousClock.now >= deadline {
                throw HarnessError("syncthing pair not in sync after \(timeout): \(last)\n\(a.logTail())\n\(b.logTail())")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Asks both instances to rescan the folder now (POST /rest/db/scan, which returns when the
    /// scan is done), so tests don't wait for the watcher (1 s) or the periodic rescan (10 s).
    func rescan() async throws {
        try checkRunning()
        for inst in [a, b] { try await inst.rest("POST", "/rest/db/scan?folder=\(Self.folderID)", timeout: 60) }
    }

    /// Terminates both instances (SIGTERM, then SIGKILL after 10 s) and waits for them. Idempotent;
    /// deinit calls it too. Leaves the homes and folders (they are under the caller's root).
    func stop() {
        Self.terminate([a.process, b.process])
    }

    /// Every IPv4/IPv6 TCP and UDP socket the two processes hold, as "proto local -> remote"
    /// (hex addresses as in /proc/net: 0100007F is 127.0.0.1), for tests that check nothing
    /// leaves loopback.
    func inetSockets() -> [String] {
        var inodes = Set<String>()
        for inst in [a, b] {
            let dir = "/proc/\(inst.process.processIdentifier)/fd"
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
                if let link = try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + fd),
                   link.hasPrefix("socket:[") { inodes.insert(String(link.dropFirst(8).dropLast())) }
            }
        }
        var out: [String] = []
        for proto in ["tcp", "tcp6", "udp", "udp6"] {
            let table = (try? String(contentsOfFile: "/proc/net/\(proto)", encoding: .utf8)) ?? ""
            for line in table.split(separator: "\n").dropFirst() {
                let f = line.split(separator: " ")
                if f.count > 9, inodes.contains(String(f[9])) { out.append("\(proto) \(f[1]) -> \(f[2])") }
            }
        }
        return out
    }

    // MARK: - Sync state

    private func checkRunning() throws {
        for inst in [a, b] where !inst.isRunning {
            throw HarnessError("syncthing \(inst.name) exited (status \(inst.process.terminationStatus))\n\(inst.logTail())")
        }
    }

    private func syncState() async throws -> (Bool, String) {
        var ok = true
        var report = ""
        var globals: [String] = []
        for (inst, peer) in [(a, b), (b, a)] {
            let folder = "folder=\(Self.folderID)"
            let connected = try await inst.rest("GET", "/rest/system/connections")?["connections"]?[peer.deviceID]?["connected"]?.boolValue ?? false
            let status = try await inst.rest("GET", "/rest/db/status?\(folder)")
            let local = try await inst.rest("GET", "/rest/db/completion?\(folder)")?["completion"]?.doubleValue ?? -1
            let remote = try await inst.rest("GET", "/rest/db/completion?\(folder)&device=\(peer.deviceID)")?["completion"]?.doubleValue ?? -1
            let state = status?["state"]?.stringValue ?? "?"
            let need = status?["needTotalItems"]?.intValue ?? -1
            let pullErrors = status?["pullErrors"]?.intValue ?? -1
            let global = ["globalTotalItems", "globalBytes", "sequence"].map { status?[$0]?.intValue.map(String.init) ?? "?" }.joined(separator: "/")
            let sideOK = connected && state == "idle" && need == 0 && pullErrors == 0 && local == 100 && remote == 100
            ok = ok && sideOK
            globals.append(global)
            report += "\n  \(inst.name): connected=\(connected) state=\(state) needTotalItems=\(need) pullErrors=\(pullErrors) completion=\(local) peerCompletion=\(remote) globalItems/bytes/sequence=\(global)"
        }
        // Each side's own sequence differs; compare only items and bytes.
        let agree = globals.map { $0.split(separator: "/").prefix(2).joined(separator: "/") }
        ok = ok && agree[0] == agree[1]
        return (ok, report)
    }

    // MARK: - Setup

    private static func generate(exe: String, home: String) async throws -> String {
        let result = try await runOffPool { try runCommand(exe, ["generate", "--home", home, "--no-default-folder"], timeout: 60) }
        guard result.status == 0 else { throw HarnessError("syncthing generate --home \(home) failed (\(result.status)): \(result.output)") }
        let idRun = try await runOffPool { try runCommand(exe, ["serve", "--home", home, "--device-id"], timeout: 30) }
        let id = idRun.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard idRun.status == 0, id.count == 63, id.split(separator: "-").count == 8 else {
            throw HarnessError("syncthing --device-id for \(home) gave (\(idRun.status)): \(idRun.output)")
        }
        return id
    }

    /// A complete config.xml: Syncthing fills in defaults for everything not named here.
    static func config(name: String, folder: String, deviceID: String, guiPort: UInt16, listenPort: UInt16,
                       peerName: String, peerID: String, peerPort: UInt16) -> String {
        """
        <configuration version="36">
            <folder id="\(folderID)" label="\(folderID)" path="\(xmlEscape(folder))" type="sendreceive" rescanIntervalS="10" fsWatcherEnabled="true" fsWatcherDelayS="1" ignorePerms="false" autoNormalize="true">
                <filesystemType>basic</filesystemType>
                <device id="\(deviceID)" introducedBy=""></device>
                <device id="\(peerID)" introducedBy=""></device>
                <minDiskFree unit="%">0</minDiskFree>
            </folder>
            <device id="\(deviceID)" name="\(name)" compression="metadata" introducer="false" skipIntroductionRemovals="false" introducedBy="">
                <address>dynamic</address>
            </device>
            <device id="\(peerID)" name="\(peerName)" compression="metadata" introducer="false" skipIntroductionRemovals="false" introducedBy="">
                <address>tcp://127.0.0.1:\(peerPort)</address>
                <autoAcceptFolders>false</autoAcceptFolders>
            </device>
            <gui enabled="true" tls="false" debugging="false">
                <address>127.0.0.1:\(guiPort)</address>
                <apikey>\(apiKey)</apikey>
            </gui>
            <options>
                <listenAddress>tcp://127.0.0.1:\(listenPort)</listenAddress>
                <globalAnnounceServer></globalAnnounceServer>
                <globalAnnounceEnabled>false</globalAnnounceEnabled>
                <localAnnounceEnabled>false</localAnnounceEnabled>
                <relaysEnabled>false</relaysEnabled>
                <natEnabled>false</natEnabled>
                <stunServer></stunServer>
                <startBrowser>false</startBrowser>
                <urAccepted>-1</urAccepted>
                <urSeen>3</urSeen>
                <crashReportingEnabled>false</crashReportingEnabled>
                <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
                <reconnectionIntervalS>1</reconnectionIntervalS>
                <minHomeDiskFree unit="%">0</minHomeDiskFree>
            </options>
        </configuration>

        """
    }

    private static func launch(exe: String, name: String, home: String, folder: String, deviceID: String,
                               guiPort: UInt16, listenPort: UInt16) throws -> Instance {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = ["serve", "--home", home, "--no-browser", "--no-restart", "--no-default-folder",
                       "--logfile", home + "/syncthing.log", "--logflags", "3"]
        var env = ProcessInfo.processInfo.environment
        env["STNODEFAULTFOLDER"] = "1"
        env["STNOUPGRADE"] = "1"
        env["STNORESTART"] = "1"
        // Without this, `syncthing serve` (1.19, even with --no-restart) is a monitor process that
        // runs the real Syncthing as a child: killing the monitor (SIGKILL) would orphan it. With
        // it, the process started here is the one that syncs, and signals reach it directly.
        env["STMONITORED"] = "1"
        env["HOME"] = home  // HOME may be unset or odd here; --home decides everything anyway.
        // Syncthing dials through a proxy from the environment, also for loopback peers.
        for key in ["all_proxy", "ALL_PROXY", "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                    "STGUIADDRESS", "STGUIAPIKEY", "STTRACE"] { env.removeValue(forKey: key) }
        p.environment = env
        let out = home + "/stdout.log"
        guard FileManager.default.createFile(atPath: out, contents: nil) else { throw HarnessError("cannot create \(out)") }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = FileHandle.nullDevice
        try p.run()
        try? handle.close()
        return Instance(name: name, home: home, folder: folder, deviceID: deviceID, guiPort: guiPort, listenPort: listenPort, process: p)
    }

    /// Waits until `inst` answers on REST and its sync listener is up; throws at once if it
    /// exited or cannot listen (its port was taken meanwhile), so start() retries with new ports.
    private static func waitListening(_ inst: Instance) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var stage = "REST API"
        while ContinuousClock.now < deadline {
            guard inst.isRunning else { throw HarnessError("syncthing \(inst.name) exited at start (status \(inst.process.terminationStatus))") }
            if let status = try? await inst.rest("GET", "/rest/system/status", timeout: 5) {
                stage = "sync listener"
                if let listener = status["connectionServiceStatus"]?["tcp://127.0.0.1:\(inst.listenPort)"] {
                    if let error = listener["error"]?.stringValue, !error.isEmpty {
                        throw HarnessError("syncthing \(inst.name) cannot listen on 127.0.0.1:\(inst.listenPort): \(error)")
                    }
                    return
                }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessError("syncthing \(inst.name): no \(stage) within 60 s")
    }

    /// Waits until `inst` reports a connection to `peer`.
    private static func waitConnected(_ inst: Instance, to peer: Instance) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            for i in [inst, peer] where !i.isRunning {
                throw HarnessError("syncthing \(i.name) exited (status \(i.process.terminationStatus))")
            }
            let conns = try? await inst.rest("GET", "/rest/system/connections", timeout: 5)
            if conns?["connections"]?[peer.deviceID]?["connected"]?.boolValue == true { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessError("syncthing \(inst.name) not connected to \(peer.name) within 60 s")
    }

    private static func terminate(_ processes: [Process]) {
        for p in processes where p.isRunning { kill(p.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(10)
        while processes.contains(where: { $0.isRunning }) && Date() < deadline { usleep(20_000) }
        for p in processes where p.isRunning { kill(p.processIdentifier, SIGKILL) }
        for p in processes { p.waitUntilExit() }
    }

    private static func xmlEscape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

// MARK: - Small loopback helpers

/// Runs blocking work on a thread of its own, never on the concurrency pool, which timed tests need.
func runOffPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// `count` distinct TCP ports on 127.0.0.1 that were free a moment ago (bound to port 0 together,
/// then closed), so the caller must retry if one is taken in between.
func freeLoopbackPorts(_ count: Int) throws -> [UInt16] {
    var fds: [Int32] = []
    defer { for fd in fds { close(fd) } }
    var ports: [UInt16] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        fds.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard rc == 0 else { throw HarnessError("bind 127.0.0.1:0: errno \(errno)") }
        ports.append(UInt16(bigEndian: address.sin_port))
    }
    return ports
}

/// One HTTP/1.0 request to 127.0.0.1:`port` (the server closes after the reply); returns the body.
/// Throws on a connection failure, a timeout or a status other than 2xx.
func loopbackHTTP(port: UInt16, method: String, path: String, headers: [String: String], timeout: Int) throws -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
    defer { close(fd) }
    var tv = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard rc == 0 else { throw HarnessError("connect 127.0.0.1:\(port): errno \(errno)") }
    var request = "\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 0\r\n"
    for (k, v) in headers { request += "\(k): \(v)\r\n" }
    request += "\r\n"
    let bytes = Array(request.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
        if n < 0 { if errno == EINTR { continue }; throw HarnessError("send to 127.0.0.1:\(port): errno \(errno)") }
        offset += n
    }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16384)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        if n == 0 { break }
        if n < 0 {
            if errno == EINTR { continue }
            throw HarnessError("\(method) \(path) on 127.0.0.1:\(port): no complete reply within \(timeout) s (errno \(errno))")
        }
        response += buffer[0..<n]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { throw HarnessError("\(method) \(path): malformed reply: \(text.prefix(200))") }
    let statusLine = text[..<split.lowerBound].prefix { $0 != "\r" }
    let parts = statusLine.split(separator: " ")
    guard parts.count >= 2, let code = Int(parts[1]) else { throw HarnessError("\(method) \(path): bad status line: \(statusLine)") }
    let body = String(text[split.upperBound...])
    guard (200..<300).contains(code) else { throw HarnessError("\(method) \(path) on 127.0.0.1:\(port): HTTP \(code): \(body.prefix(300))") }
    return body
}
