/// A pull position: the per-owner sequence number of the last event a client has, as decimal
/// text. Clients treat it as opaque. Sequence numbers only grow, so a cursor stays valid across
/// compaction and deletion.
public struct Cursor: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The largest cursor text accepted.
    public static let maxLength = 19

    public let sequence: Int64
    public init(_ sequence: Int64) { self.sequence = sequence }

    /// The start of the log (no `after`).
    public static let start = Cursor(0)

    /// Parses a cursor: 1 to 19 decimal digits within Int64.
    public init?(text: String) {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= Cursor.maxLength, utf8.allSatisfy({ (48...57).contains($0) }),
              let value = Int64(text) else { return nil }
        sequence = value
    }

    public var description: String { String(sequence) }
    public static func < (a: Cursor, b: Cursor) -> Bool { a.sequence < b.sequence }
}
