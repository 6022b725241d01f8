import FerryJSON
import Foundation
import FerryTestSupport
import Testing

/// Seeded mutation fuzzing: flip, overwrite, insert, delete and duplicate bytes of
/// valid documents. Set FERRY_JSON_FUZZ_SEED to replay or vary a run.
@Suite struct JSONFuzzTests {
    static let iterations = 20_000

    static var baseSeed: UInt64 {
        if let text = ProcessInfo.processInfo.environment["FERRY_JSON_FUZZ_SEED"], let seed = UInt64(text) {
            return seed
        }
        return 0xF322_15EE_D000_0001
    }

    /// Bytes that matter to the grammar, so mutations reach deep states more often.
    static let interesting: [UInt8] = Array("{}[]\":,\\/ \t\n0123456789-+.eEtrufalsn".utf8)
        + [0x00, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]

    @Test func mutatedDocumentsNeverCrashAndParseAgreesWithValidate() {
        let seed = Self.baseSeed
        var rng = SplitMix64(seed: seed)
        let corpus = JSONTestCorpus.byteDocuments
        let limits = JSONLimits(maxBytes: 4096, maxDepth: 8)
        var failures = 0
        var successes = 0
        for iteration in 0..<Self.iterations {
            var bytes = corpus[Int.random(in: 0..<corpus.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                Self.mutate(&bytes, using: &rng)
            }
            let context = "fuzz seed \(seed) iteration \(iteration), input: \(hexDump(bytes))"
            if let problem = disagreement(bytes, limits: limits) {
                Issue.record("\(problem); \(context)")
                failures += 1
            }
            switch parseResult(bytes, limits: limits) {
            case .success(let value):
                successes += 1
                let reparsed = parseResult(JSONWriter.serialize(value), limits: JSONLimits(maxDepth: 8))
                if case .success(let again) = reparsed, again == value {
                } else {
                    Issue.record("serialized value does not parse back equal: \(reparsed); \(context)")
                    failures += 1
                }
            case .failure(let error):
                if error.offset < 0 || error.offset > bytes.count {
                    Issue.record("offset \(error.offset) out of range: \(error); \(context)")
                    failures += 1
                }
            }
            if failures >= 5 { break }
        }
        // The mutations must leave some documents valid, or the comparison above proves little.
        #expect(successes > Self.iterations / 20, "only \(successes) mutants parsed (fuzz seed \(seed))")
    }

    static func mutate(_ bytes: inout [UInt8], using rng: inout SplitMix64) {
        let pick = { (rng: inout SplitMix64) -> UInt8 in
            Bool.random(using: &rng)
                ? interesting[Int.random(in: 0..<interesting.count, using: &rng)]
                : UInt8.random(in: 0...255, using: &rng)
        }
        switch Int.random(in: 0..<6, using: &rng) {
        case 0 where !bytes.isEmpty:  // flip one bit
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
        case 1 where !bytes.isEmpty:  // overwrite a byte
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] = pick(&rng)
        case 2:  // insert a byte
            bytes.insert(pick(&rng), at: Int.random(in: 0...bytes.count, using: &rng))
        case 3 where !bytes.isEmpty:  // delete a byte
            bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
        case 4 where !bytes.isEmpty:  // duplicate a range (makes duplicate keys and deeper nesting)
            let start = Int.random(in: 0..<bytes.count, using: &rng)
            let end = Int.random(in: start...min(bytes.count, start + 16), using: &rng)
            bytes.insert(contentsOf: bytes[start..<end], at: Int.random(in: 0...bytes.count, using: &rng))
        case 5 where !bytes.isEmpty:  // truncate
            bytes.removeLast(Int.random(in: 0...min(bytes.count, 4), using: &rng))
        default:
            bytes.append(pick(&rng))
        }
    }
}
