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
    /// The peer's address, for rate limits and logs.
    public var remoteAddress: String

    public init(method: String, target: String, authorization: String? = nil, contentLength: Int? = nil,
                contentType: String? = nil, remoteAddress: String = "127.0.0.1") {
        self.method = method
        self.target = target
        self.authorization = authorization
        self.contentLength = contentLength
        self.contentType = contentType
        self.remoteAddress = remoteAddress
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
