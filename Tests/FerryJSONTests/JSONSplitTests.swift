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

    /// `validatePrefix` at every cut of every document, alone and followed by other text:
    /// it finds the value that `validate` would read, ends just past its last byte whatever
    /// follows, and throws what `validate` throws for anything but trailing data.
    @Test(arguments: JSONTestCorpus.documents)
    func aPrefixValueEndsWhereItsLastByteIs(_ text: String) throws {
        let bytes = Array(text.utf8)
        for cut in 0...bytes.count {
            let prefix = Array(bytes[..<cut])
            for trailing in ["", "x", " ,{\"a\":1}", "]]"] {
                let input = prefix + Array(trailing.utf8)
                let found = Result { () throws(JSONError) in try input.withUnsafeBufferPointer { b throws(JSONError) in try JSONParser.validatePrefix(b) } }
                // What validate says of the value alone: the prefix without the whitespace after it.
                var valueEnd = prefix.count
                while valueEnd > 0, [0x20, 0x0A, 0x0D, 0x09].contains(prefix[valueEnd - 1]) { valueEnd -= 1 }
                let context = "cut \(cut) of \(text) + \(trailing)"
                switch (validateResult(prefix), found) {
                case (.success(let kind), .success(let got)):
                    // None of the trailing texts can continue a value (no digit, dot or e).
                    #expect(got.kind == kind && got.end == valueEnd, "\(got); \(context)")
                case (.success(let kind), .failure(let error)):
                    Issue.record("validate gave \(kind), validatePrefix threw \(error); \(context)")
                case (.failure(let error), .success(let got)):
                    // The prefix was cut short and what follows completed a value (a quote closing a
                    // string): that value, and no more, is what was found.
                    #expect(!trailing.isEmpty && got.end > valueEnd, "\(error) vs \(got); \(context)")
                    #expect(validateResult(Array(input[..<got.end])) == .success(got.kind), "\(context)")
                case (.failure(let error), .failure(let other)):
                    if trailing.isEmpty { #expect(error == other, "\(context)") }
                }
            }
        }
    }
}
