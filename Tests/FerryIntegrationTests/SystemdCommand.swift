import FerryTestSupport
import Foundation
import Glibc

/// Runs the host tools the systemd test drives (`unshare`, `nsenter`, `systemctl`,
/// `journalctl`, `systemd-analyze`) and finds them.
///
/// Each command runs on a thread of its own, not on the cooperative pool: `systemctl start`
/// blocks until the unit is up, and the other test suites run in parallel meanwhile.
enum SystemdCommand {
    /// What a finished command printed and how it ended.
    struct Output: Sendable, CustomStringConvertible {
        var command: String
        var status: Int32
        var stdout: String
        var stderr: String
        var timedOut: Bool

        var succeeded: Bool { status == 0 && !timedOut }

        var description: String {
            var text = "`\(command)` exited with \(timedOut ? "a timeout" : "status \(status)")"
            if !stdout.isEmpty { text += "\nstdout:\n\(stdout)" }
            if !stderr.isEmpty { text += "\nstderr:\n\(stderr)" }
            return text
        }
    }

    /// Why the systemd test cannot go on.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs `executable` with `arguments` to its end, killing it after `timeout`.
    /// Output goes to temporary files rather than pipes, so that neither stream can fill up
    /// and stall the child while the other is read.
    static func run(
        _ executable: String, _ arguments: [String], timeout: Duration = .seconds(60)
    ) async throws -> Output {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Output, Error>) in
            let thread = Thread {
                do {
                    continuation.resume(returning: try runBlocking(executable, arguments, timeout: timeout))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "systemd-test-command"
            thread.start()
        }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String], timeout: Duration) throws -> Output {
        let stdoutFile = try TemporaryFile()
        let stderrFile = try TemporaryFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdoutFile.handle
        process.standardError = stderrFile.handle
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            usleep(5_000)
        }
        let timedOut = process.isRunning
        if timedOut { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return Output(
            command: ([executable] + arguments).joined(separator: " "),
            status: process.terminationStatus,
            stdout: stdoutFile.contents(), stderr: stderrFile.contents(), timedOut: timedOut)
    }

    /// The absolute path of the tool `name`, searched in `$PATH` and the system directories
    /// (the test runs as root, whose tools may sit in `sbin`).
    /// - Throws: `Failure` naming the Debian package to install when it is not there.
    static func find(_ name: String, package: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init)
            + ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        for directory in directories where !directory.isEmpty {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw Failure("\(name) is not installed: install the Debian package \(package) (make test does)")
    }

    /// The first of `paths` that is an executable file.
    static func first(of paths: [String], package: String) throws -> String {
        for path in paths where FileManager.default.isExecutableFile(atPath: path) { return path }
        throw Failure("none of \(paths.joined(separator: ", ")) exists: install the Debian package \(package) (make test does)")
    }

    /// An unlinked-on-drop temporary file a child process writes into.
    private final class TemporaryFile {
        let path: String
        let handle: FileHandle

        init() throws {
            var template = Array((NSTemporaryDirectory() + "/ferry-systemd-output.XXXXXX").utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else { throw Failure("mkstemp failed: \(String(cString: strerror(errno)))") }
            path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        }

        func contents() -> String {
            (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        }

        deinit {
            unlink(path)
        }
    }
}
