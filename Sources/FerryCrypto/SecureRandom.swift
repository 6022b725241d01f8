import CSodium

/// Cryptographically secure random bytes (libsodium's `randombytes_buf`, the kernel's getrandom).
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: count)
        fill(&out)
        return out
    }

    /// Overwrites every byte of `buffer` with random bytes.
    public static func fill(_ buffer: inout [UInt8]) {
        Sodium.ensureInitialized()
        buffer.withUnsafeMutableBytes { fill($0) }
    }

    /// Overwrites every byte of `buffer` with random bytes.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        Sodium.ensureInitialized()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}
