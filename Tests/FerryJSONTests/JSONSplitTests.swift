import FerryJSON
import Testing

/// Every valid document cut at every byte: the parser must not crash, a prefix
/// may only fail for lack of input (or parse, when it is itself a value, like
/// `12` of `123`), and parse and validate must always agree.
@Suite struct JSONSplitTests {
    @Test(arguments: JSONTestCorpus.documents)
    func everyPrefix(_ text: String) throws {
        let bytes = Array(text.utf8)
        _ = try JSONParser.parse(bytes)
        for cut in 0..<bytes.count {
            let prefix = Array(bytes[..<cut])
            switch parseResult(prefix) {
            case .success:
                break
            case .failure(let error):
                #expect(
                    error.kind == .unexpectedEnd || error.kind == .empty,
                    "prefix of \(cut) bytes of \(text): \(error)")
                #expect(error.offset == cut)
            }
            #expect(disagreement(prefix) == nil, "prefix of \(cut) bytes of \(text)")
        }
    }

    @Test(arguments: JSONTestCorpus.documents)
    func everySuffixAndEveryTwoPieceSplit(_ text: String) throws {
        let bytes = Array(text.utf8)
        let whole = try JSONParser.parse(bytes)
        for cut in 0...bytes.count {
            let suffix = Array(bytes[cut...])
            #expect(disagreement(suffix) == nil, "suffix from \(cut) of \(text)")
            // Reassembled from two pieces (as a framer would), the document is unchanged.
            let joined = Array(bytes[..<cut]) + Array(bytes[cut...])
            #expect(try JSONParser.parse(joined) == whole)
        }
    }

    @Test(arguments: JSONTestCorpus.documents)
    func sliceAtEveryOffsetOfALargerBuffer(_ text: String) throws {
        let bytes = Array(text.utf8)
        let whole = try JSONParser.parse(bytes)
        let noise: [UInt8] = Array("}]\"\\ 0x".utf8)
        for lead in 0...noise.count {
            let buffer = Array(noise[..<lead]) + bytes + Array(noise[lead...])
            let slice = buffer[lead..<(lead + bytes.count)]
            #expect(try JSONParser.parse(slice) == whole)
            // Errors in a slice count from the slice's start.
            if let error = parseError(Array(bytes.dropLast())) {
                #expect(throws: error) { try JSONParser.parse(slice.dropLast()) }
            }
        }
    }
}
