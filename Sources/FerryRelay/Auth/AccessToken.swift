import FerryCrypto
import FerrySync

/// A bearer token: 32 random bytes written `fr1_` + unpadded base64url (47 characters). The relay
/// keeps only its SHA-256 (`hash`); the text is shown once, when the token is made.
public struct AccessToken: Sendable, Equatable {
    public static let prefix = "fr1_"
    public static let byteCount = 32
    /// The length of the text form.
    public static let textLength = prefix.count + 43

    public let bytes: [UInt8]

    /// A fresh token from `random` (a seam: tests pass a seeded source).
    public init(random: (Int) -> [UInt8] = SecureRandom.bytes) {
        bytes = random(AccessToken.byteCount)
    }

    /// Parses the text form; nil for anything that is not `fr1_` and 43 base64url characters
    /// encoding 32 bytes.
    public init?(text: String) {
        guard text.utf8.count == AccessToken.textLength, text.hasPrefix(AccessToken.prefix),
              let bytes = Base64.decodeURL(String(text.dropFirst(AccessToken.prefix.count))),
              bytes.count == AccessToken.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Reads `Authorization: Bearer <token>`; nil when absent or malformed.
    public init?(authorization: String?) {
        guard let header = authorization else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        self.init(text: parts[1].trimmingCharacters(in: " \t"))
    }

    public var text: String { AccessToken.prefix + Base64.encodeURL(bytes) }

    /// What the store keeps: SHA-256 of the 32 bytes.
    public var hash: [UInt8] {
        var h = SHA256()
        h.update(bytes)
        return h.finalize()
    }
}

/// A token's public id (16 lowercase hex digits): named in listings and revocations, useless to
/// authenticate with.
public enum TokenID {
    /// A fresh id from `random`.
    public static func make(random: (Int) -> [UInt8] = SecureRandom.bytes) -> String {
        Hex.encode(random(8))
    }

    /// True for exactly 16 lowercase hex digits.
    public static func isValid(_ id: String) -> Bool {
        id.utf8.count == 16 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var s = self
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
