/// Why text is not a valid recovery phrase.
public enum RecoveryPhraseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is longer than `RecoveryPhrase.maxInputBytes` bytes of UTF-8.
    case tooLong(bytes: Int, limit: Int)
    /// A character outside the phrase's alphabet, at a 1-based character position of the input.
    case badCharacter(String, position: Int)
    /// The phrase has the wrong number of characters (spaces and dashes not counted).
    case wrongLength(found: Int, expected: Int)
    /// The phrase's check characters do not match the rest.
    case checksumMismatch

    public var description: String {
        switch self {
        case .tooLong(let bytes, let limit):
            "the recovery phrase is \(bytes) bytes long, more than \(limit); paste only the phrase"
        case .badCharacter(let c, let position):
            "the recovery phrase has the character \(c.debugDescription) at position \(position), which a phrase never contains (it uses 0-9 and A-Z without I, L, O, U)"
        case .wrongLength(let found, let expected):
            "the recovery phrase has \(found) characters, a phrase has \(expected) (not counting dashes and spaces); check for a missing or extra character"
        case .checksumMismatch:
            "the recovery phrase's checksum does not match; check the phrase for a typo"
        }
    }
}
