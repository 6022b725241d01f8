/// A record's identity within a space: its entity and id, compared, hashed and ordered by their
/// UTF-8 bytes, as the store compares them. Two ids equal as Swift strings but not in bytes
/// ("é" precomposed, and "e" with a combining accent) are two records, so a table keyed by
/// this never takes one for the other (as `String`'s equality, canonical equivalence, would).
public struct RecordKey: Sendable, Hashable, Comparable {
    public var entity: String
    public var id: String

    public init(entity: String, id: String) {
        self.entity = entity
        self.id = id
    }

    public static func == (a: RecordKey, b: RecordKey) -> Bool {
        compareBytes(a.id, b.id) == 0 && compareBytes(a.entity, b.entity) == 0
    }

    public func hash(into hasher: inout Hasher) {
        Self.combine(entity, into: &hasher)
        Self.combine(id, into: &hasher)
    }

    /// By entity, then id, each by its bytes (SQLite's BINARY order).
    public static func < (a: RecordKey, b: RecordKey) -> Bool {
        let entity = compareBytes(a.entity, b.entity)
        return entity != 0 ? entity < 0 : compareBytes(a.id, b.id) < 0
    }

    /// The bytes, then 0xFF, which never occurs in UTF-8, so each part ends unambiguously.
    private static func combine(_ text: String, into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(UInt8(0xFF))
    }

    /// Negative, zero or positive as `a`'s bytes sort before, with or after `b`'s.
    private static func compareBytes(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for i in 0..<min(x.count, y.count) where x[i] != y[i] { return Int(x[i]) - Int(y[i]) }
                return x.count - y.count
            }
        }
    }
}
