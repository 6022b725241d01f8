/// A 128-bit identifier (an owner id, an event id, a stream id), written as 32 lowercase hex
/// digits and stored as 16 big-endian bytes.
public struct ID128: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The first 16 bytes of `bytes`, big-endian. `bytes` must hold at least 16.
    public init<C: Collection<UInt8>>(bytes: C) {
        precondition(bytes.count >= 16, "an ID128 needs 16 bytes")
        var h: UInt64 = 0, l: UInt64 = 0
        var i = 0
        for b in bytes.prefix(16) {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
            i += 1
        }
        high = h
        low = l
    }

    /// Parses 32 hex digits (either case); nil for anything else.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 32 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var i = 0
        while i < 32 {
            guard let a = ID128.nibble(utf8[i]), let b = ID128.nibble(utf8[i + 1]) else { return nil }
            bytes.append(a << 4 | b)
            i += 2
        }
        self.init(bytes: bytes)
    }

    /// The 16 big-endian bytes.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { Array($0) }
    }

    /// Appends the 16 big-endian bytes.
    public func append(to out: inout [UInt8]) {
        withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { out.append(contentsOf: $0) }
    }

    /// 32 lowercase hex digits.
    public var description: String {
        var out = [UInt8]()
        out.reserveCapacity(32)
        appendHex(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the 32 lowercase hex digits of `description`.
    public func appendHex(to out: inout [UInt8]) {
        for shift in stride(from: 124, through: 0, by: -4) {
            let word = shift >= 64 ? high >> UInt64(shift - 64) : low >> UInt64(shift)
            let nibble = UInt8(truncatingIfNeeded: word) & 0xF
            out.append(nibble < 10 ? 48 + nibble : 87 + nibble)
        }
    }

    public static func < (a: ID128, b: ID128) -> Bool { (a.high, a.low) < (b.high, b.low) }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }
}

/// The owner of a space's data: derived from the owner's root key.
public typealias OwnerID = ID128
/// One envelope's unique id (the relay deduplicates pushes by owner and event id).
public typealias EventID = ID128
/// The pseudonymous id of one record: a keyed hash of `(entity, id)` under the owner's key.
public typealias StreamID = ID128
