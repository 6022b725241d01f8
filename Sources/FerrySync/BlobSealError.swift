/// Why a blob could not be sealed or opened. Every case names the file concerned.
public enum BlobSealError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed on `path`; `errno` is its error number.
    case io(call: String, path: String, errno: Int32)
    /// The file does not start with the sealed-blob magic `FERRYBLB`.
    case notASealedBlob(path: String)
    /// A sealed-blob format version this build does not read.
    case unsupportedVersion(path: String, version: UInt8)
    /// The sealed blob ends before its final chunk.
    case truncated(path: String)
    /// A chunk does not authenticate: another owner's blob, a blob stored under another key, or
    /// changed bytes.
    case authenticationFailed(path: String)
    /// Bytes follow the final chunk.
    case trailingData(path: String)
    /// The plaintext is larger than allowed.
    case tooLarge(path: String, limit: Int64)
    /// The plaintext's SHA-256 is not the one expected.
    case contentMismatch(path: String, expected: String, actual: String)
    /// The expected SHA-256 is not 64 lowercase hex digits.
    case invalidSHA256(String)

    public var description: String {
        switch self {
        case .io(let call, let path, let errno):
            "\(call) \(path) failed: \(BlobFile.errorText(errno))"
        case .notASealedBlob(let path):
            "\(path) is not a sealed Ferry blob (no FERRYBLB header)"
        case .unsupportedVersion(let path, let version):
            "\(path) is a sealed blob of format version \(version), which this build does not read; update ferryd"
        case .truncated(let path):
            "the sealed blob \(path) is truncated (it ends before its final chunk); fetch it again"
        case .authenticationFailed(let path):
            "the sealed blob \(path) does not authenticate: it belongs to another owner or attachment, or was changed; fetch it again"
        case .trailingData(let path):
            "the sealed blob \(path) has bytes after its final chunk; fetch it again"
        case .tooLarge(let path, let limit):
            "the blob \(path) holds more than \(limit) bytes, the attachment size limit"
        case .contentMismatch(let path, let expected, let actual):
            "the blob \(path) holds an attachment with SHA-256 \(actual), expected \(expected)"
        case .invalidSHA256(let text):
            "\(text.prefix(80).debugDescription) is not a SHA-256 (64 lowercase hex digits)"
        }
    }
}
