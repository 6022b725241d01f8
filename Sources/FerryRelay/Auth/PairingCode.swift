import FerryCrypto

/// A one-time pairing code: 12 characters of Crockford's base32 (60 bits) shown as
/// `XXXX-XXXX-XXXX`. Typing is forgiving: case, spaces and dashes do not matter, and `O`, `I`,
/// `L` read as `0`, `1`, `1`. The relay keeps only the SHA-256 of the normalized form.
public struct PairingCode: Sendable, Equatable {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    public static let length = 12

    /// The 12 characters, normalized (upper case, no dashes).
    public let normalized: String

    /// A fresh code from `random`.
    public init(random: (Int) -> [UInt8] = SecureRandom.bytes) {
        let bytes = random(PairingCode.length)
        normalized = String(decoding: bytes.map { PairingCode.alphabet[Int($0 & 31)] }, as: UTF8.self)
    }

    /// Parses what a person typed; nil when it is not 12 code characters (at most 64 input
    /// characters are looked at).
    public init?(typed: String) {
        guard typed.utf8.count <= 64 else { return nil }
        var out: [UInt8] = []
        for c in typed.utf8 {
            switch c {
            case UInt8(ascii: "-"), UInt8(ascii: " "): continue
            default:
                var u = c
                if (97...122).contains(u) { u -= 32 }
                if u == UInt8(ascii: "O") { u = UInt8(ascii: "0") }
                if u == UInt8(ascii: "I") || u == UInt8(ascii: "L") { u = UInt8(ascii: "1") }
                guard PairingCode.alphabet.contains(u) else { return nil }
                out.append(u)
            }
        }
        guard out.count == PairingCode.length else { return nil }
        normalized = String(decoding: out, as: UTF8.self)
    }

    /// `XXXX-XXXX-XXXX`.
    public var display: String {
        let c = Array(normalized)
        return String(c[0..<4]) + "-" + String(c[4..<8]) + "-" + String(c[8..<12])
    }

    /// What the store keeps.
    public var hash: [UInt8] {
        var h = SHA256()
        h.update(Array(normalized.utf8))
        return h.finalize()
    }
}
