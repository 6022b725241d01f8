import FerryAPI
import FerryJSON
import Testing

@testable import FerryClient

/// The typed replies read the wire form of the API and write it back unchanged, and a reply
/// that breaks the contract names the field.
@Suite struct WireTypesTests {
    @Test func statusRoundTrips() throws {
        let status = try FerryStatus(json: Samples.status)
        #expect(status.node == "00112233445566aa")
        #expect(status.records == 3 && status.tombstones == 1 && status.outboxErrors == 1)
        #expect(status.lastSeq == 42 && status.attachmentBytes == 2048)
        #expect(status.spaces == [FerrySpace(name: "private", kind: "private", owner: nil, createdAt: 1_738_343_045_123)])
        #expect(status.transports.first?.lastError == "disk full")
        #expect(status.transports.first?.cursor == nil)
        #expect(status.lastError == nil)
        #expect(status.json == .object(Samples.status))
    }

    @Test func recordsCompareByFieldsNotByPayloadSpelling() throws {
        let built = try WireRecord(json: Samples.record())
        var read = built
        read.payloadText = #"{ "title" : "as typed" }"#
        #expect(read == built && read.hashValue == built.hashValue && Set([read, built]).count == 1)
        var other = built
        other.seq += 1
        #expect(other != built)
    }

    @Test func statusMissingFieldNamesIt() {
        var reply = Samples.status
        reply["lastSeq"] = "42"
        #expect(throws: WireError(field: "lastSeq", expected: "int")) { try FerryStatus(json: reply) }
        reply = Samples.status
        reply["spaces"] = [["name": "x"]]
        #expect(throws: WireError(field: "kind", expected: "string")) { try FerryStatus(json: reply) }
    }

    @Test func watchEvents() throws {
        #expect(try WatchEvent(json: ["cursor": 5]) == .started(cursor: 5))
        let change = try WatchEvent(json: ["cursor": 6, "record": Samples.record()])
        #expect(change.cursor == 6)
        #expect(change.record?.id == "A1")
        #expect(change.json == .object(["cursor": 6, "record": Samples.record()]))
        #expect(try WatchEvent(json: ["cursor": 5, "record": .null]) == .started(cursor: 5))
        #expect(throws: WireError(field: "cursor", expected: "int")) { try WatchEvent(json: ["record": Samples.record()]) }
    }

    @Test func listPage() throws {
        let page = try ListPage(json: ["records": [Samples.record(id: "A"), Samples.record(id: "B", deleted: true)], "next": "B"])
        #expect(page.records.map(\.id) == ["A", "B"])
        #expect(page.records[1].payload == nil)
        #expect(page.next == "B")
        #expect(try ListPage(json: ["records": []]).next == nil)
        #expect(throws: WireError(field: "records", expected: "array")) { try ListPage(json: [:]) }
    }

    @Test func fetchedAttachment() throws {
        let inline = try FetchedAttachment(json: ["sha256": "ab", "size": 3, "data": "Zm9v"])
        #expect(inline.content == .inline(Array("foo".utf8)))
        #expect(inline.json == ["sha256": "ab", "size": 3, "data": "Zm9v"])
        let file = try FetchedAttachment(json: ["sha256": "ab", "size": 3, "path": "/state/ab"])
        #expect(file.content == .file(path: "/state/ab"))
        #expect(throws: WireError(field: "data", expected: "base64")) {
            try FetchedAttachment(json: ["sha256": "ab", "size": 3, "data": "not base64!"])
        }
        #expect(throws: WireError.self) { try FetchedAttachment(json: ["sha256": "ab", "size": 3]) }
    }

    @Test func outboxEntryAndConflicts() throws {
        let entry = try OutboxEntry(json: [
            "space": "private", "entity": "note", "id": "A1", "hlc": .string(Samples.hlc), "seq": 7, "queuedAt": 1,
            "deliveries": [["transport": "nas", "error": "rejected: too big", "errorHlc": .string(Samples.hlc)],
                           ["transport": "relay", "acknowledged": .string(Samples.hlc)]],
        ])
        #expect(entry.hasError)
        #expect(entry.deliveries.map(\.transport) == ["nas", "relay"])
        #expect(try OutboxEntry(json: entry.json.objectValue!) == entry)

        let losing = try LosingVersion(json: ["record": Samples.record(), "origin": "remote:nas", "winner": .string(Samples.hlc), "lostAt": 9])
        #expect(losing.origin == "remote:nas")
        #expect(try LosingVersion(json: losing.json.objectValue!) == losing)
    }

    @Test func putItemOmitsWhatIsNotGiven() {
        #expect(PutItem(entity: "note", payload: ["a": 1]).json == ["entity": "note", "payload": ["a": 1]])
        #expect(PutItem(entity: "note", id: "X", payload: [:], attachments: []).json
            == ["entity": "note", "id": "X", "payload": [:], "attachments": []])
    }
}
