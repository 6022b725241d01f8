import FerryCrypto
import FerryModel
import FerryTestSupport
import Testing
@testable import FerrySync

@Suite struct EnvelopeSealerTests {
    static let device = NodeID(0xd00d)
    static let sealer = EnvelopeSealer(keys: Fixtures.keys, device: device)

    @Test func roundTripsAndFillsTheHeader() throws {
        let envelope = Self.sealer.seal(Fixtures.version)
        let h = envelope.header
        #expect(h.version == 1)
        #expect(h.owner == Fixtures.keys.owner)
        #expect(h.device == Self.device)
        #expect(h.stamp == Fixtures.stamp)
        #expect(h.deleted == false)
        #expect(h.stream == Fixtures.keys.streamID(entity: "note", id: "n1"))
        #expect(h.event == Fixtures.keys.eventID(stream: h.stream, stamp: Fixtures.stamp))
        #expect(envelope.body.count > 24 + 16)
        #expect(Self.sealer.owner == Fixtures.keys.owner)
        #expect(try Self.sealer.open(envelope) == Fixtures.version)
        // Through the binary form too.
        #expect(try Self.sealer.open(Envelope.decode(envelope.encoded)) == Fixtures.version)
    }

    @Test func payloadTextIsKeptExactly() throws {
        let payloads = [#"{"b":1,"a":2}"#, #"{ "x" : [ 1.0, 1e3, "\u00e9\n" ] }"#, "{}", #"{"p":null,"a":[],"e":"x"}"#]
        for payload in payloads {
            let v = RecordVersion(entity: "t", id: "\"odd\" id ✓", hlc: Fixtures.stamp, deleted: false, payload: payload)
            #expect(try Self.sealer.open(Self.sealer.seal(v)).payload == payload)
        }
    }

    @Test func tombstonesRoundTrip() throws {
        let v = RecordVersion(entity: "note", id: "n1", hlc: Fixtures.stamp, deleted: true, payload: nil)
        let envelope = Self.sealer.seal(v)
        #expect(envelope.header.deleted)
        #expect(try Self.sealer.open(envelope) == v)
    }

    @Test func sealingTwiceGivesTheSameEventButAFreshNonce() {
        let a = Self.sealer.seal(Fixtures.version), b = Self.sealer.seal(Fixtures.version)
        #expect(a.header == b.header)
        #expect(a.body != b.body)
        let other = EnvelopeSealer(keys: Fixtures.keys, device: NodeID(7)).seal(Fixtures.version)
        #expect(other.header.event == a.header.event)
    }

    @Test func everyHeaderByteFlipFailsToOpen() {
        let bytes = Self.sealer.seal(Fixtures.version).encoded
        for i in 0..<EnvelopeHeader.encodedSize {
            for bit in [0, 3, 7] {
                var tampered = bytes
                tampered[i] ^= UInt8(1 << bit)
                #expect(throws: EnvelopeError.self) { try Self.sealer.open(Envelope.decode(tampered)) }
            }
        }
    }

    @Test func bodyByteFlipsFailToOpen() {
        let envelope = Self.sealer.seal(Fixtures.version)
        var rng = SplitMix64(seed: 0xfe77)
        var positions = Array(0..<min(envelope.body.count, 48)) + Array(max(0, envelope.body.count - 24)..<envelope.body.count)
        for _ in 0..<200 { positions.append(Int.random(in: 0..<envelope.body.count, using: &rng)) }
        for i in positions {
            var tampered = envelope
            tampered.body[i] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
            #expect(throws: EnvelopeError.authenticationFailed) { try Self.sealer.open(tampered) }
        }
        for cut in [0, 1, 23, 24, 39, 40, envelope.body.count - 1] {
            var truncated = envelope
            truncated.body = Array(envelope.body.prefix(cut))
            #expect(throws: EnvelopeError.authenticationFailed) { try Self.sealer.open(truncated) }
        }
    }

    @Test func randomBodiesNeverCrash() {
        var rng = SplitMix64(seed: 42)
        let header = Self.sealer.seal(Fixtures.version).header
        for _ in 0..<300 {
            let count = Int.random(in: 0..<200, using: &rng)
            let body = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(throws: EnvelopeError.self) { try Self.sealer.open(Envelope(header: header, body: body)) }
        }
    }

    @Test func anotherOwnersKeyCannotOpen() {
        let envelope = Self.sealer.seal(Fixtures.version)
        let stranger = EnvelopeSealer(keys: OwnerKeys.generate(), device: Self.device)
        #expect(throws: EnvelopeError.wrongOwner(expected: stranger.owner, found: Fixtures.keys.owner)) { try stranger.open(envelope) }
        // Even with the header claiming the stranger's owner id, the body does not authenticate.
        var relabeled = envelope
        relabeled.header.owner = stranger.owner
        #expect(throws: EnvelopeError.authenticationFailed) { try stranger.open(relabeled) }
    }

    /// Seals an arbitrary body plaintext the way `seal` would, for a given header.
    func sealRaw(_ text: String, header: EnvelopeHeader) -> Envelope {
        Envelope(header: header, body: AEAD.seal(Array(text.utf8), associatedData: header.encoded, key: Fixtures.keys.dataKey))
    }

    @Test func aBodyForAnotherStreamIsRejected() {
        let header = Self.sealer.seal(Fixtures.version).header
        let envelope = sealRaw(#"{"e":"note","i":"n2","p":{},"a":[]}"#, header: header)
        #expect(throws: EnvelopeError.invalidBody("the record (entity, id) inside does not match the header's stream id")) {
            try Self.sealer.open(envelope)
        }
    }

    @Test func malformedBodiesAreInvalid() throws {
        let header = Self.sealer.seal(Fixtures.version).header
        let bad = [
            "", "[]", "null", #"{"e":"note","i":"n1","p":{}}"#, #"{"e":"note","i":"n1","p":{},"a":[],"x":1}"#,
            #"{"e":"note","i":"n1","p":[],"a":[]}"#, #"{"e":"note","i":"n1","p":{},"a":[1]}"#,
            #"{"e":1,"i":"n1","p":{},"a":[]}"#, #"{"e":"note","i":"n1","p":{},"a":["nothex"]}"#,
            #"{"e":"note","i":"n1","p":null,"a":[]}"#,
            #"{"e":"note","i":"n1","p":{},"a":[]"#, #"{"e":"note","i":"n1","p":{},"a":[],"a":[]}"#,
        ]
        for text in bad {
            #expect(throws: EnvelopeError.self, "\(text)") { try Self.sealer.open(sealRaw(text, header: header)) }
        }
        // A tombstone header with a payload in its body.
        var tombstone = header
        tombstone.deleted = true
        #expect(throws: EnvelopeError.self) { try Self.sealer.open(sealRaw(#"{"e":"note","i":"n1","p":{},"a":[]}"#, header: tombstone)) }
        // An equivalent body in another layout opens, the payload re-serialized canonically.
        let reordered = sealRaw(#"{"a":[],"p":{"b":1,"a":2},"i":"n1","e":"note"}"#, header: header)
        #expect(try Self.sealer.open(reordered).payload == #"{"a":2,"b":1}"#)
    }

    /// The quick reading of bodies in `seal`'s layout accepts nothing the general reading does
    /// not, and reads what it accepts the same way: checked on bodies as sealed, on near misses
    /// (escapes, duplicate keys, numbers out of range, odd references, too deep) and on
    /// bodies with bytes dropped, changed or repeated at every position.
    @Test func theQuickReadingOfSealedBodiesAgreesWithTheGeneralOne() {
        let sha = String(repeating: "0123456789abcdef", count: 4)
        let bodies = [
            #"{"e":"note","i":"n1","p":{"title":"x","n":[1,2.5e3,{"d":null}]},"a":[]}"#,
            #"{"e":"note","i":"n1","p":null,"a":[]}"#,
            #"{"e":"note","i":"n1","p":{},"a":["\#(sha)"]}"#,
            #"{"e":"note","i":"n1","p":{"a":[]},"a":["\#(sha)","\#(sha)"]}"#,
            #"{"e":"note","i":"n1","p":{"a":1,"a":2},"a":[]}"#,
            #"{"e":"note","i":"n1","p":{"n":1e400},"a":[]}"#,
            #"{"e":"no\u0074e","i":"n\"1","p":{},"a":[]}"#,
            #"{"e":"note","i":"n1","p":{},"a":["\#(sha.uppercased())"]}"#,
            #"{"e":"note","i":"n1","p":{"x":{"y":{"z":{}}}},"a":[]}"#,
            #"{"e":"note","i":"n1","p":{},"a":[]} "#,
            #"{"e":"note","i":"n1","p":{} ,"a":[]}"#,
            #"{"e":"note","i":"n1","p":{},"a":[],"a":[]}"#,
            #"{"e":"note","i":"n1","p":{},"a":[]},"a":[]}"#,
            #"{"e":"note","i":"n1","p":{"k":"],\"a\":["},"a":[]}"#,
        ]
        var rng = SplitMix64(seed: 7)
        var checked = 0, quick = 0
        for text in bodies {
            let bytes = Array(text.utf8)
            var variants = [bytes]
            for i in 0..<bytes.count {
                var dropped = bytes; dropped.remove(at: i); variants.append(dropped)
                var changed = bytes; changed[i] = UInt8.random(in: 0...255, using: &rng); variants.append(changed)
                var repeated = bytes; repeated.insert(bytes[i], at: i); variants.append(repeated)
            }
            for variant in variants {
                for depth in [3, 64] {
                    checked += 1
                    guard let fast = EnvelopeSealer.parseSealedLayout(variant, maxDepth: depth) else { continue }
                    quick += 1
                    let general = try? EnvelopeSealer.parseAnyLayout(variant, maxDepth: depth)
                    #expect(general == fast, "\(String(decoding: variant, as: UTF8.self)) at depth \(depth)")
                }
            }
        }
        // The quick reading took the bodies as sealed, not only the odd ones.
        #expect(quick > 100 && quick < checked)
        #expect(EnvelopeSealer.parseSealedLayout(Array(bodies[0].utf8), maxDepth: 64)?.payload
                == #"{"title":"x","n":[1,2.5e3,{"d":null}]}"#)
        #expect(EnvelopeSealer.parseSealedLayout(Array(bodies[3].utf8), maxDepth: 64)?.attachments == [sha, sha])
        // Too deep for the quick reading is too deep for the general one as well.
        #expect(EnvelopeSealer.parseSealedLayout(Array(bodies[8].utf8), maxDepth: 3) == nil)
        #expect(throws: EnvelopeError.self) { try EnvelopeSealer.parseAnyLayout(Array(bodies[8].utf8), maxDepth: 3) }
    }

    @Test func limitsApply() {
        let deep = String(repeating: #"{"a":"#, count: 10) + "1" + String(repeating: "}", count: 10)
        let v = RecordVersion(entity: "note", id: "n1", hlc: Fixtures.stamp, deleted: false, payload: deep)
        let envelope = Self.sealer.seal(v)
        #expect(throws: EnvelopeError.self) { try Self.sealer.open(envelope, limits: RecordLimits(maxPayloadDepth: 5)) }
        #expect(throws: EnvelopeError.self) { try Self.sealer.open(envelope, limits: RecordLimits(maxPayloadBytes: 20)) }
        #expect((try? Self.sealer.open(envelope)) == v)
        let invalid = RecordVersion(entity: "Bad Entity", id: "n1", hlc: Fixtures.stamp, deleted: false, payload: "{}")
        #expect(throws: EnvelopeError.self) { try Self.sealer.open(Self.sealer.seal(invalid)) }
    }
}
