/// A pull position: the per-owner sequence number of the last event a client has plus the
/// owner's cursor offset, as decimal text. Clients treat it as opaque. Sequence numbers only
/// grow, so a cursor stays valid across compaction and deletion. One beyond the owner's newest
/// was never handed out: the relay was restored from an older backup, and a pull after it moves
/// the offset past every cursor handed out before and is refused, as those are from then on
/// (`RelayStorageError.cursorLost`, 409 `lost_data`).
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

extension Cursor {
    /// How far past an owner's next sequence number its cursor offset moves when the storage is
    /// found restored: more than the events a relay could have taken between a backup and its
    /// restore, so no cursor handed out before the restore lands in the new numbering.
    public static let restoreGap: Int64 = 1 << 32

    /// How far beyond the newest cursor of the owner's numbering a cursor handed out before a
    /// restore can be: the events taken between the backup and its restore (fewer than
    /// `restoreGap`), plus `restoreGap` and the events for each time the numbering moved in
    /// between (a restore found, the relay copy deleted), allowing for several.
    public static let restoreSpan: Int64 = 8 * restoreGap

    /// Whether `cursor`, beyond `newest`, can have been handed out by this storage before it
    /// was restored from an older backup; if not, it was never handed out here.
    public static func couldFollowRestore(_ cursor: Cursor, newest: Cursor) -> Bool {
        cursor.sequence <= newest.sequence || cursor.sequence - max(newest.sequence, 0) <= restoreSpan
    }

    /// The owner's cursor offset after the storage was found restored: `restoreGap` past the
    /// newest cursor of the numbering `offset` and `nextSeq` make, so every cursor handed out
    /// before is below it. Nil when that would leave less than half of Int64 for the numbers
    /// to come (after some two billion restores).
    public static func offsetAfterRestore(offset: Int64, nextSeq: Int64) -> Int64? {
        let (moved, overflow) = offset.addingReportingOverflow(nextSeq)
        guard !overflow, moved <= Int64.max / 2 - restoreGap else { return nil }
        return moved + restoreGap
    }
}
