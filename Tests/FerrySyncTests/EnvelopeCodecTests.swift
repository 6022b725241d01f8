import FerryModel
import Testing
@testable import FerrySync

@Suite struct EnvelopeCodecTests {
    static let header = EnvelopeHeader(
        owner: ID128(high: 0x0102030405060708, low: 0x090a0b0c0d0e0f10), device: NodeID(0xabcdef0123456789),
        event: ID128(high: 1, low: 2), stamp: Stamp(millis: 1_790_000_000_123, counter: 7, node: NodeID(0x42)),
        deleted: true, stream: ID128(high: 3, low: 4))

    @Test func headerRoundTrips() throws {
        let bytes = Self.header.encoded
        #expect(bytes.count == EnvelopeHeader.encodedSize)
        #expect(try EnvelopeHeader.decode(bytes[...]) == Self.header)
    }

    @Test func envelopeRoundTripsAndRejectsEverySplit() throws {
        let envelope = Envelope(header: Self.header, body: Array(0..<100))
        let bytes = envelope.encoded
        #expect(try Envelope.decode(bytes) == envelope)
        for cut in 0..<bytes.count {
            #expect(throws: EnvelopeError.self) { try Envelope.decode(bytes[..<cut]) }
        }
        #expect(throws: EnvelopeError.self) { try Envelope.decode(bytes + [0]) }
    }

    @Test func rejectsUnknownVersionAndFlags() {
        var bytes = Self.header.encoded
        bytes[0] = 2
        #expect(throws: EnvelopeError.unsupportedVersion(2)) { try EnvelopeHeader.decode(bytes[...]) }
        bytes[0] = 1
        bytes[1] = 4
        #expect(throws: EnvelopeError.self) { try EnvelopeHeader.decode(bytes[...]) }
    }

    @Test func idHexRoundTrips() {
        let id = ID128(high: 0xdeadbeef00000001, low: 0xffffffffffffffff)
        #expect(ID128(hex: id.description) == id)
        #expect(ID128(hex: "xyz") == nil)
    }
}
