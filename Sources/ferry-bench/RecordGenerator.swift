/// Reproducible benchmark records: every id and payload is a pure function of (seed, stream,
/// index), so a phase can regenerate any record instead of keeping all N in memory.
struct RecordGenerator: Sendable {
    /// Independent id spaces, so that records of different phases never collide.
    enum Stream: UInt64 {
        /// The records written by `putMany` (entity "item" in the local store).
        case items = 1
        /// The records written by single `put` calls.
        case singles = 2
        /// The versions that "another device" made, applied with `applyRemote`.
        case remote = 3
    }

    /// How ids are made.
    enum IDKind: String {
        /// UUID v4: random, so every insert lands on a random leaf of the key index.
        case uuid4
        /// UUID v7-like: a 48-bit time prefix that grows with the index, then random bits, so
        /// ids of one stream are made in increasing order (as one device would make them).
        case uuid7
    }

    let seed: UInt64
    var kind: IDKind = .uuid4

    /// An upper-case UUID text, unique per (stream, index) for index < 2^40.
    func id(_ stream: Stream, _ index: Int) -> String {
        let key = (stream.rawValue << 40) | UInt64(index)
        var high = SplitMix64.mix(seed ^ key)
        let low = SplitMix64.mix(high ^ 0xD1B5_4A32_D192_ED03)
        if kind == .uuid7 {
            // 2025-06-15T00:00:00Z plus one millisecond per index, one block of time per stream.
            let millis = 1_749_945_600_000 + (stream.rawValue << 36) + UInt64(index)
            high = (millis << 16) | (high & 0x0FFF) | 0x7000
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * i))
            bytes[8 + i] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * i))
        }
        if kind == .uuid4 { bytes[6] = (bytes[6] & 0x0F) | 0x40 }  // version 4 (v7 set above)
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A to-do-like JSON object of about 150 bytes whose every field varies with the index.
    func payload(_ stream: Stream, _ index: Int) -> String {
        var random = SplitMix64(seed: SplitMix64.mix(seed ^ 0x5851_F42D_4C95_7F2D ^ (stream.rawValue << 40) ^ UInt64(index)))
        func pick(_ words: [String]) -> String { words[Int(random.next() % UInt64(words.count))] }
        func two(_ n: UInt64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let title = "\(pick(RecordGenerator.verbs)) \(pick(RecordGenerator.nouns)) \(random.next() % 1000)"
        let done = random.next() & 1 == 0 ? "false" : "true"
        let priority = random.next() % 5 + 1
        let due = "2025-\(two(random.next() % 12 + 1))-\(two(random.next() % 28 + 1))"
        let estimate = random.next() % 480
        let owner = String(random.next() & 0xFF_FFFF, radix: 16)
        return #"{"title":"\#(title)","done":\#(done),"priority":\#(priority),"due":"\#(due)","#
            + #""estimate_min":\#(estimate),"tags":["\#(pick(RecordGenerator.tags))","\#(pick(RecordGenerator.tags))"],"#
            + #""owner":"user-\#(owner)","n":\#(index)}"#
    }

    private static let verbs = ["Buy", "Call", "Fix", "Plan", "Review", "Send", "Book", "Clean", "Write", "Return"]
    private static let nouns = ["groceries", "the plumber", "bike brakes", "team offsite", "pull request",
                                "invoice", "dentist", "garage", "quarterly report", "library books"]
    private static let tags = ["home", "work", "errand", "urgent", "later", "family", "finance", "health"]
}
