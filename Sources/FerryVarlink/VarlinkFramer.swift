import Glibc

/// Splits a byte stream into Varlink messages: each message is a JSON object followed by
/// one NUL byte.
///
/// Pure and size-capped: it does no I/O, and it never holds more than `maxMessageSize`
/// bytes of one message plus whatever the caller appended after it. Feed it bytes in any
/// split (one byte at a time, several messages at once) and it yields the same messages.
public struct VarlinkFramer: Sendable {
    /// The largest message (excluding its NUL) that `nextMessage()` hands out.
    public let maxMessageSize: Int

    private var buffer: [UInt8] = []
    /// Index of the first byte not yet handed out.
    private var start = 0
    /// Index up to which `buffer` is known to contain no NUL (from `start`).
    private var scanned = 0
    private var failure: VarlinkFramingError?

    /// - Parameter maxMessageSize: the cap on one message; Varlink's customary limit is 16 MiB.
    public init(maxMessageSize: Int = 16 << 20) {
        precondition(maxMessageSize > 0, "maxMessageSize must be positive")
        self.maxMessageSize = maxMessageSize
    }

    /// Bytes appended but not yet handed out as messages.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds bytes received from the peer.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// Adds bytes received from the peer from a raw buffer.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next complete message without its NUL terminator, or `nil` when more
    /// bytes are needed. An empty message (two NULs in a row) is returned as `[]`; it is
    /// for the message decoder to reject.
    ///
    /// - Throws: `VarlinkFramingError.messageTooLarge` when a message exceeds
    ///   `maxMessageSize`. The framer stays failed: every later call throws the same error.
    public mutating func nextMessage() throws(VarlinkFramingError) -> [UInt8]? {
        if let failure { throw failure }
        let end = buffer.count
        let terminator: Int? = buffer.withUnsafeBufferPointer { bytes in
            guard scanned < end, let base = bytes.baseAddress else { return nil }
            guard let hit = memchr(base + scanned, 0, end - scanned) else { return nil }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        }
        guard let terminator else {
            scanned = end
            if end - start > maxMessageSize {
                let error = VarlinkFramingError.messageTooLarge(limit: maxMessageSize, bufferedBytes: end - start)
                failure = error
                throw error
            }
            return nil
        }
        if terminator - start > maxMessageSize {
            let error = VarlinkFramingError.messageTooLarge(limit: maxMessageSize, bufferedBytes: terminator - start)
            failure = error
            throw error
        }
        let message = Array(buffer[start..<terminator])
        start = terminator + 1
        scanned = start
        compactIfWorthwhile()
        return message
    }

    /// Drops consumed bytes once they are the bigger part of the buffer, so appends stay
    /// amortised O(1) without holding on to old messages.
    private mutating func compactIfWorthwhile() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 << 10)
            start = 0
            scanned = 0
        } else if start >= 64 << 10 && start * 2 >= buffer.count {
            buffer.removeSubrange(0..<start)
            scanned -= start
            start = 0
        }
    }
}
