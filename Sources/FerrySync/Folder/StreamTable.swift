import FerryModel

/// The newest stamp of each stream in a device's own folder files, and the size of its frame:
/// a hash table split into 256 by the stream id's first byte.
///
/// A device's own log holds an entry per record it ever wrote, so the table grows with the
/// store. One table that large pays, each time it doubles, for moving every entry into a new
/// table of megabytes, at a cache miss each (measured with 400,000 random ids: 590-650 ns an
/// insert in all). Split, each part doubles on its own while it is small enough for the cache
/// (290-340 ns an insert), and a lookup costs the same. Stream ids are keyed hashes, so their
/// first bytes spread the entries evenly.
struct StreamTable: Sendable {
    typealias Entry = (stamp: Stamp, size: UInt32)

    private var parts = [[StreamID: Entry]](repeating: [:], count: 256)
    /// How many streams it holds.
    private(set) var count = 0

    private static func part(_ stream: StreamID) -> Int { Int(truncatingIfNeeded: stream.high >> 56) }

    subscript(stream: StreamID) -> Entry? {
        parts[Self.part(stream)][stream]
    }

    /// Sets the stream's entry; returns the one it replaced, nil for a stream it did not hold.
    @discardableResult
    mutating func updateValue(_ entry: Entry, forKey stream: StreamID) -> Entry? {
        let old = parts[Self.part(stream)].updateValue(entry, forKey: stream)
        if old == nil { count += 1 }
        return old
    }

    /// Forgets every stream.
    mutating func removeAll() {
        parts = [[StreamID: Entry]](repeating: [:], count: 256)
        count = 0
    }
}
