import FerryJSON
import Foundation
import FerryTestSupport
import Testing

@testable import FerryVarlink

/// Seeded mutation fuzzing of the framer and the message decoder: whatever the bytes,
/// they either decode or fail with a typed error, and never crash or hang.
@Suite struct VarlinkFuzzTests {
    static let corpus: [String] = [
        #"{"method":"org.varlink.certification.Test10","more":true,"parameters":{"client_id":"abc","mytype":{"object":{"a":[1,2,{"b":null}]},"enum":"two","struct":{"first":1,"second":"2"},"array":["one"],"dictionary":{"foo":"Foo"},"stringset":{"one":{}},"interface":{"foo":[null,{"foo":"foo"}],"anon":{"foo":true,"bar":false}}}}}"#,
        #"{"parameters":{"string":"Reply number 1 \u00e9\n"},"continues":true}"#,
        #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"x"}}"#,
        #"{"method":"org.varlink.service.GetInfo","oneway":true,"parameters":{"n":-1.5e3}}"#,
    ]

    /// One decoding attempt: true when the bytes framed into messages that decoded,
    /// false on a typed error. Any other outcome (a crash) fails the process.
    static func exercise(_ bytes: [UInt8], maxMessageSize: Int = 4096) -> (messages: Int, errors: Int) {
        var framer = VarlinkFramer(maxMessageSize: maxMessageSize)
        framer.append(bytes)
        var messages = 0
        var errors = 0
        let limits = JSONLimits(maxBytes: maxMessageSize, maxDepth: 64)
        while true {
            let frame: [UInt8]?
            do {
                frame = try framer.nextMessage()
            } catch {
                errors += 1
                break
            }
            guard let frame else { break }
            messages += 1
            do {
                _ = try VarlinkCallMessage.decode(frame, limits: limits)
            } catch {
                errors += 1
            }
            do {
                _ = try VarlinkReplyMessage.decode(frame, limits: limits)
            } catch {
                errors += 1
            }
        }
        return (messages, errors)
    }

    static func mutate(_ input: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...8, using: &random) {
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !bytes.isEmpty:
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            case 1:
                let index = Int.random(in: 0...bytes.count, using: &random)
                bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
            case 2 where !bytes.isEmpty:
                bytes.remove(at: Int.random(in: 0..<bytes.count, using: &random))
            case 3:
                let index = Int.random(in: 0...bytes.count, using: &random)
                let special: [UInt8] = Array("{}[]\",:\\0 \u{0}".utf8)
                bytes.insert(special.randomElement(using: &random)!, at: index)
            case 4 where bytes.count > 2:
                let start = Int.random(in: 0..<bytes.count, using: &random)
                let end = min(bytes.count, start + Int.random(in: 1...16, using: &random))
                bytes.insert(contentsOf: bytes[start..<end], at: Int.random(in: 0...bytes.count, using: &random))
            default:
                bytes.append(0)
            }
        }
        return bytes
    }

    @Test func mutatedMessagesNeverCrash() {
        let seed = UInt64(ProcessInfo.processInfo.environment["FERRY_FUZZ_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        print("VarlinkFuzzTests.mutatedMessagesNeverCrash seed \(seed) (set FERRY_FUZZ_SEED to replay)")
        var random = SplitMix64(seed: seed)
        let corpus = Self.corpus.map { Array($0.utf8) + [0] }
        var decoded = 0
        var failed = 0
        for _ in 0..<3000 {
            let base = corpus.randomElement(using: &random)! + corpus.randomElement(using: &random)!
            let result = Self.exercise(Self.mutate(base, &random))
            decoded += result.messages
            failed += result.errors
        }
        #expect(decoded > 0, "seed \(seed)")
        #expect(failed > 0, "seed \(seed): mutations should produce some typed errors")
    }

    @Test func garbageNeverCrashes() {
        let seed = UInt64(ProcessInfo.processInfo.environment["FERRY_FUZZ_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        print("VarlinkFuzzTests.garbageNeverCrashes seed \(seed) (set FERRY_FUZZ_SEED to replay)")
        var random = SplitMix64(seed: seed)
        for _ in 0..<500 {
            let count = Int.random(in: 0...6000, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let result = Self.exercise(bytes)
            #expect(result.messages + result.errors >= 0, "seed \(seed)")
        }
    }

    @Test func tenThousandDeepNestingIsATypedError() {
        for opener in ["[", "{\"a\":"] {
            let closer = opener == "[" ? "]" : "}"
            let value = String(repeating: opener, count: 10_000) + String(repeating: closer, count: 10_000)
            let text = #"{"method":"a.b.C","parameters":{"v":"# + value + "}}"
            let bytes = Array(text.utf8) + [0]
            #expect(Self.exercise(bytes, maxMessageSize: 1 << 20) == (1, 2))
            #expect(throws: VarlinkMessageError.self) {
                try VarlinkCallMessage.decode(Array(bytes.dropLast()))
            }
            // Unbalanced, unterminated, and deep at the top level too.
            let open = Array(String(repeating: opener, count: 10_000).utf8) + [0]
            #expect(Self.exercise(open, maxMessageSize: 1 << 20) == (1, 2))
        }
    }
}
