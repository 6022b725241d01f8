import Testing
@testable import FerryModel

@Suite struct ValidationTests {
    let stamp = Stamp(millis: 1_764_417_600_000, counter: 0, node: NodeID(1))

    func version(entity: String = "note", id: String = "A", deleted: Bool = false, payload: String? = "{}",
                 attachments: [String] = []) -> RecordVersion {
        var v = RecordVersion(entity: entity, id: id, hlc: stamp, deleted: deleted, payload: payload, attachments: attachments)
        v.payload = payload   // keep even a tombstone's payload, to test the check
        return v
    }

    @Test(arguments: ["note", "a", "stock.movement", "x-1_y.z", String(repeating: "a", count: 64)])
    func validEntities(_ entity: String) throws {
        try version(entity: entity).validate()
    }

    @Test(arguments: ["", "Note", "1note", "_note", "note!", "no te", "nöte", String(repeating: "a", count: 65), "note\n"])
    func invalidEntities(_ entity: String) {
        #expect(throws: FerryError.invalidEntity(entity)) { try version(entity: entity).validate() }
    }

    @Test func ids() throws {
        try version(id: "8C1F3D2E-5B7A-4A61-9F0E-2B4C6D8E0A13").validate()
        try version(id: String(repeating: "\u{E9}", count: 128)).validate()
        try version(id: String(repeating: "\u{1F600}", count: 128)).validate()
        // Code points, not grapheme clusters: 128 × e + combining acute is 256 code points.
        #expect(throws: FerryError.self) { try version(id: String(repeating: "e\u{301}", count: 128)).validate() }
        for bad in ["", String(repeating: "x", count: 129), "a\u{0}b", "tab\there"] {
            #expect(throws: FerryError.self) { try version(id: bad).validate() }
        }
    }

    @Test func payloadMustBeAnObject() {
        for bad in ["[]", "1", "\"x\"", "null", "true", "{", "{\"a\":}", "", "{} {}", "{\"a\":1,\"a\":2}"] {
            #expect(throws: FerryError.self, "\(bad)") { try version(payload: bad).validate() }
        }
        #expect(throws: FerryError.self) { try version(payload: nil).validate() }
    }

    @Test func payloadSizeLimit() throws {
        let limits = RecordLimits(maxPayloadBytes: 1 << 20)
        let big = "{\"a\":\"" + String(repeating: "x", count: (1 << 20) - 8) + "\"}"
        #expect(big.utf8.count == 1 << 20)
        try version(payload: big).validate(limits: limits)
        let tooBig = "{\"a\":\"" + String(repeating: "x", count: 1 << 20) + "\"}"
        #expect(throws: FerryError.payloadTooLarge(entity: "note", id: "A", size: tooBig.utf8.count, limit: 1 << 20)) {
            try version(payload: tooBig).validate(limits: limits)
        }
    }

    @Test func tombstones() throws {
        try version(deleted: true, payload: nil).validate()
        #expect(throws: FerryError.self) { try version(deleted: true, payload: "{}").validate() }
    }

    @Test func attachments() throws {
        let sha = String(repeating: "ab", count: 32)
        try version(attachments: [sha]).validate()
        for bad in [String(repeating: "AB", count: 32), "abc", String(repeating: "g", count: 64)] {
            #expect(throws: FerryError.self) { try version(attachments: [bad]).validate() }
        }
    }

    @Test func errorsSayWhatToDo() {
        #expect(FerryError.invalidEntity("Bad").description.contains("starting with a letter"))
        #expect(FerryError.payloadTooLarge(entity: "a", id: "b", size: 2, limit: 1).description.contains("attachment"))
    }
}

/// A record's key is its bytes, as the store's: ids equal only as Swift strings are two records.
@Suite struct RecordKeyTests {
    @Test func idsEqualOnlyAsStringsAreDifferentKeys() {
        let precomposed = RecordKey(entity: "doc", id: "caf\u{E9}"), decomposed = RecordKey(entity: "doc", id: "cafe\u{301}")
        #expect("caf\u{E9}" == "cafe\u{301}")   // Swift's String equality
        #expect(precomposed != decomposed)
        #expect(Set([precomposed, decomposed, RecordKey(entity: "doc", id: "caf\u{E9}")]).count == 2)
        #expect([precomposed: 1, decomposed: 2][RecordKey(entity: "doc", id: "cafe\u{301}")] == 2)
    }

    /// Ordered by entity, then id, each by its bytes (SQLite's BINARY collation); parts do not
    /// run into each other.
    @Test func theOrderIsTheBytes() {
        let keys = [RecordKey(entity: "a", id: "é"), RecordKey(entity: "a", id: "e\u{301}"), RecordKey(entity: "a", id: "Z"),
                    RecordKey(entity: "a", id: ""), RecordKey(entity: "ab", id: "c"), RecordKey(entity: "a", id: "bc")]
        let sorted = keys.sorted()
        // The bytes of entity, NUL (which neither holds), id: one string in the same order.
        #expect(sorted.map { Array($0.entity.utf8) + [0] + Array($0.id.utf8) }
            == keys.map { Array($0.entity.utf8) + [0] + Array($0.id.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(RecordKey(entity: "ab", id: "c") != RecordKey(entity: "a", id: "bc"))
        #expect(!(RecordKey(entity: "a", id: "x") < RecordKey(entity: "a", id: "x")))
    }

    @Test func clippedStringsSayTheyWereCut() {
        #expect("abc".clipped(to: 3) == "abc")
        #expect("abcd".clipped(to: 3) == "abc…")
        #expect("".clipped(to: 0) == "")
        #expect("é🙂x".clipped(to: 2) == "é🙂…")
    }
}
