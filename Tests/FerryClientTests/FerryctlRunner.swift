import Foundation
import Glibc

/// Runs the built `ferryctl` binary and collects what it printed and its exit code.
struct FerryctlRunner {
    struct Result: CustomStringConvertible {
        let status: Int32
        let stdout: String
        let stderr: String
        var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
        /// stdout split into lines, without the trailing empty one.
        var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    let executable: String

    /// Finds `ferryctl` beside the test binary (`swift build` puts them in one directory).
    init() throws {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("ferryctl").path
            if FileManager.default.isExecutableFile(atPath: candidate) {
                executable = candidate
                return
            }
            directory.deleteLastPathComponent()
        }
        throw Failure(description: "ferryctl not found near \(exe): run 'swift build' before 'swift test' (make test does)")
    }

    /// Runs `ferryctl arguments...` with exactly `environment` (nothing inherited, so a
    /// FERRY_SOCKET of the caller cannot leak in), `stdin` as its input, killed after `timeout`.
    func run(_ arguments: [String], environment: [String: String] = [:], stdin: [UInt8] = [],
             timeout: Duration = .seconds(30)) throws -> Result {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ferryctl-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inPath = directory.appendingPathComponent("stdin").path
        let outPath = directory.appendingPathComponent("stdout").path
        let errPath = directory.appendingPathComponent("stderr").path
        for (path, contents) in [(inPath, Data(stdin)), (outPath, Data()), (errPath, Data())] {
            guard FileManager.default.createFile(atPath: path, contents: contents) else {
                throw Failure(description: "cannot create \(path)")
            }
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle(forReadingAtPath: inPath)
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw Failure(description: "ferryctl \(arguments) did not finish within \(timeout)")
            }
            usleep(2_000)
        }
        process.waitUntilExit()
        let stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return Result(status: process.terminationStatus, stdout: stdout, stderr: stderr)
    }
}
