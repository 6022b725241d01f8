import Foundation

/// A fresh temporary directory, removed when the value is released.
public final class TempDir: Sendable {
    public let path: String

    public init(_ name: String = "store") {
        path = NSTemporaryDirectory() + "ferry-test-\(name)-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
