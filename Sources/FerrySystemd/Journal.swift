import CSystemd
import Glibc

/// Structured logging to the systemd journal through `sd_journal_sendv(3)`.
///
/// The journal keeps each field separately, so `journalctl -o json` (or
/// `journalctl FERRY_TRANSPORT=relay`) can select on them; writing plain lines to stderr
/// would keep only `MESSAGE`.
public enum Journal {
    /// True when stderr is connected to the journal: `JOURNAL_STREAM` (set by systemd for
    /// services whose output goes to the journal) names the device and inode of file
    /// descriptor 2. Then the process runs under systemd and should log through `send`;
    /// a child that inherited the variable but had stderr redirected does not match.
    public static var isStderrJournal: Bool {
        guard let raw = getenv("JOURNAL_STREAM") else { return false }
        let parts = String(cString: raw).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else {
            return false
        }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// Sends one structured entry: `MESSAGE`, `PRIORITY` (the syslog level, 0 emergency
    /// to 7 debug; values outside are clamped), `SYSLOG_IDENTIFIER` and `fields`.
    ///
    /// Field names must be valid journal field names: upper-case letters, digits and `_`,
    /// not starting with a digit or `_` (those are the journal's trusted fields), at most
    /// 64 characters, for example `FERRY_TRANSPORT`. Other names, and `MESSAGE`,
    /// `PRIORITY` and `SYSLOG_IDENTIFIER` among the extra fields, are left out rather than
    /// losing the entry. Values may hold any text, newlines included.
    /// - Returns: true when journald accepted the entry; false when it is not reachable
    ///   (not running under systemd) or the send failed.
    @discardableResult
    public static func send(message: String, priority: Int, identifier: String, fields: [String: String]) -> Bool {
        var entries = [
            "MESSAGE=" + message,
            "PRIORITY=\(min(max(priority, 0), 7))",
            "SYSLOG_IDENTIFIER=" + identifier,
        ]
        for (name, value) in fields.sorted(by: { $0.key < $1.key })
        where isValidFieldName(name) && !reservedNames.contains(name) {
            entries.append(name + "=" + value)
        }

        // One buffer holds every "NAME=value"; the iovecs point into it.
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        for entry in entries {
            let start = buffer.count
            buffer.append(contentsOf: entry.utf8)
            ranges.append(start..<buffer.count)
        }
        return buffer.withUnsafeMutableBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return false }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) >= 0 }
        }
    }

    private static let reservedNames: Set<String> = ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"]

    /// The rule journald applies (`journal_field_valid`): a name it would reject makes it
    /// drop the field, so it is checked here where the caller can be told in the docs.
    static func isValidFieldName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 else { return false }
        if bytes[0] == UInt8(ascii: "_") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[0]) {
            return false
        }
        return bytes.allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
        }
    }
}
