/// When the relay transport may ask the relay to leave out this device's own events
/// (`skipDevice`), and when it must read them.
///
/// A store restored from an older backup on the same machine keeps its node id, and lacks what
/// a copy of this device pushed after that backup: those events are on the relay after the
/// store's saved cursor, sealed with this device's id. They were all pushed before this
/// process started (a state directory is replaced while ferryd is stopped), so the first
/// catch-up after the transport starts reads own events too, from the saved cursor up to the
/// relay's newest event; from the first page that answers with nothing more on, pulls after
/// its cursor leave them out. A pull after an earlier cursor (the engine reads a page again
/// when applying it failed) still reads them, so none is left out before it was applied. A
/// normal restart reads back only what this device pushed after its last saved cursor.
///
/// Relay cursors are decimal numbers that only grow (docs/relay.openapi.yaml); no cursor is
/// the start, 0. A cursor that is not such a number is never taken as past the catch-up. A
/// value type: the transport keeps it under a lock.
struct OwnEventReading: Sendable, Equatable {
    /// The cursor of the first page after start that answered with nothing more (every event
    /// pushed before this process started is at or below it); nil until then.
    private(set) var caughtUpAt: Int64?

    init() {}

    /// Whether a pull after `cursor` may leave out this device's own events.
    func mayLeaveOut(after cursor: String?) -> Bool {
        guard let caughtUpAt, let position = Self.position(cursor) else { return false }
        return position >= caughtUpAt
    }

    /// Takes in the relay's answer to a pull that read own events: its cursor and whether more
    /// events were there. Only answers the relay gave count, never a cancelled pull's page.
    mutating func answered(cursor: String, more: Bool) {
        guard caughtUpAt == nil, !more, let position = Self.position(cursor) else { return }
        caughtUpAt = position
    }

    /// A relay cursor as a number: no cursor (or an empty one) is the start, 0; nil for a text
    /// that is not 1 to 19 decimal digits within Int64.
    static func position(_ cursor: String?) -> Int64? {
        guard let cursor, !cursor.isEmpty else { return 0 }
        guard cursor.utf8.count <= 19, cursor.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(cursor)
    }
}
