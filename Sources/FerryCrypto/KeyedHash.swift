import CSodium

/// Keyed BLAKE2b (`crypto_generichash` with a key): a pseudorandom function, so its outputs
/// reveal nothing about the input to someone without the key.
public enum KeyedHash {
    /// The `length`-byte (16...64) BLAKE2b hash of `message` under `key` (16...64 bytes).
    public static func hash(_ message: [UInt8], key: SecretKey, length: Int = 32) -> [UInt8] {
        precondition((16...64).contains(length), "a BLAKE2b output is 16 to 64 bytes")
        precondition((16...64).contains(key.count), "a BLAKE2b key is 16 to 64 bytes")
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: length)
        key.withUnsafeBytes { k in
            _ = crypto_generichash(&out, length, message, UInt64(message.count),
                                   k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
        return out
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
