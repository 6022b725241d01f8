import FerryCrypto
import FerryModel
import Testing
@testable import FerrySync

@Suite struct OwnerKeysTests {
    // The values in docs/protocol.md "Envelopes and keys", test vectors.
    @Test func testVectors() {
        let keys = Fixtures.keys
        #expect(keys.owner.description == "f49a0f7025cd460650a323fb6f9ffb71")
        #expect(keys.streamID(entity: "note", id: "n1").description == "5bac2a3307fcdf2c62fc5205e693734f")
        #expect(keys.eventID(stream: keys.streamID(entity: "note", id: "n1"), stamp: Fixtures.stamp).description == "174820d936a4ff8eb046886820379caa")
        #expect(keys.blobKey(sha256: String(repeating: "a", count: 64)) == "3928baaed2df9b0d84f64e7621f6a32fa45614f2c2b48e65ab5edd353cf6245e")
    }

    /// Ids are the first 16 bytes of a 32-byte keyed hash, taken without an output array:
    /// the same bytes as the whole hash's prefix, for messages of every block split.
    @Test(arguments: [0, 1, 35, 127, 128, 129, 300])
    func idsAreThePrefixOfTheWholeHash(length: Int) {
        let key = SecretKey(bytes: (0..<32).map { UInt8($0 * 7 & 0xFF) })
        let message = (0..<length).map { UInt8(($0 * 31 + 5) & 0xFF) }
        let (high, low) = KeyedHash.prefix128(of: message, key: key)
        #expect(ID128(high: high, low: low) == ID128(bytes: KeyedHash.hash(message, key: key, length: 32)))
    }

    /// A stream id covers the UTF-8 of the entity and id, whatever they hold.
    @Test func streamIDsOfNonASCIIIDsDiffer() {
        let keys = Fixtures.keys
        #expect(keys.streamID(entity: "note", id: "é") != keys.streamID(entity: "note", id: "e\u{301}"))
        #expect(keys.streamID(entity: "note", id: "日本") == keys.streamID(entity: "note", id: "日本"))
    }

    @Test func restoringTheRootKeyRestoresEverything() throws {
        let a = OwnerKeys.generate()
        let b = try OwnerKeys(rootKey: a.rootKey)
        #expect(a.owner == b.owner)
        #expect(a.streamID(entity: "note", id: "x") == b.streamID(entity: "note", id: "x"))
        #expect(a.eventID(stream: a.streamID(entity: "note", id: "x"), stamp: Fixtures.stamp)
            == b.eventID(stream: b.streamID(entity: "note", id: "x"), stamp: Fixtures.stamp))
        #expect(a.blobKey(sha256: String(repeating: "b", count: 64)) == b.blobKey(sha256: String(repeating: "b", count: 64)))
    }

    @Test func differentOwnersGiveDifferentIDs() {
        let a = OwnerKeys.generate(), b = OwnerKeys.generate()
        #expect(a.owner != b.owner)
        #expect(a.rootKey != b.rootKey)
        #expect(a.streamID(entity: "note", id: "x") != b.streamID(entity: "note", id: "x"))
        let sha = String(repeating: "c", count: 64)
        #expect(a.blobKey(sha256: sha) != b.blobKey(sha256: sha))
    }

    @Test func streamIDsAreUnambiguous() {
        let keys = Fixtures.keys
        // Splitting the same characters differently must not collide.
        #expect(keys.streamID(entity: "ab", id: "c") != keys.streamID(entity: "a", id: "bc"))
        #expect(keys.streamID(entity: "note", id: "n1") != keys.streamID(entity: "note", id: "n2"))
        let stream = keys.streamID(entity: "note", id: "n1")
        #expect(keys.eventID(stream: stream, stamp: Fixtures.stamp) != keys.eventID(stream: stream, stamp: Fixtures.stamp.successor(node: NodeID(1))))
        // The event id of a stream's version is never the stream id of some record.
        #expect(keys.eventID(stream: stream, stamp: Fixtures.stamp) != stream)
    }

    @Test func blobKeysAreLowercaseHexAndIgnoreCase() {
        let keys = Fixtures.keys
        let key = keys.blobKey(sha256: String(repeating: "ab", count: 32))
        #expect(key.count == 64)
        #expect(key.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(key == keys.blobKey(sha256: String(repeating: "AB", count: 32)))
    }

    @Test func wrongLengthIsATypedError() {
        #expect(throws: OwnerKeyError.wrongLength(actual: 31)) { try OwnerKeys(rootKey: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: OwnerKeyError.wrongLength(actual: 0)) { try OwnerKeys(rootKey: []) }
        #expect(OwnerKeyError.wrongLength(actual: 3).description.contains("32 bytes"))
    }

    @Test func descriptionsShowNoKeyMaterial() {
        let keys = Fixtures.keys
        let rootHex = keys.rootKey.map { String($0, radix: 16) }.joined()
        for text in [String(describing: keys), String(reflecting: keys), "\(keys)", { var s = ""; dump(keys, to: &s); return s }()] {
            #expect(text.contains(keys.owner.description))
            #expect(!text.contains(rootHex))
            #expect(!text.contains("rootKey"))
            #expect(!text.contains("Key:"))
        }
    }
}
