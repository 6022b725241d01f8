import Foundation
import Glibc
import FerryTestSupport
import Testing

@testable import FerryVarlink

/// What a finished child process printed (stdout and stderr together) and its status.
struct ProcessResult {
    var status: Int32
    var output: String
    var timedOut: Bool
}

enum ExternalToolError: Error, CustomStringConvertible {
    case missing(String)

    var description: String {
        switch self {
        case let .missing(message): return message
        }
    }
}

/// Runs a program to completion (killing it after `timeout`) and captures its output.
func runProcess(
    _ executable: String, _ arguments: [String], timeout: Duration = .seconds(120),
    environment: [String: String]? = nil
) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    let output = OutputCollector(pipe.fileHandleForReading)
    let exited = Locked(false)
    try process.run()
    let killer = Task {
        try? await Task.sleep(for: timeout)
        if !Task.isCancelled && process.isRunning {
            exited.withLock { $0 = true }
            kill(process.processIdentifier, SIGKILL)
        }
    }
    while process.isRunning {
        try await Task.sleep(for: .milliseconds(20))
    }
    killer.cancel()
    let text = await output.text()
    return ProcessResult(status: process.terminationStatus, output: text, timedOut: exited.withLock { $0 })
}

/// Reads a pipe to its end on a plain thread (not the cooperative pool).
final class OutputCollector: Sendable {
    private let result = Locked<(done: Bool, data: Data, waiters: [CheckedContinuation<String, Never>])>((false, Data(), []))

    init(_ handle: FileHandle) {
        let thread = Thread { [result] in
            let data = handle.readDataToEndOfFile()
            let waiters = result.withLock { state in
                state.done = true
                state.data = data
                defer { state.waiters = [] }
                return state.waiters
            }
            let text = String(decoding: data, as: UTF8.self)
            for waiter in waiters { waiter.resume(returning: text) }
        }
        thread.start()
    }

    func text() async -> String {
        await withCheckedContinuation { continuation in
            let ready: String? = result.withLock { state in
                if state.done { return String(decoding: state.data, as: UTF8.self) }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// A long-running child (a Varlink server) that tests talk to over a socket.
final class ServerProcess: Sendable {
    let process: Process
    let output: OutputCollector

    /// Starts the program and waits until `socketPath` accepts connections.
    init(_ executable: String, _ arguments: [String], socketPath: String, timeout: Duration = .seconds(20)) async throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        output = OutputCollector(pipe.fileHandleForReading)
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? RawConnection(path: socketPath)) != nil { return }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = await stop()
        throw ExternalToolError.missing("\(executable) did not start listening on \(socketPath):\n\(log)")
    }

    /// Sends SIGTERM (or SIGKILL when not `graceful`), waits for the exit (SIGKILL after
    /// 5 s) and returns everything it printed. Reference servers are killed outright:
    /// Python ignores SIGTERM when the test runner's children inherit it ignored.
    @discardableResult
    func stop(graceful: Bool = true) async -> String {
        if process.isRunning { kill(process.processIdentifier, graceful ? SIGTERM : SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        return await output.text()
    }
}

/// Finds (and if needed installs) the reference implementations the certification
/// tests run. Installs happen at most once per test run and only when a tool is missing.
actor ExternalTools {
    static let shared = ExternalTools()

    private var python: String?
    private var goClient: String?

    /// Our certification server, built next to this test binary by `swift build`.
    nonisolated var certificationServer: String {
        get throws {
            do {
                return try BuiltExecutable.path("varlink-certification")
            } catch {
                throw ExternalToolError.missing(String(describing: error))
            }
        }
    }

    /// A python3 that can `import varlink` (installing the PyPI package if needed:
    /// into the first python3 on PATH, else into a venv under /tmp).
    func pythonWithVarlink() async throws -> String {
        if let python { return python }
        let venv = "/tmp/ferry-varlink-venv"
        let venvPython = venv + "/bin/python3"
        var candidates = [Self.which("python3"), "/usr/bin/python3"].compactMap { $0 }
        if FileManager.default.isExecutableFile(atPath: venvPython) { candidates.insert(venvPython, at: 1) }
        guard let system = candidates.first else {
            throw ExternalToolError.missing("python3 is not installed; the Python reference client needs it")
        }
        for candidate in candidates where try await Self.imports(candidate) {
            python = candidate
            return candidate
        }
        var log = ""
        let pip = try await runProcess(system, ["-m", "pip", "install", "--quiet", "varlink"], timeout: .seconds(300))
        log += pip.output
        if try await Self.imports(system) {
            python = system
            return system
        }
        if !FileManager.default.isExecutableFile(atPath: venvPython) {
            log += try await runProcess(system, ["-m", "venv", venv], timeout: .seconds(120)).output
        }
        log += try await runProcess(venvPython, ["-m", "pip", "install", "--quiet", "varlink"], timeout: .seconds(300)).output
        guard try await Self.imports(venvPython) else {
            throw ExternalToolError.missing("could not install the PyPI package varlink:\n\(log)")
        }
        python = venvPython
        return venvPython
    }

    /// Debian's `varlink-go-certification` (installing the varlink-go package if needed).
    func varlinkGoCertification() async throws -> String {
        if let goClient { return goClient }
        if let found = Self.which("varlink-go-certification") {
            goClient = found
            return found
        }
        var log = ""
        for attempt in 0..<2 {
            if attempt == 1 {
                log += try await runProcess("/usr/bin/apt-get", ["update", "-qq"], timeout: .seconds(300)).output
            }
            let install = try await runProcess(
                "/usr/bin/apt-get", ["install", "-y", "-qq", "varlink-go"], timeout: .seconds(300),
                environment: ProcessInfo.processInfo.environment.merging(["DEBIAN_FRONTEND": "noninteractive"]) { $1 })
            log += install.output
            if let found = Self.which("varlink-go-certification") {
                goClient = found
                return found
            }
        }
        throw ExternalToolError.missing("varlink-go-certification is missing and apt-get could not install varlink-go:\n\(log)")
    }

    private static func imports(_ python: String) async throws -> Bool {
        try await runProcess(python, ["-c", "import varlink.tests.test_certification"], timeout: .seconds(60)).status == 0
    }

    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin", "/usr/local/bin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
