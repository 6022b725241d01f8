import CSodium

/// libsodium's key derivation (`crypto_kdf_derive_from_key`, BLAKE2b): independent subkeys from
/// one master key, each named by a 64-bit id within an 8-byte context.
public enum KeyDerivation {
    /// The master key size.
    public static let masterKeyBytes = 32
    /// The context size.
    public static let contextBytes = 8

    /// The subkey `id` of `masterKey` in `context` (exactly 8 bytes of ASCII, a constant of the
    /// caller's protocol), `length` bytes long (16...64). Deterministic.
    public static func derive(from masterKey: SecretKey, id: UInt64, context: String, length: Int = 32) -> SecretKey {
        let ctx = Array(context.utf8)
        precondition(ctx.count == contextBytes, "a KDF context is \(contextBytes) bytes")
        precondition(masterKey.count == masterKeyBytes, "a KDF master key is \(masterKeyBytes) bytes")
        precondition((16...64).contains(length), "a KDF subkey is 16 to 64 bytes")
        Sodium.ensureInitialized()
        let cchars = ctx.map { CChar(bitPattern: $0) }
        return SecretKey(count: length) { out in
            masterKey.withUnsafeBytes { k in
                _ = crypto_kdf_derive_from_key(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), length, id, cchars,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
    }
}
