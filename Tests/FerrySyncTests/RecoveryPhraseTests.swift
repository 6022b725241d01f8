import Testing
@testable import FerrySync

@Suite struct RecoveryPhraseTests {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    @Test func testVector() throws {
        let phrase = RecoveryPhrase.encode(Fixtures.keys)
        #expect(phrase == "000G4-0R40M-30E20-9185G-R38E1-W8124-GK2GA-HC5RR-34D1P-70X3R-FWPBX-26SS4")
        #expect(try RecoveryPhrase.decode(phrase).owner == Fixtures.keys.owner)
    }

    @Test func roundTripsAndHasItsShape() throws {
        for _ in 0..<50 {
            let keys = OwnerKeys.generate()
            let phrase = RecoveryPhrase.encode(keys)
            let groups = phrase.split(separator: "-")
            #expect(groups.count == 12)
            #expect(groups.allSatisfy { $0.count == 5 && $0.allSatisfy { Self.alphabet.contains($0) } })
            let back = try RecoveryPhrase.decode(phrase)
            #expect(back.rootKey == keys.rootKey)
            #expect(back.owner == keys.owner)
        }
    }

    @Test func decodingForgives() throws {
        let phrase = RecoveryPhrase.encode(Fixtures.keys)
        let bare = phrase.replacingOccurrences(of: "-", with: "")
        let variants = [
            phrase.lowercased(),
            bare,
            phrase.replacingOccurrences(of: "-", with: " "),
            "  " + bare.enumerated().map { $0.offset % 4 == 3 ? "\($0.element) - " : "\($0.element)" }.joined() + "\n",
            String(bare.map { $0 == "1" ? "l" : $0 == "0" ? "O" : $0 }),
            String(bare.map { $0 == "1" ? "I" : $0 == "0" ? "o" : $0 }),
        ]
        for text in variants {
            #expect(try RecoveryPhrase.decode(text).rootKey == Fixtures.rootKey, "\(text)")
        }
    }

    @Test func everySingleCharacterTypoIsDetected() throws {
        for keys in [Fixtures.keys, OwnerKeys.generate(), OwnerKeys.generate()] {
            let symbols = Array(RecoveryPhrase.encode(keys).replacingOccurrences(of: "-", with: ""))
            for position in symbols.indices {
                for replacement in Self.alphabet where replacement != symbols[position] {
                    var typo = symbols
                    typo[position] = replacement
                    #expect(throws: RecoveryPhraseError.checksumMismatch) { try RecoveryPhrase.decode(String(typo)) }
                }
                var typo = symbols
                typo[position] = "U"
                #expect(throws: RecoveryPhraseError.badCharacter("U", position: position + 1)) { try RecoveryPhrase.decode(String(typo)) }
            }
            // Swapping two neighbours is caught too.
            for position in symbols.indices.dropLast() where symbols[position] != symbols[position + 1] {
                var typo = symbols
                typo.swapAt(position, position + 1)
                #expect(throws: RecoveryPhraseError.checksumMismatch) { try RecoveryPhrase.decode(String(typo)) }
            }
        }
    }

    @Test func wrongLengthAndBadCharacters() {
        let phrase = RecoveryPhrase.encode(Fixtures.keys)
        #expect(throws: RecoveryPhraseError.wrongLength(found: 59, expected: 60)) { try RecoveryPhrase.decode(String(phrase.dropLast())) }
        #expect(throws: RecoveryPhraseError.wrongLength(found: 61, expected: 60)) { try RecoveryPhrase.decode(phrase + "0") }
        #expect(throws: RecoveryPhraseError.wrongLength(found: 0, expected: 60)) { try RecoveryPhrase.decode("") }
        #expect(throws: RecoveryPhraseError.badCharacter("*", position: 3)) { try RecoveryPhrase.decode("AB*" + phrase) }
        #expect(throws: RecoveryPhraseError.badCharacter("é", position: 2)) { try RecoveryPhrase.decode("Aé" + phrase) }
        #expect(throws: RecoveryPhraseError.badCharacter("_", position: 6)) { try RecoveryPhrase.decode(phrase.replacingOccurrences(of: "-", with: "_")) }
        let long = String(repeating: "0", count: 513)
        #expect(throws: RecoveryPhraseError.tooLong(bytes: 513, limit: 512)) { try RecoveryPhrase.decode(long) }
        #expect(RecoveryPhraseError.checksumMismatch.description.contains("check the phrase for a typo"))
        #expect(RecoveryPhraseError.badCharacter("*", position: 3).description.contains("position 3"))
    }
}
