import FerryTestSupport
import Testing
@testable import FerryModel
@testable import FerryStore

/// Bad input gets a typed error and changes nothing.
@Suite struct BadInputTests {
    func assertUnchanged(_ store: Store, _ before: String, _ seq: Int64) throws {
        #expect(try store.digest() == before)
        #expect(store.lastSeq == seq)
        #expect(try store.outbox().count == 1)
    }

    @Test func localWritesRejectBadInputAndWriteNothing() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.put(entity: "note", id: "ok", payload: "{}")
        let before = try store.digest(), seq = store.lastSeq
        let cases: [(PutRequest, String)] = [
            (PutRequest(entity: "Note", id: "1", payload: "{}"), "InvalidEntity"),
            (PutRequest(entity: "", id: "1", payload: "{}"), "InvalidEntity"),
            (PutRequest(entity: "9lives", id: "1", payload: "{}"), "InvalidEntity"),
            (PutRequest(entity: "note", id: "", payload: "{}"), "InvalidID"),
            (PutRequest(entity: "note", id: String(repeating: "x", count: 129), payload: "{}"), "InvalidID"),
            (PutRequest(entity: "note", id: "1", payload: "[1,2]"), "InvalidPayload"),
            (PutRequest(entity: "note", id: "1", payload: "42"), "InvalidPayload"),
            (PutRequest(entity: "note", id: "1", payload: "\"text\""), "InvalidPayload"),
            (PutRequest(entity: "note", id: "1", payload: "{\"a\":"), "InvalidPayload"),
            (PutRequest(entity: "note", id: "1", payload: "not json"), "InvalidPayload"),
            (PutRequest(entity: "note", id: "1", payload: String(repeating: "[", count: 10_000)), "InvalidPayload"),
            (PutRequest(entity: "note", id: "1", payload: "{\"a\":\"" + String(repeating: "x", count: 1 << 20) + "\"}"), "PayloadTooLarge"),
            (PutRequest(entity: "note", id: "1", payload: "{}", attachments: ["nothex"]), "InvalidAttachmentReference"),
        ]
        for (request, code) in cases {
            let error = #expect(throws: FerryError.self) { try store.putMany([request]) }
            #expect(error?.code == code, "\(request.entity)/\(request.id ?? "-"): \(String(describing: error))")
            try assertUnchanged(store, before, seq)
        }
        // One bad record spoils the whole batch: nothing of it is written.
        let batch = [PutRequest(entity: "note", id: "good", payload: "{}"), PutRequest(entity: "note", id: "bad", payload: "[]")]
        #expect(throws: FerryError.self) { try store.putMany(batch) }
        try assertUnchanged(store, before, seq)
        #expect(throws: FerryError.batchTooLarge(count: 10_001, limit: 10_000)) {
            try store.putMany(Array(repeating: PutRequest(entity: "note", payload: "{}"), count: 10_001))
        }
        #expect(throws: FerryError.self) {
            try store.putMany([PutRequest(entity: "note", id: "dup", payload: "{}"), PutRequest(entity: "note", id: "dup", payload: "{}")])
        }
        try assertUnchanged(store, before, seq)
    }

    /// A refused record written without an id is not named by an id the store made up and
    /// never stored.
    @Test func aRefusedRecordWithoutAnIDIsNotNamedByAMadeUpOne() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.put(entity: "note", id: "ok", payload: "{}")
        let before = try store.digest(), seq = store.lastSeq
        let cases: [(PutRequest, FerryError)] = [
            (PutRequest(entity: "note", payload: "[1]"), .invalidPayload(entity: "note", id: "", reason: "a payload must be a JSON object")),
            (PutRequest(entity: "note", payload: "{\"a\":\"" + String(repeating: "x", count: 1 << 20) + "\"}"),
             .payloadTooLarge(entity: "note", id: "", size: (1 << 20) + 8, limit: store.configuration.limits.maxPayloadBytes)),
            (PutRequest(entity: "note", payload: "{}", attachments: ["nothex"]),
             .invalidAttachmentReference(entity: "note", id: "", reference: "nothex")),
        ]
        for (request, expected) in cases {
            let error = #expect(throws: FerryError.self) { try store.putMany([request]) }
            #expect(error?.code == expected.code)
            switch (error, expected) {
            case (.invalidPayload(let e, let id, _)?, .invalidPayload(let e2, let id2, _)): #expect(e == e2 && id == id2)
            default: #expect(error == expected)
            }
            #expect(error?.description.contains("the new note record (written without an id)") == true, "\(String(describing: error))")
            try assertUnchanged(store, before, seq)
        }
        // With an id, the id names it.
        let named = #expect(throws: FerryError.self) { try store.putMany([PutRequest(entity: "note", id: "n1", payload: "[1]")]) }
        #expect(named?.description.contains("record note/n1") == true)
    }

    /// A refused record of a write of several says which it is (from 0), whether the record
    /// check or the write found it; a write of one is not marked.
    @Test func aRefusedRecordOfABatchSaysWhichItIs() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let good = PutRequest(entity: "note", payload: "{}")
        let badPayload = #expect(throws: FerryError.self) { try store.putMany([good, good, PutRequest(entity: "note", payload: "[1]")]) }
        guard case .inBatch(2, .invalidPayload(let entity, let id, _))? = badPayload else { Issue.record("\(String(describing: badPayload))"); return }
        #expect(entity == "note" && id == "" && badPayload?.code == "InvalidPayload")
        #expect(badPayload?.description.hasPrefix("records[2]: invalid payload for the new note record") == true, "\(String(describing: badPayload))")
        let missing = String(repeating: "ab", count: 32)
        let unattached = #expect(throws: FerryError.self) {
            try store.putMany([PutRequest(entity: "note", id: "x", payload: "{}"), PutRequest(entity: "note", id: "y", payload: "{}", attachments: [missing])])
        }
        #expect(unattached == .inBatch(index: 1, .attachmentNotStored(sha256: missing)), "\(String(describing: unattached))")
        let alone = #expect(throws: FerryError.self) { try store.putMany([PutRequest(entity: "note", payload: "[1]")]) }
        #expect(alone?.code == "InvalidPayload")
        if case .inBatch? = alone { Issue.record("a write of one record is not marked: \(String(describing: alone))") }
        #expect(try store.list(entity: "note").records.isEmpty)
    }

    @Test func remoteVersionsWithMalformedFieldsAreRejectedOneByOne() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.put(entity: "note", id: "ok", payload: "{}")
        let good = RecordVersion(entity: "note", id: "r", hlc: Stamp(millis: 5, counter: 0, node: NodeID(3)), deleted: false, payload: "{}")
        var badEntity = good; badEntity.entity = "Bad Entity"
        var badPayload = good; badPayload.id = "p"; badPayload.payload = "[]"
        var tombWithPayload = good; tombWithPayload.id = "t"; tombWithPayload.deleted = true; tombWithPayload.payload = "{}"
        var missingPayload = good; missingPayload.id = "m"; missingPayload.payload = nil
        let results = try store.applyRemote([badEntity, good, badPayload, tombWithPayload, missingPayload], origin: .remote(transport: "t"))
        guard case .rejected(.invalidEntity) = results[0] else { Issue.record("\(results[0])"); return }
        guard case .applied = results[1] else { Issue.record("\(results[1])"); return }
        for r in results[2...] {
            guard case .rejected(.invalidPayload) = r else { Issue.record("\(r)"); return }
        }
        #expect(try store.stats().records == 2)
    }

    @Test func malformedStampsAreRejectedWhenParsed() {
        for text in ["", "yesterday", "2025-11-29T12:00:00Z-0000-0000000000000001", "2025-11-29T12:00:00.000Z-0000-000000000000000G"] {
            #expect(throws: FerryError.self) { try Stamp(parsing: text) }
        }
    }

    @Test func unknownSpacesAndTransportNames() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        #expect(throws: FerryError.spaceNotFound("ghost")) { try store.put(space: "ghost", entity: "n", payload: "{}") }
        #expect(throws: FerryError.invalidTransportName("Bad/Name")) { try store.addTransport(name: "Bad/Name", kind: "folder") }
    }
}
