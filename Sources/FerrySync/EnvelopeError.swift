/// Why bytes could not be read as an envelope or a frame, or an envelope could not be opened.
public enum EnvelopeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Fewer bytes than the format needs.
    case truncated(needed: Int, available: Int)
    /// A format version this build does not read.
    case unsupportedVersion(UInt8)
    /// A field holds a value the format does not allow.
    case malformed(String)
    /// A length field exceeds its limit.
    case tooLarge(size: Int, limit: Int)
    /// A frame's checksum does not match its bytes.
    case checksumMismatch
    /// The envelope belongs to another owner than the key offered.
    case wrongOwner(expected: OwnerID, found: OwnerID)
    /// Authentication failed: the wrong key, or the header or ciphertext were changed.
    case authenticationFailed
    /// The opened body is not a valid record body.
    case invalidBody(String)

    public var description: String {
        switch self {
        case .truncated(let needed, let available): "truncated: needs \(needed) bytes, has \(available)"
        case .unsupportedVersion(let v): "unsupported envelope format version \(v) (this build reads version \(EnvelopeHeader.formatVersion)); update ferryd"
        case .malformed(let what): "malformed: \(what)"
        case .tooLarge(let size, let limit): "\(size) bytes exceeds the limit of \(limit)"
        case .checksumMismatch: "the frame's checksum does not match (corrupted bytes)"
        case .wrongOwner(let expected, let found): "the envelope belongs to owner \(found), this space's owner is \(expected)"
        case .authenticationFailed: "the envelope does not authenticate: a wrong owner key, or tampered header or ciphertext"
        case .invalidBody(let why): "the sealed body is not a valid record: \(why)"
        }
    }
}
