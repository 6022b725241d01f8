import CSodium

/// XChaCha20-Poly1305 (IETF) authenticated encryption with associated data, with a random
/// 24-byte nonce per message (random nonces of this size never collide in practice), taken
/// from a pool of kernel random bytes (`NoncePool`).
///
/// Sealed form: `nonce (24) | ciphertext | tag (16)`.
public enum AEAD {
    /// The key size.
    public static let keyBytes = 32
    /// The nonce size.
    public static let nonceBytes = 24
    /// The authentication tag size.
    public static let tagBytes = 16
    /// What sealing adds to the plaintext's length.
    public static let overhead = nonceBytes + tagBytes

    /// Encrypts `plaintext` under `key` with a fresh random nonce, authenticating
    /// `associatedData` too. Returns `nonce | ciphertext | tag`.
    public static func seal(_ plaintext: [UInt8], associatedData: [UInt8], key: SecretKey) -> [UInt8] {
        precondition(key.count == keyBytes, "an AEAD key is \(keyBytes) bytes")
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: nonceBytes + plaintext.count + tagBytes)
        out.withUnsafeMutableBytes { o in
            let base = o.baseAddress!.assumingMemoryBound(to: UInt8.self)
            NoncePool.shared.take(nonceBytes, into: base)
            var written: UInt64 = 0
            key.withUnsafeBytes { k in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    base + nonceBytes, &written, plaintext, UInt64(plaintext.count),
                    associatedData, UInt64(associatedData.count), nil, base,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return out
    }

    /// Decrypts `nonce | ciphertext | tag` made by `seal` with the same key and associated data.
    /// - Throws: `CryptoError.authenticationFailed` for a wrong key, changed bytes or a too short input.
    public static func open(_ sealed: [UInt8], associatedData: [UInt8], key: SecretKey) throws(CryptoError) -> [UInt8] {
        precondition(key.count == keyBytes, "an AEAD key is \(keyBytes) bytes")
        guard sealed.count >= overhead else { throw .authenticationFailed }
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: sealed.count - overhead)
        var written: UInt64 = 0
        let rc = sealed.withUnsafeBufferPointer { s in
            key.withUnsafeBytes { k in
                out.withUnsafeMutableBufferPointer { o in
                    crypto_aead_xchacha20poly1305_ietf_decrypt(
                        o.baseAddress ?? UnsafeMutablePointer(mutating: s.baseAddress!), &written, nil,
                        s.baseAddress! + nonceBytes, UInt64(sealed.count - nonceBytes),
                        associatedData, UInt64(associatedData.count), s.baseAddress!,
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        return out
    }
}
