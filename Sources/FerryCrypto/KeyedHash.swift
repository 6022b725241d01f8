import CSodium

/// Keyed BLAKE2b (`crypto_generichash` with a key): a pseudorandom function, so its outputs
/// reveal nothing about the input to someone without the key.
public enum KeyedHash {
    /// The `length`-byte (16...64) BLAKE2b hash of `message` under `key` (16...64 bytes).
    public static func hash(_ message: [UInt8], key: SecretKey, length: Int = 32) -> [UInt8] {
        precondition((16...64).contains(length), "a BLAKE2b output is 16 to 64 bytes")
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBytes { hash(message, key: key, into: $0) }
        return out
    }

    /// The first 16 bytes of the 32-byte hash of `message` under `key` (as `hash(message, key:
    /// key, length: 32).prefix(16)`), as two big-endian words: for the 128-bit ids derived from
    /// a hash, without an array for the output.
    public static func prefix128(of message: [UInt8], key: SecretKey) -> (high: UInt64, low: UInt64) {
        var out: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &out) { hash(message, key: key, into: $0) }
        return (UInt64(bigEndian: out.0), UInt64(bigEndian: out.1))
    }

    /// Fills `out` (16...64 bytes) with the hash of `message` under `key`.
    private static func hash(_ message: [UInt8], key: SecretKey, into out: UnsafeMutableRawBufferPointer) {
        precondition((16...64).contains(key.count), "a BLAKE2b key is 16 to 64 bytes")
        Sodium.ensureInitialized()
        key.withUnsafeBytes { k in
            _ = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count, message, UInt64(message.count),
                                   k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
    }

    /// The unkeyed `length`-byte BLAKE2b hash of `message`.
    public static func hash(_ message: [UInt8], length: Int = 32) -> [UInt8] {
        precondition((16...64).contains(length), "a BLAKE2b output is 16 to 64 bytes")
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: length)
        _ = crypto_generichash(&out, length, message, UInt64(message.count), nil, 0)
        return out
    }
}
