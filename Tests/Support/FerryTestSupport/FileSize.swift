import Foundation

/// The size of a file, for tests that weigh what a store left on disk.
public enum FileSize {
    /// `path`'s size in bytes; 0 when it does not exist.
    public static func of(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}
