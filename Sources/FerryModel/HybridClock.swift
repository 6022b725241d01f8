/// A hybrid logical clock: issues stamps that never go backwards, stay close to the wall clock,
/// and move past every stamp the device has seen (within the drift guard).
///
/// A value type with no locking: its single owner (the store's writer) calls it.
public struct HybridClock: Sendable {
    /// The device's id, the last field of every stamp it issues.
    public let node: NodeID
    /// How far ahead of the wall clock a received stamp may be and still move this clock.
    public let maxDriftMillis: Int64
    private let wallClock: @Sendable () -> Int64
    /// The greatest stamp issued or observed so far (the clock's state, persisted by the store).
    public private(set) var last: Stamp

    /// - Parameters:
    ///   - node: this device's id.
    ///   - last: the state persisted from an earlier run, if any.
    ///   - maxDriftMillis: the drift guard, default 5 minutes.
    ///   - wallClock: milliseconds since the epoch; injected so tests control time.
    public init(node: NodeID, last: Stamp? = nil, maxDriftMillis: Int64 = 300_000,
                wallClock: @escaping @Sendable () -> Int64) {
        self.node = node
        self.maxDriftMillis = maxDriftMillis
        self.wallClock = wallClock
        self.last = last.map { Stamp(millis: $0.millis, counter: $0.counter, node: node) }
            ?? Stamp(millis: Stamp.millisRange.lowerBound, counter: 0, node: node)
    }

    /// A new stamp for a local event: greater than every stamp issued or observed before.
    public mutating func now() -> Stamp {
        let wall = wallClock()
        let next: Stamp
        if wall > last.millis {
            next = Stamp(millis: wall, counter: 0, node: node)
        } else {
            // The wall clock stood still or went backwards: keep the logical time and count.
            next = last.successor(node: node)
        }
        last = next
        return next
    }

    /// A stamp for a new local version of a record whose current version has stamp `current`:
    /// always greater than `current`, so an edit made after seeing a version wins over it, even
    /// when `current` is beyond the drift guard (then the clock itself is not moved by it).
    public mutating func stamp(after current: Stamp?) -> Stamp {
        if let current { observe(current) }
        let next = now()
        guard let current, next <= current else { return next }
        return current.successor(node: node)
    }

    /// Moves the clock past a stamp received from elsewhere, unless that stamp is more than the
    /// drift guard ahead of the wall clock. Returns false when the drift guard refused it (the
    /// version is still stored; only the clock is not dragged along).
    @discardableResult
    public mutating func observe(_ remote: Stamp) -> Bool {
        guard remote > last else { return true }
        let wall = wallClock()
        if remote.millis > wall &+ maxDriftMillis { return false }
        last = Stamp(millis: remote.millis, counter: remote.counter, node: node)
        return true
    }
}
