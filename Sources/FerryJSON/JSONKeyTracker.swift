/// The keys of every open object, for duplicate detection with String equality (the rule
/// `Dictionary<String, _>` applies). A plain-ASCII key the scanner hands over as its bytes in
/// the input (what validation does) is kept as those bytes, with no String made, and compared
/// byte for byte with another such key, which for two ASCII keys is String equality. A
/// comparison that involves any other key (escaped or non-ASCII, kept as a String) is made
/// between Strings, since canonical equivalence can make bytes that differ equal ("K" and
/// U+212A KELVIN SIGN).
///
/// Objects are compared linearly until they reach `linearLimit` keys; from then on that
/// object also keeps a `Set<String>`, so large objects cost O(1) per key, never O(n²).
///
/// Holds pointers into the input: use it only while the input buffer it was given is alive.
struct JSONKeyTracker {
    private static let linearLimit = 12

    /// One key: plain-ASCII bytes in the input (`string` < 0), or `strings[string]`.
    private struct Key {
        var bytes: UnsafePointer<UInt8>?
        var count: Int
        var string: Int
    }

    private struct Frame {
        var start: Int
        var stringsStart: Int
        var set: Set<String>?
    }

    private var keys: [Key] = []
    private var strings: [String] = []
    private var frames: [Frame] = []

    init() {
        keys.reserveCapacity(16)
        frames.reserveCapacity(4)
    }

    mutating func open() {
        frames.append(Frame(start: keys.count, stringsStart: strings.count, set: nil))
    }

    /// Records a plain-ASCII key (its bytes in the input) for the innermost object, or
    /// throws `.duplicateKey` at `offset` if that object already has it.
    mutating func add(ascii: UnsafeBufferPointer<UInt8>, offset: Int) throws(JSONError) {
        try add(Key(bytes: ascii.baseAddress, count: ascii.count, string: -1), offset: offset)
    }

    /// Records any other key the same way.
    mutating func add(_ key: String, offset: Int) throws(JSONError) {
        strings.append(key)
        try add(Key(bytes: nil, count: 0, string: strings.count - 1), offset: offset)
    }

    private mutating func add(_ key: Key, offset: Int) throws(JSONError) {
        let last = frames.count - 1
        let start = frames[last].start
        if keys.count - start < Self.linearLimit {
            for index in start..<keys.count where equal(keys[index], key) {
                throw JSONError(kind: .duplicateKey, offset: offset)
            }
        } else {
            var set = frames[last].set ?? Set(keys[start...].map(text))
            frames[last].set = nil  // keep `set` uniquely referenced while inserting
            let inserted = set.insert(text(key)).inserted
            frames[last].set = set
            if !inserted { throw JSONError(kind: .duplicateKey, offset: offset) }
        }
        keys.append(key)
    }

    /// Where the innermost open object's keys start (for `key(at:)`).
    var innermostStart: Int {
        frames[frames.count - 1].start
    }

    /// The text of the key at `index` (counted over all open objects' keys).
    func key(at index: Int) -> String {
        text(keys[index])
    }

    /// The text of the last key added, if any.
    var lastKey: String? {
        keys.last.map(text)
    }

    /// Forgets the innermost object and its keys.
    mutating func close() {
        let frame = frames.removeLast()
        keys.removeSubrange(frame.start...)
        if strings.count > frame.stringsStart { strings.removeSubrange(frame.stringsStart...) }
    }

    private func equal(_ a: Key, _ b: Key) -> Bool {
        if a.string < 0 && b.string < 0 {
            guard a.count == b.count else { return false }
            for i in 0..<a.count where a.bytes![i] != b.bytes![i] { return false }
            return true
        }
        return text(a) == text(b)
    }

    private func text(_ key: Key) -> String {
        key.string >= 0 ? strings[key.string] : String(decoding: UnsafeBufferPointer(start: key.bytes, count: key.count), as: UTF8.self)
    }
}
