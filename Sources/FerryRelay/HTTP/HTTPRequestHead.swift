/// What the relay knows of a request before its body: method, raw target and the few headers it
/// reads. Built by the server glue (or by a test), consumed by `RelayService`.
public struct HTTPRequestHead: Sendable, Equatable {
    /// The method as sent (`GET`, `POST`, ...).
    public var method: String
    /// The raw request target: path and query, not percent-decoded.
    public var target: String
    /// `Authorization`, if sent.
    public var authorization: String?
    /// `Content-Length`, if sent and a valid number.
    public var contentLength: Int?
    /// `Content-Type`, if sent.
    public var contentType: String?
    /// The peer's address (a reverse proxy's, behind one).
    public var remoteAddress: String
    /// `X-Forwarded-For`, if sent: read only from a trusted proxy (`clientAddress`).
    public var forwardedFor: String?

    public init(method: String, target: String, authorization: String? = nil, contentLength: Int? = nil,
                contentType: String? = nil, remoteAddress: String = "127.0.0.1", forwardedFor: String? = nil) {
        self.method = method
        self.target = target
        self.authorization = authorization
        self.contentLength = contentLength
        self.contentType = contentType
        self.remoteAddress = remoteAddress
        self.forwardedFor = forwardedFor
    }
}

extension HTTPRequestHead {
    /// The client's address, for rate limits and logs: the peer's, unless the peer is one of
    /// `trustedProxies` and sent `X-Forwarded-For`; then the rightmost address in it that is
    /// not itself a trusted proxy (what the proxies in front added; anything further left the
    /// client wrote and could forge). A malformed entry ends the walk at the proxy it came from.
    public func clientAddress(trusting trustedProxies: Set<String>) -> String {
        let peer = Self.normalized(remoteAddress)
        guard trustedProxies.contains(peer), let forwardedFor, forwardedFor.utf8.count <= 4096 else { return peer }
        var client = peer
        for entry in forwardedFor.split(separator: ",").reversed() {
            let address = Self.normalized(entry.trimmingCharacters(in: .whitespaces))
            guard Self.isAddress(address) else { break }
            client = address
            if !trustedProxies.contains(address) { break }
        }
        return client
    }

    /// One spelling per address, so that a configured proxy matches however the peer shows up:
    /// lowercase, and an IPv4 address mapped into IPv6 (`::ffff:127.0.0.1`, a relay listening
    /// on `[::]`) as plain IPv4.
    public static func normalized(_ address: String) -> String {
        let lower = address.lowercased()
        if lower.hasPrefix("::ffff:"), lower.dropFirst(7).contains(".") { return String(lower.dropFirst(7)) }
        return lower
    }

    /// Whether `text` looks like an IPv4 or IPv6 address (digits, hex, dots and colons; at
    /// most 45 characters): what goes in a rate limiter's key and a log line.
    public static func isAddress(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 45 else { return false }
        return text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) || $0 == 46 || $0 == 58 }
            && (text.contains(".") || text.contains(":"))
    }
}

extension HTTPRequestHead {
    /// Whether the body is declared JSON, or not declared at all: `Content-Type` absent, or
    /// `application/json` (any case, with parameters such as `; charset=utf-8`).
    public var bodyMayBeJSON: Bool {
        guard let type = contentType else { return true }
        let media = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return media.lowercased() == "application/json"
    }
}

/// A request body as the server glue collected it.
public enum RequestBody: Sendable, Equatable {
    /// No body was expected.
    case none
    /// The body in memory (bounded by the route's limit).
    case bytes([UInt8])
    /// The body spooled to a temporary file that the handler moves or removes.
    case file(path: String, size: Int)
}
