import Foundation

/// Finds the executables `swift build` put beside the test binary.
enum ExecutableLocator {
    static func path(_ name: String) throws -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test binary may sit inside a bundle directory (FerryPackageTests.xctest/...).
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir.deleteLastPathComponent()
        }
        throw LocatorError(message: "\(name) not found next to \(exe): run 'swift build' before 'swift test' (make test does)")
    }

    struct LocatorError: Error, CustomStringConvertible { let message: String; var description: String { message } }
}
