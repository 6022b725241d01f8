import FerryJSON
import Testing

@testable import FerryVarlink

@Suite struct VarlinkFramerTests {
    static let messages: [[UInt8]] = [
        Array(#"{"method":"org.example.A","parameters":{"x":1}}"#.utf8),
        Array(#"{"method":"org.example.B","more":true}"#.utf8),
        [],
        Array(#"{"parameters":{"s":"caf\u00e9 ☕"},"continues":true}"#.utf8),
        Array(#"{}"#.utf8),
    ]

    static var stream: [UInt8] {
        messages.flatMap { $0 + [0] }
    }

    private func drain(_ framer: inout VarlinkFramer) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let message = try framer.nextMessage() { out.append(message) }
        return out
    }

    @Test func splitsAtEveryBytePosition() throws {
        let stream = Self.stream
        for split in 0...stream.count {
            var framer = VarlinkFramer()
            framer.append(stream[..<split])
            var seen = try drain(&framer)
            framer.append(stream[split...])
            seen += try drain(&framer)
            #expect(seen == Self.messages, "split at \(split)")
            #expect(framer.bufferedByteCount == 0)
        }
    }

    @Test func splitsAtEveryPairOfPositions() throws {
        let stream = Self.stream
        for first in stride(from: 0, through: stream.count, by: 3) {
            for second in first...stream.count {
                var framer = VarlinkFramer()
                var seen: [[UInt8]] = []
                for part in [stream[..<first], stream[first..<second], stream[second...]] {
                    framer.append(part)
                    seen += try drain(&framer)
                }
                #expect(seen == Self.messages, "splits at \(first), \(second)")
            }
        }
    }

    @Test func oneByteAtATime() throws {
        var framer = VarlinkFramer()
        var seen: [[UInt8]] = []
        for byte in Self.stream {
            framer.append([byte])
            seen += try drain(&framer)
        }
        #expect(seen == Self.messages)
    }

    @Test func messageOfExactlyTheLimitPasses() throws {
        var framer = VarlinkFramer(maxMessageSize: 8)
        framer.append(Array("12345678".utf8) + [0])
        #expect(try framer.nextMessage() == Array("12345678".utf8))
    }

    @Test func messageOverTheLimitFailsAndStaysFailed() throws {
        var framer = VarlinkFramer(maxMessageSize: 8)
        framer.append(Array("123456789".utf8) + [0])
        #expect(throws: VarlinkFramingError.messageTooLarge(limit: 8, bufferedBytes: 9)) { try framer.nextMessage() }
        framer.append(Array("{}".utf8) + [0])
        #expect(throws: VarlinkFramingError.self) { try framer.nextMessage() }
    }

    @Test func unterminatedOversizeFailsBeforeTheTerminatorArrives() throws {
        var framer = VarlinkFramer(maxMessageSize: 8)
        framer.append(Array("12345678".utf8))
        #expect(try framer.nextMessage() == nil)
        framer.append([UInt8(ascii: "9")])
        #expect(throws: VarlinkFramingError.messageTooLarge(limit: 8, bufferedBytes: 9)) { try framer.nextMessage() }
    }

    @Test func oversizeDetectedAtEverySplit() throws {
        let stream = Array("{\"a\":1}".utf8) + [0] + Array(repeating: UInt8(ascii: "x"), count: 20) + [0]
        for split in 0...stream.count {
            var framer = VarlinkFramer(maxMessageSize: 16)
            var seen: [[UInt8]] = []
            var failed = false
            for part in [stream[..<split], stream[split...]] {
                framer.append(part)
                do {
                    seen += try drain(&framer)
                } catch {
                    failed = true
                    break
                }
            }
            #expect(failed, "split at \(split)")
            #expect(seen == [Array("{\"a\":1}".utf8)] || seen.isEmpty)
        }
    }

    @Test func compactsWithoutLosingBytes() throws {
        var framer = VarlinkFramer()
        let message = Array(repeating: UInt8(ascii: "a"), count: 1000)
        for round in 0..<500 {
            framer.append(message + [0] + message.prefix(round % 7))
            #expect(try framer.nextMessage() == message)
            var rest = Array(message.dropFirst(round % 7))
            rest.append(0)
            framer.append(rest)
            #expect(try framer.nextMessage() == message)
        }
        #expect(framer.bufferedByteCount == 0)
    }
}
