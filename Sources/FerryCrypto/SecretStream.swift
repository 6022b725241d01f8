import CSodium

/// libsodium's `crypto_secretstream_xchacha20poly1305`: a long message as a sequence of
/// authenticated chunks that cannot be reordered, dropped or truncated unnoticed (the last chunk
/// carries the FINAL tag).
///
/// Each chunk grows by `SecretStream.overhead` bytes. A stream starts with a 24-byte header the
/// reader needs. One `Pusher` or `Puller` per stream; they hold the stream state and wipe it on
/// deinit.
public enum SecretStream {
    /// The key size.
    public static let keyBytes = 32
    /// The stream header size.
    public static let headerBytes = 24
    /// What each chunk adds to its plaintext (a tag byte and a 16-byte MAC).
    public static let overhead = 17

    /// Encrypts a stream's chunks in order.
    public final class Pusher {
        private var state = crypto_secretstream_xchacha20poly1305_state()
        /// The stream header, to be stored before the first chunk.
        public let header: [UInt8]

        public init(key: SecretKey) {
            precondition(key.count == keyBytes, "a secretstream key is \(keyBytes) bytes")
            Sodium.ensureInitialized()
            var header = [UInt8](repeating: 0, count: headerBytes)
            var state = crypto_secretstream_xchacha20poly1305_state()
            key.withUnsafeBytes { k in
                _ = crypto_secretstream_xchacha20poly1305_init_push(
                    &state, &header, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            self.state = state
            self.header = header
            withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) }
        }

        /// Encrypts one chunk; `final` marks the stream's last chunk.
        public func push(_ message: UnsafeRawBufferPointer, associatedData: [UInt8], final: Bool) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: message.count + overhead)
            let tag = final ? crypto_secretstream_xchacha20poly1305_tag_final() : crypto_secretstream_xchacha20poly1305_tag_message()
            var written: UInt64 = 0
            let empty: UInt8 = 0
            withUnsafePointer(to: empty) { emptyPointer in
                _ = crypto_secretstream_xchacha20poly1305_push(
                    &state, &out, &written,
                    message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyPointer, UInt64(message.count),
                    associatedData, UInt64(associatedData.count), tag)
            }
            return out
        }

        public func push(_ message: [UInt8], associatedData: [UInt8], final: Bool) -> [UInt8] {
            message.withUnsafeBytes { push($0, associatedData: associatedData, final: final) }
        }

        deinit {
            withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) }
        }
    }

    /// Decrypts a stream's chunks in order.
    public final class Puller {
        private var state = crypto_secretstream_xchacha20poly1305_state()

        /// - Throws: `CryptoError.invalidLength` when `header` is not 24 bytes,
        ///   `.authenticationFailed` when libsodium refuses it.
        public init(key: SecretKey, header: [UInt8]) throws(CryptoError) {
            precondition(key.count == keyBytes, "a secretstream key is \(keyBytes) bytes")
            guard header.count == headerBytes else {
                throw .invalidLength(what: "a secretstream header", expected: headerBytes, actual: header.count)
            }
            Sodium.ensureInitialized()
            let rc = key.withUnsafeBytes { k in
                crypto_secretstream_xchacha20poly1305_init_pull(&state, header, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            guard rc == 0 else { throw .authenticationFailed }
        }

        /// Decrypts the next chunk and tells whether it was the stream's last one.
        /// - Throws: `CryptoError.authenticationFailed` for changed, reordered or foreign chunks.
        public func pull(_ chunk: UnsafeRawBufferPointer, associatedData: [UInt8]) throws(CryptoError) -> (message: [UInt8], final: Bool) {
            guard chunk.count >= overhead, let base = chunk.baseAddress else { throw .authenticationFailed }
            var out = [UInt8](repeating: 0, count: chunk.count - overhead + 1)
            var written: UInt64 = 0
            var tag: UInt8 = 0
            let rc = crypto_secretstream_xchacha20poly1305_pull(
                &state, &out, &written, &tag, base.assumingMemoryBound(to: UInt8.self), UInt64(chunk.count),
                associatedData, UInt64(associatedData.count))
            guard rc == 0 else { throw .authenticationFailed }
            out.removeLast(out.count - Int(written))
            return (out, tag == crypto_secretstream_xchacha20poly1305_tag_final())
        }

        deinit {
            withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) }
        }
    }
}
