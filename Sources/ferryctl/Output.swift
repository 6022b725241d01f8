import FerryAPI
import FerryJSON
import Glibc

/// Writing to stdout and stderr, unbuffered: each call is one complete write, so lines of
/// `watch` appear as they happen and interleave sanely with stderr.
enum Output {
    /// Writes `text` to stdout.
    static func out(_ text: String) {
        write(1, Array(text.utf8))
    }

    /// Writes `text` and a newline to stdout.
    static func line(_ text: String = "") {
        out(text + "\n")
    }

    /// Writes `text` and a newline to stderr.
    static func note(_ text: String) {
        write(2, Array((text + "\n").utf8))
    }

    /// Writes one JSON document on a line of its own (the `--json` form), with the payloads
    /// `verbatim` marked in it as stored.
    static func json(_ value: JSONValue, _ verbatim: VerbatimJSON = VerbatimJSON()) {
        var bytes = verbatim.serialize(value)
        bytes.append(UInt8(ascii: "\n"))
        write(1, bytes)
    }

    /// Writes `{"record": record}` (the payload as stored) on a line of its own.
    static func json(record: WireRecord) {
        var verbatim = VerbatimJSON()
        json(.object(["record": verbatim.record(record)]), verbatim)
    }

    /// Writes all of `bytes` to `fd`, retrying after `EINTR` and short writes.
    /// - Returns: false when the write failed (errno is left set).
    @discardableResult
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }
}

/// An aligned text table: a header row and rows of cells, every column as wide as its
/// widest cell, the last column unpadded.
struct Table {
    let headers: [String]
    private(set) var rows: [[String]] = []

    init(_ headers: String...) {
        self.headers = headers
    }

    mutating func add(_ cells: String...) {
        rows.append(cells)
    }

    var isEmpty: Bool { rows.isEmpty }

    /// The table as text, one line per row, ending in a newline.
    func render() -> String {
        var widths: [Int] = []
        return render(header: true, widths: &widths)
    }

    /// The table as text, its columns at least `widths` wide; `widths` becomes the widths
    /// used, so a table printed in parts (pages) stays aligned as well as it can.
    func render(header: Bool, widths: inout [Int]) -> String {
        if widths.count < headers.count { widths += Array(repeating: 0, count: headers.count - widths.count) }
        for row in [headers] + rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        var text = ""
        for row in (header ? [headers] : []) + rows {
            var line = ""
            for (column, cell) in row.enumerated() {
                if column > 0 { line += "  " }
                line += cell
                if column < row.count - 1 && column < widths.count {
                    line += String(repeating: " ", count: max(0, widths[column] - cell.count))
                }
            }
            text += line + "\n"
        }
        return text
    }
}

/// How values read in tables and record views.
enum Format {
    /// `text` cut to at most `limit` characters, with an ellipsis when cut; newlines and
    /// tabs become spaces so one value stays on one line.
    static func truncate(_ text: String, to limit: Int) -> String {
        var flat = text
        if flat.contains(where: { $0 == "\n" || $0 == "\t" || $0 == "\r" }) {
            flat = String(flat.map { $0 == "\n" || $0 == "\t" || $0 == "\r" ? " " : $0 })
        }
        guard flat.count > limit else { return flat }
        return String(flat.prefix(max(0, limit - 1))) + "…"
    }

    /// A record's payload as compact JSON, cut to `limit` characters; `-` for a tombstone.
    static func payload(_ record: WireRecord, limit: Int = 60) -> String {
        guard let text = payloadText(record) else { return "-" }
        return truncate(PayloadText.compact(text), to: limit)
    }

    /// A record's payload as JSON text: as stored when the record was read with it, else
    /// written from its value; nil for a tombstone.
    private static func payloadText(_ record: WireRecord) -> String? {
        record.payloadText ?? record.payload.map { JSONWriter.string(.object($0)) }
    }

    /// Unix milliseconds as UTC time, `2025-01-31 17:04:05Z`; `-` for nil.
    static func time(_ milliseconds: Int64?) -> String {
        guard let milliseconds else { return "-" }
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return String(milliseconds) }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// A byte count for people: `512 B`, `1.5 KiB`, `3.2 MiB`.
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(count) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    /// A record as `key  value` lines, the payload pretty-printed below.
    static func recordView(_ record: WireRecord) -> String {
        var table = Table("space", record.space)
        table.add("entity", record.entity)
        table.add("id", record.id)
        table.add("hlc", record.hlc)
        table.add("deleted", record.deleted ? "yes" : "no")
        table.add("seq", String(record.seq))
        table.add("attachments", record.attachments.isEmpty ? "-" : record.attachments.joined(separator: "\n             "))
        var text = table.render()
        if let payload = payloadText(record) {
            text += "payload      " + PayloadText.pretty(payload, indent: "             ") + "\n"
        }
        return text
    }
}
