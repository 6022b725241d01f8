/// The keys of every open object, for duplicate detection with String
/// equality (the same rule `Dictionary<String, _>` applies).
///
/// Most objects are small, so keys are compared linearly (no hashing) until
/// an object reaches `linearLimit` keys; from then on that object also keeps
/// a `Set`, so large objects cost O(1) per key, never O(n²).
struct JSONKeyTracker {
    private static let linearLimit = 12

    private struct Frame {
        var start: Int
        var set: Set<String>?
    }

    /// Keys of all open objects, innermost object's last.
    private(set) var keys: [String] = []
    private var frames: [Frame] = []

    /// Where the innermost open object's keys start in `keys`.
    var innermostStart: Int {
        frames[frames.count - 1].start
    }

    mutating func open() {
        frames.append(Frame(start: keys.count, set: nil))
    }

    /// Records `key` for the innermost object, or throws `.duplicateKey` at
    /// `offset` if that object already has it.
    mutating func add(_ key: String, offset: Int) throws(JSONError) {
        let last = frames.count - 1
        let start = frames[last].start
        if keys.count - start < Self.linearLimit {
            for index in start..<keys.count where keys[index] == key {
                throw JSONError(kind: .duplicateKey, offset: offset)
            }
        } else {
            var set = frames[last].set ?? Set(keys[start...])
            frames[last].set = nil  // keep `set` uniquely referenced while inserting
            let inserted = set.insert(key).inserted
            frames[last].set = set
            if !inserted { throw JSONError(kind: .duplicateKey, offset: offset) }
        }
        keys.append(key)
    }

    /// Forgets the innermost object and its keys.
    mutating func close() {
        let frame = frames.removeLast()
        keys.removeSubrange(frame.start...)
    }
}
