/// One record version as it leaves the device: a clear header and a sealed body.
///
/// Binary form: `header (76 bytes) | body length u32 | body`, where the body is
/// `nonce (24) | XChaCha20-Poly1305 ciphertext with its 16-byte tag` of the record's
/// entity, id, payload and attachment references, with the header bytes as associated data.
/// `EnvelopeSealer` makes and opens bodies; this type only carries and (de)serializes them.
public struct Envelope: Sendable, Hashable {
    /// The largest sealed body accepted: a 1 MiB payload plus its entity, id, attachment
    /// references and the sealing overhead fit well within it.
    public static let maxBodyBytes = 4 << 20
    /// The largest binary envelope.
    public static let maxEncodedBytes = EnvelopeHeader.encodedSize + 4 + maxBodyBytes

    public var header: EnvelopeHeader
    /// `nonce | ciphertext` (opaque here).
    public var body: [UInt8]

    public init(header: EnvelopeHeader, body: [UInt8]) {
        self.header = header
        self.body = body
    }

    /// The size of the binary form.
    public var encodedSize: Int { EnvelopeHeader.encodedSize + 4 + body.count }

    /// The binary form.
    public var encoded: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(encodedSize)
        append(to: &out)
        return out
    }

    public func append(to out: inout [UInt8]) {
        header.append(to: &out)
        BigEndian.append(UInt32(body.count), to: &out)
        out.append(contentsOf: body)
    }

    /// Reads exactly one envelope from `bytes` (nothing may follow it). Pure, size-capped.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(EnvelopeError) -> Envelope {
        let header = try EnvelopeHeader.decode(bytes)
        let lengthAt = bytes.startIndex + EnvelopeHeader.encodedSize
        guard bytes.count >= EnvelopeHeader.encodedSize + 4 else {
            throw .truncated(needed: EnvelopeHeader.encodedSize + 4, available: bytes.count)
        }
        let length = Int(BigEndian.uint32(bytes, at: lengthAt))
        guard length <= maxBodyBytes else { throw .tooLarge(size: length, limit: maxBodyBytes) }
        let total = EnvelopeHeader.encodedSize + 4 + length
        guard bytes.count >= total else { throw .truncated(needed: total, available: bytes.count) }
        guard bytes.count == total else { throw .malformed("\(bytes.count - total) byte(s) after the envelope") }
        return Envelope(header: header, body: Array(bytes[(lengthAt + 4)...]))
    }

    public static func decode(_ bytes: [UInt8]) throws(EnvelopeError) -> Envelope {
        try decode(bytes[...])
    }
}
