import CSodium

/// Key material held in its own heap buffer that is wiped with `sodium_memzero` when the last
/// reference goes away, so derived keys do not linger in freed memory.
///
/// `@unchecked Sendable`: the bytes are written once in `init` and only read afterwards.
public final class SecretKey: @unchecked Sendable {
    private let buffer: UnsafeMutableRawBufferPointer

    /// Copies `bytes` into a fresh buffer (the caller's array is not wiped).
    public init(bytes: [UInt8]) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { buffer.baseAddress!.copyMemory(from: base, byteCount: source.count) }
        }
        self.buffer = buffer
        count = bytes.count
    }

    /// A key of `count` bytes filled by `fill`, which must write every byte.
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        fill(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
        self.buffer = buffer
        self.count = count
    }

    /// The key's length in bytes.
    public let count: Int

    /// Calls `body` with the key bytes; the pointer must not escape.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    /// A copy of the key as an array (for callers that must hand the key out, e.g. the root key).
    public var bytes: [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    deinit {
        sodium_memzero(buffer.baseAddress, buffer.count)
        buffer.deallocate()
    }
}
