import CSodium
import Synchronization

/// Random nonces from a pool filled 4 KiB at a time from the kernel (libsodium's
/// `randombytes_buf`), so that sealing many envelopes costs one system call per 170 nonces
/// instead of one each. A nonce is public (it travels in the clear beside the ciphertext) and
/// must only never repeat, which random bytes taken once each from the kernel guarantee as
/// well as one call per nonce does.
final class NoncePool: Sendable {
    private struct State {
        var pool = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private let state = Mutex(State())

    static let shared = NoncePool()

    /// Writes `count` (at most 4096) fresh random bytes at `destination`.
    func take(_ count: Int, into destination: UnsafeMutablePointer<UInt8>) {
        precondition(count <= 4096, "a nonce of at most 4096 bytes")
        state.withLock { s in
            if s.used + count > s.pool.count {
                Sodium.ensureInitialized()
                s.pool.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
                s.used = 0
            }
            s.pool.withUnsafeBufferPointer { p in
                destination.update(from: p.baseAddress! + s.used, count: count)
            }
            // Used bytes are overwritten, so no copy of a nonce stays behind in the pool.
            s.pool.withUnsafeMutableBufferPointer { p in
                (p.baseAddress! + s.used).update(repeating: 0, count: count)
            }
            s.used += count
        }
    }
}
