import Synchronization

/// The memory all connections of one server hold together (calls read but not yet handled,
/// replies queued but not yet read), against `VarlinkServerConfiguration.maxBufferedBytes`.
/// Connections add what they take and give it back as it goes; any thread may ask.
final class BufferBudget: Sendable {
    /// The cap on the total.
    let limit: Int
    /// What one connection may always hold, whatever the total.
    let fairShare: Int
    private let held = Atomic<Int>(0)

    init(limit: Int, fairShare: Int) {
        self.limit = limit
        self.fairShare = fairShare
    }

    /// No cap: for a connection state made on its own (tests).
    static var unlimited: BufferBudget { BufferBudget(limit: .max, fairShare: .max) }

    /// Bytes held by all connections now.
    var total: Int { held.load(ordering: .relaxed) }

    /// Counts `bytes` more held (negative: given back).
    func add(_ bytes: Int) {
        if bytes != 0 { held.wrappingAdd(bytes, ordering: .relaxed) }
    }

    /// True when all connections together hold more than the cap.
    var isExceeded: Bool { total > limit }

    /// Whether a connection holding `own` bytes may take `more`: always within its fair
    /// share, beyond it while the total stays within the cap.
    func allows(own: Int, more: Int) -> Bool {
        own + more <= fairShare || total + more <= limit
    }
}
