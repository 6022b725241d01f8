import Foundation

/// Memory figures of this process or another one, from `/proc/PID/status` (Linux).
enum ProcessMemory {
    /// Peak resident set size (`VmHWM`) in bytes, or nil when `/proc` cannot be read.
    static func peakResidentBytes(of pid: Int32? = nil) -> Int? { field("VmHWM:", pid) }

    /// Current resident set size (`VmRSS`) in bytes, or nil when `/proc` cannot be read.
    static func residentBytes() -> Int? { field("VmRSS:", nil) }

    private static func field(_ name: String, _ pid: Int32?) -> Int? {
        let path = "/proc/" + (pid.map { String($0) } ?? "self") + "/status"
        guard let status = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name) {
            // "VmHWM:\t  123456 kB"
            let parts = line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let value = parts.first.flatMap({ Int($0) }) else { return nil }
            return value * 1024
        }
        return nil
    }
}
