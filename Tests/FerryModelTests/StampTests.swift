import Testing
@testable import FerryModel

@Suite struct StampTests {
    let node = NodeID(0x0123_4567_89ab_cdef)

    @Test func textRoundTrips() throws {
        let stamp = Stamp(millis: 1_764_417_600_123, counter: 0x2a, node: node)
        #expect(stamp.text == "2025-11-29T12:00:00.123Z-002a-0123456789abcdef")
        #expect(try Stamp(parsing: stamp.text) == stamp)
    }

    @Test func epochAndExtremes() throws {
        #expect(Stamp(millis: 0, counter: 0, node: NodeID(0)).text == "1970-01-01T00:00:00.000Z-0000-0000000000000000")
        let max = Stamp(millis: Stamp.millisRange.upperBound, counter: .max, node: NodeID(.max))
        #expect(max.text == "9999-12-31T23:59:59.999Z-ffff-ffffffffffffffff")
        #expect(try Stamp(parsing: max.text) == max)
        let min = Stamp(millis: Stamp.millisRange.lowerBound, counter: 0, node: NodeID(0))
        #expect(min.text == "0001-01-01T00:00:00.000Z-0000-0000000000000000")
        #expect(try Stamp(parsing: "2024-02-29T23:59:59.999Z-0000-0000000000000001").millis == 1_709_251_199_999)
    }

    /// The bytes `appendText` adds are the text form, after whatever `out` held, and parse back,
    /// all over the range.
    @Test func appendedTextIsTheTextForm() throws {
        var generator = SystemRandomNumberGenerator()
        var out: [UInt8] = Array("x".utf8)
        for _ in 0..<3000 {
            let stamp = Stamp(millis: Int64.random(in: Stamp.millisRange, using: &generator), counter: UInt16.random(in: 0...UInt16.max),
                              node: NodeID(UInt64.random(in: 0...UInt64.max)))
            let before = out.count
            stamp.appendText(to: &out)
            let appended = String(decoding: out[before...], as: UTF8.self)
            #expect(appended == stamp.text)
            #expect(try Stamp(parsing: appended) == stamp)
        }
        #expect(out.first == UInt8(ascii: "x") && out.count == 1 + 3000 * Stamp.textLength)
    }

    @Test func byteOrderIsStampOrder() {
        var generator = SystemRandomNumberGenerator()
        var stamps: [Stamp] = []
        for _ in 0..<2000 {
            stamps.append(Stamp(millis: Int64.random(in: 0...4_102_444_800_000, using: &generator) / [1, 1000, 86_400_000].randomElement()!,
                                counter: UInt16.random(in: 0...3), node: NodeID(UInt64.random(in: 0...3))))
        }
        for _ in 0..<5000 {
            let a = stamps.randomElement()!, b = stamps.randomElement()!
            #expect((a < b) == (Array(a.text.utf8).lexicographicallyPrecedes(Array(b.text.utf8))), "\(a) vs \(b)")
            #expect((a == b) == (a.text == b.text))
        }
    }

    @Test(arguments: [
        "", "2025-11-29T12:00:00.123Z-002a-0123456789abcde",          // short
        "2025-11-29T12:00:00.123Z-002a-0123456789abcdeff",           // long
        "2025-11-29T12:00:00.123Z-002A-0123456789abcdef",            // upper-case hex
        "2025-11-29T12:00:00.123Z-002a-0123456789ABCDEF",
        "2025-13-29T12:00:00.123Z-002a-0123456789abcdef",            // month 13
        "2025-02-29T12:00:00.123Z-002a-0123456789abcdef",            // not a leap year
        "2025-11-31T12:00:00.123Z-002a-0123456789abcdef",            // November 31
        "2025-11-29T24:00:00.123Z-002a-0123456789abcdef",            // hour 24
        "2025-11-29T12:60:00.123Z-002a-0123456789abcdef",
        "2025-11-29T12:00:60.123Z-002a-0123456789abcdef",            // no leap seconds
        "2025-11-29 12:00:00.123Z-002a-0123456789abcdef",            // space for T
        "2025-11-29T12:00:00.123+-002a-0123456789abcdef",
        "0000-11-29T12:00:00.123Z-002a-0123456789abcdef",            // year 0
        "2025-11-29T12:00:00.12aZ-002a-0123456789abcdef",
        "2025-11-29T12:00:00.123Z_002a-0123456789abcdef",
        "2025-11-29T12:00:00.123Z-002g-0123456789abcdef",
        "２０２５-11-29T12:00:00.123Z-002a-0123456789abcdef",            // non-ASCII digits
    ])
    func rejectsMalformed(_ text: String) {
        #expect(Stamp.parse(text) == nil)
        #expect(throws: FerryError.self) { try Stamp(parsing: text) }
    }

    @Test func successorHandlesCounterOverflow() {
        let s = Stamp(millis: 1000, counter: .max, node: node)
        let next = s.successor(node: NodeID(0))
        #expect(next.millis == 1001 && next.counter == 0)
        #expect(next > s)
    }

    @Test func nodeIDHex() {
        #expect(NodeID(hex: "0123456789abcdef") == node)
        #expect(NodeID(hex: "0123456789ABCDEF") == nil)
        #expect(NodeID(hex: "123") == nil)
        #expect(node.description == "0123456789abcdef")
    }
}
