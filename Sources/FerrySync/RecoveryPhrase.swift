import FerryCrypto

/// The owner's root key as text a person can write down and type back in.
///
/// 60 Crockford base32 characters in 12 groups of 5 joined by `-`, e.g.
/// `0G20C-R3G20-...`. The first 54 characters carry 270 bits: the 32-byte root key followed by
/// the top 14 bits of the unkeyed BLAKE2b-256 of the key. The last 6 characters are a bech32m
/// checksum (BIP 350's BCH code over the 54 symbols, with the prefix `ferry`), which detects
/// every error in up to 4 characters; together with the 14 hash bits a random error goes
/// unnoticed with probability 2^-44.
///
/// Decoding forgives what Crockford forgives: any case, `I` and `L` read as `1`, `O` as `0`,
/// spaces, tabs, line breaks and dashes ignored.
public enum RecoveryPhrase {
    /// The longest input `decode` reads, in bytes of UTF-8.
    public static let maxInputBytes = 512
    /// The number of characters in a phrase, not counting separators.
    public static let symbolCount = 60
    static let dataSymbols = 54
    static let hashBits = 14
    static let groupSize = 5
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let checksumPrefix = Array("ferry".utf8)
    static let bech32mConstant: UInt32 = 0x2bc8_30a3

    /// The phrase of `keys`' root key.
    public static func encode(_ keys: OwnerKeys) -> String {
        var bits = BitWriter()
        for byte in keys.rootKey { bits.append(UInt32(byte), count: 8) }
        let hash = KeyedHash.hash(keys.rootKey, length: 32)
        bits.append((UInt32(hash[0]) << 8 | UInt32(hash[1])) >> (16 - UInt32(hashBits)), count: hashBits)
        var symbols = bits.symbols
        symbols += checksum(symbols)
        var out = [UInt8]()
        for (i, s) in symbols.enumerated() {
            if i > 0 && i % groupSize == 0 { out.append(UInt8(ascii: "-")) }
            out.append(alphabet[Int(s)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The keys whose phrase `phrase` is.
    /// - Throws: `RecoveryPhraseError`: `.tooLong`, `.badCharacter` (with its position),
    ///   `.wrongLength`, or `.checksumMismatch` for a typo.
    public static func decode(_ phrase: String) throws(RecoveryPhraseError) -> OwnerKeys {
        let size = phrase.utf8.count
        guard size <= maxInputBytes else { throw .tooLong(bytes: size, limit: maxInputBytes) }
        var symbols: [UInt8] = []
        symbols.reserveCapacity(symbolCount)
        for (index, character) in phrase.enumerated() {
            let scalars = character.unicodeScalars
            guard scalars.count == 1, let scalar = scalars.first, scalar.isASCII else {
                throw .badCharacter(String(character), position: index + 1)
            }
            let c = UInt8(scalar.value)
            switch c {
            case UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): continue
            default:
                guard let value = symbolValue(c) else { throw .badCharacter(String(character), position: index + 1) }
                symbols.append(value)
            }
        }
        guard symbols.count == symbolCount else { throw .wrongLength(found: symbols.count, expected: symbolCount) }
        guard polymod(prefixExpansion + symbols) == bech32mConstant else { throw .checksumMismatch }

        var reader = BitReader(symbols: symbols[0..<dataSymbols])
        var key = [UInt8]()
        key.reserveCapacity(OwnerKeys.rootKeyBytes)
        for _ in 0..<OwnerKeys.rootKeyBytes { key.append(UInt8(reader.read(8))) }
        let storedHash = reader.read(hashBits)
        let hash = KeyedHash.hash(key, length: 32)
        guard storedHash == (UInt32(hash[0]) << 8 | UInt32(hash[1])) >> (16 - UInt32(hashBits)) else { throw .checksumMismatch }
        // 32 bytes always make valid keys.
        return try! OwnerKeys(rootKey: key)
    }

    /// A symbol's value: Crockford's decoding, case-insensitive, with I and L as 1 and O as 0.
    static func symbolValue(_ c: UInt8) -> UInt8? {
        var c = c
        if (97...122).contains(c) { c -= 32 }
        switch c {
        case UInt8(ascii: "I"), UInt8(ascii: "L"): return 1
        case UInt8(ascii: "O"): return 0
        default:
            guard let i = alphabet.firstIndex(of: c) else { return nil }
            return UInt8(i)
        }
    }

    static var prefixExpansion: [UInt8] {
        checksumPrefix.map { $0 >> 5 } + [0] + checksumPrefix.map { $0 & 31 }
    }

    /// The 6 bech32m check symbols of `data`.
    static func checksum(_ data: [UInt8]) -> [UInt8] {
        let mod = polymod(prefixExpansion + data + [0, 0, 0, 0, 0, 0]) ^ bech32mConstant
        return (0..<6).map { UInt8((mod >> (5 * (5 - UInt32($0)))) & 31) }
    }

    /// BIP 173's BCH checksum over GF(32).
    static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var check: UInt32 = 1
        for v in values {
            let top = check >> 25
            check = (check & 0x1ff_ffff) << 5 ^ UInt32(v)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 { check ^= generator[i] }
        }
        return check
    }

    /// Packs bits most significant first into 5-bit symbols.
    struct BitWriter {
        private(set) var symbols: [UInt8] = []
        private var pending: UInt32 = 0
        private var pendingBits = 0

        mutating func append(_ value: UInt32, count: Int) {
            for shift in stride(from: count - 1, through: 0, by: -1) {
                pending = pending << 1 | (value >> UInt32(shift)) & 1
                pendingBits += 1
                if pendingBits == 5 {
                    symbols.append(UInt8(pending))
                    pending = 0
                    pendingBits = 0
                }
            }
        }
    }

    /// Reads bits most significant first from 5-bit symbols.
    struct BitReader {
        let symbols: ArraySlice<UInt8>
        var position = 0

        init(symbols: ArraySlice<UInt8>) { self.symbols = symbols }

        mutating func read(_ count: Int) -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<count {
                let s = symbols[symbols.startIndex + position / 5]
                v = v << 1 | UInt32(s >> UInt8(4 - position % 5)) & 1
                position += 1
            }
            return v
        }
    }
}
