import Foundation

/// The executables `swift build` put beside the test binary (ferryd, ferryctl and the test
/// helpers in Tests/Support), which tests start as real processes.
public enum BuiltExecutable {
    /// The path of the built executable `name`.
    /// - Throws: `Missing` naming where it looked and what to run.
    public static func path(_ name: String) throws -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test binary may sit inside a bundle directory (FerryPackageTests.xctest/...).
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir.deleteLastPathComponent()
        }
        throw Missing(description: "\(name) not found next to \(exe): run 'swift build' before 'swift test' (make test does)")
    }

    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }
}
