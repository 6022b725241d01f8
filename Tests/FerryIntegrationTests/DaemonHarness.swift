import FerryTestSupport
import Foundation
import FerryJSON
import FerryVarlink

/// A real ferryd process on a private state directory and socket.
final class DaemonHarness: @unchecked Sendable {
    // @unchecked: `process` is only replaced by the test that owns the harness, between runs.
    let root: String
    let stateDirectory: String
    let socketPath: String
    let configPath: String
    let logPath: String
    private let child: ChildProcess
    /// The running ferryd, if any.
    var process: Process? { child.process }

    /// - Parameter config: the text of a ferryd.conf to use (default: durability normal for speed
    ///   where a test does not need FULL).
    init(config: String = "[Store]\nDurability=normal\n", name: String = "ferryd") throws {
        root = NSTemporaryDirectory() + "ferry-it-\(name)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        stateDirectory = root + "/state"
        socketPath = root + "/run/ferryd.sock"
        configPath = root + "/ferryd.conf"
        logPath = root + "/ferryd.log"
        child = ChildProcess(logPath: logPath)
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        child.crash()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Starts ferryd and waits until it answers on its socket.
    /// - Parameter launcher: a command that runs ferryd (its path and arguments follow), such as
    ///   a `unshare` that gives it a mount namespace of its own.
    func start(extraArguments: [String] = [], environment: [String: String] = [:], launcher: [String] = []) throws {
        let ferryd = try Executables.path("ferryd")
        let arguments = ["--config", configPath, "--state-dir", stateDirectory, "--socket", socketPath] + extraArguments
        if let first = launcher.first {
            try child.start(executable: first, arguments: Array(launcher.dropFirst()) + [ferryd] + arguments, environment: environment)
        } else {
            try child.start(executable: ferryd, arguments: arguments, environment: environment)
        }
        let p = child.process!
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if !p.isRunning { throw HarnessError("ferryd exited at start: \(self.log)") }
            if let client = try? VarlinkClient(address: "unix:" + socketPath) { client.close(); return }
            usleep(20_000)
        }
        throw HarnessError("ferryd did not answer on \(socketPath) within 30 s: \(self.log)")
    }

    /// SIGTERM, and wait for a graceful exit. Returns the exit status.
    @discardableResult
    func stop() -> Int32 { child.stop() }

    /// SIGKILL: no chance to clean up.
    func crash() { child.crash() }

    var isRunning: Bool { child.isRunning }

    /// What ferryd logged, over all its runs.
    var log: String { child.log }

    func client() throws -> VarlinkClient { try VarlinkClient(address: "unix:" + socketPath) }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Executables the integration tests start.
enum Executables {
    static func path(_ name: String) throws -> String { try BuiltExecutable.path(name) }

    /// The Python with PyPI's `varlink` package: $FERRY_PYTHON (make test sets it to its venv),
    /// else python3 on the PATH.
    static var python: String {
        ProcessInfo.processInfo.environment["FERRY_PYTHON"] ?? "python3"
    }
}

/// Runs a command to completion and returns its exit status and combined output.
@discardableResult
func runCommand(_ path: String, _ arguments: [String], input: String? = nil, timeout: TimeInterval = 60,
                directory: String? = nil) throws -> (status: Int32, output: String) {
    let p = Process()
    if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
    p.executableURL = URL(fileURLWithPath: path.hasPrefix("/") ? path : "/usr/bin/env")
    p.arguments = path.hasPrefix("/") ? arguments : [path] + arguments
    let out = Pipe()
    p.standardOutput = out
    p.standardError = out
    let inPipe = Pipe()
    p.standardInput = inPipe
    try p.run()
    if let input { inPipe.fileHandleForWriting.write(Data(input.utf8)) }
    try? inPipe.fileHandleForWriting.close()
    // The output is read on a thread of its own, never on the concurrency pool, which other
    // tests need.
    let box = ResultBox<Data>()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        box.value = out.fileHandleForReading.readDataToEndOfFile()
        done.signal()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(10_000) }
    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
    p.waitUntilExit()
    done.wait()
    return (p.terminationStatus, String(decoding: box.value ?? Data(), as: UTF8.self))
}

final class ResultBox<T>: @unchecked Sendable {
    // @unchecked: written once before the semaphore is signalled, read after.
    var value: T?
}

extension JSONValue {
    /// obj["a"]["b"] as a path, for terse assertions.
    func at(_ path: String...) -> JSONValue? {
        var v: JSONValue? = self
        for key in path { v = v?[key] }
        return v
    }
}
