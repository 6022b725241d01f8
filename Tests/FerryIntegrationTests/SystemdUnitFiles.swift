import Foundation

/// The unit files in the package's `systemd/` directory, made ready to install the way
/// `make install` does it, and the built `ferryd` they run.
enum SystemdUnitFiles {
    /// The ExecStart line the repository's ferryd.service carries; `make install` rewrites it
    /// for its PREFIX, and so does `serviceText(ferrydPath:)`.
    static let installedExecStart = "ExecStart=/usr/local/bin/ferryd"

    /// `<package>/systemd`, found from this source file's location.
    static var sourceDirectory: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("systemd").path
    }

    /// ferryd.service with ExecStart pointing at `ferrydPath`.
    /// - Throws: when the file does not have exactly one `ExecStart=/usr/local/bin/ferryd`
    ///   line, since `make install`'s rewrite would then miss it.
    static func serviceText(ferrydPath: String) throws -> String {
        let text = try String(contentsOfFile: sourceDirectory + "/ferryd.service", encoding: .utf8)
        var lines = text.components(separatedBy: "\n")
        let matching = lines.indices.filter { lines[$0] == installedExecStart }
        guard matching.count == 1 else {
            throw SystemdCommand.Failure(
                "systemd/ferryd.service must have exactly one line `\(installedExecStart)` (make install rewrites it for PREFIX); found \(matching.count)")
        }
        lines[matching[0]] = "ExecStart=" + ferrydPath
        return lines.joined(separator: "\n")
    }

    /// ferryd.socket as it is installed (unchanged).
    static func socketText() throws -> String {
        try String(contentsOfFile: sourceDirectory + "/ferryd.socket", encoding: .utf8)
    }

    /// The ferryd `swift build` put beside the test binary (the test binary sits in
    /// `.build/debug` with the package's executables).
    static func builtFerryd() throws -> String {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = exe.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("ferryd").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory.deleteLastPathComponent()
        }
        throw SystemdCommand.Failure(
            "ferryd is not built next to \(exe.path): run `swift build` before `swift test` (make test does)")
    }
}
