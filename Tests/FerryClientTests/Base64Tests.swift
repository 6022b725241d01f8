import FerryClient
import Testing

/// Inline attachment bytes: RFC 4648 base64 with padding, strict on input.
@Suite struct Base64Tests {
    // RFC 4648, section 10.
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                      ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func rfcVectors(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func everyByteValueAndLengthRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes, "length \(length)")
        }
        let all = Array(0...255).map(UInt8.init)
        #expect(Base64.decode(Base64.encode(all)) == all)
    }

    @Test(arguments: ["Zg=", "Zg", "Z===", "Zm9v=", "Zg==Zg==", "Zm9\u{0}", "Zm 9", "Zh==", "Zm9=", "====", "Zm-v"])
    func invalidInputIsRejected(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
