import Foundation

/// Memory figures of this process, from `/proc/self/status` (Linux).
enum ProcessMemory {
    /// Peak resident set size (`VmHWM`) in bytes, or nil when `/proc` cannot be read.
    static func peakResidentBytes() -> Int? { field("VmHWM:") }

    /// Current resident set size (`VmRSS`) in bytes, or nil when `/proc` cannot be read.
    static func residentBytes() -> Int? { field("VmRSS:") }

    private static func field(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name) {
            // "VmHWM:\t  123456 kB"
            let parts = line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let value = parts.first.flatMap({ Int($0) }) else { return nil }
            return value * 1024
        }
        return nil
    }
}
