import Foundation
import Glibc

/// A service process a test runs (ferryd, ferry-relay): its output appended to one log file
/// across restarts, started without the systemd variables the test runner may have (so it logs
/// to that file and does not talk to the runner's service manager), stopped with SIGTERM or
/// killed with SIGKILL, and killed when the value goes away.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `process` is only replaced by the test that owns it, between runs.
    /// Where the output of every run goes.
    public let logPath: String
    /// The current run, if one was started and not stopped or crashed.
    public private(set) var process: Process?

    /// Environment variables removed before a start: systemd's notification, journal,
    /// socket-activation and state-directory hand-offs.
    public static let serviceVariables = [
        "NOTIFY_SOCKET", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "STATE_DIRECTORY",
    ]

    public init(logPath: String) {
        self.logPath = logPath
    }

    deinit { crash() }

    /// Starts `executable` with `arguments`; `environment` is added to the test's own.
    public func start(executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for key in Self.serviceVariables { env.removeValue(forKey: key) }
        for (key, value) in environment { env[key] = value }
        p.environment = env
        if !FileManager.default.fileExists(atPath: logPath) {
            FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        p.standardError = log
        p.standardOutput = log
        try p.run()
        process = p
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    /// Everything the process wrote, over all its runs.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM, and wait for the exit. Returns the exit status (-1 when nothing runs).
    @discardableResult
    public func stop() -> Int32 {
        guard let p = process else { return -1 }
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
        process = nil
        return p.terminationStatus
    }

    /// SIGKILL, and wait: no chance to clean up.
    public func crash() {
        guard let p = process else { return }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        process = nil
    }

    /// Runs a prepared process to its end; its exit status and its stdout and stderr together.
    public static func runToEnd(_ p: Process) throws -> (status: Int32, output: String) {
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Runs `executable` with `arguments` to its end (see `runToEnd(_:)`).
    public static func runToEnd(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        return try runToEnd(p)
    }
}
