import Foundation

/// One HTTP/1.1 request for `HTTP1Client`: method, origin-form target (path and query, already
/// percent-encoded), headers, and an optional body sent with its `Content-Length`.
struct HTTP1Request: Sendable {
    var method: String
    /// The path and query, e.g. `/v1/owners/x/events?limit=10`.
    var target: String
    var headers: [(name: String, value: String)]
    var body: Data?
    /// The body's length when it is sent from a file instead (`HTTP1Client.transfer`).
    var contentLength: Int?
    /// Whether sending it twice does what sending it once does: only such a request is sent
    /// again on a fresh connection after a reused one failed before any answer. The idempotent
    /// methods (RFC 9110 9.2.2), unless the caller knows better (a relay push is: the relay
    /// stores each event once).
    var isIdempotent: Bool

    init(method: String, target: String, headers: [(name: String, value: String)] = [], body: Data? = nil,
         idempotent: Bool? = nil) {
        self.method = method
        self.target = target.isEmpty ? "/" : target
        self.headers = headers
        self.body = body
        isIdempotent = idempotent ?? ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method)
    }

    /// The request line and headers, with `Host` (`host` as it goes in the header) and
    /// `Content-Length` added (any given ones, and `Connection` and `Transfer-Encoding`, are
    /// left out), ending in the blank line.
    /// - Throws: `.invalidRequest` when the method, target or a header holds a line break.
    func head(host: String) throws(HTTP1ClientError) -> [UInt8] {
        var text = ""
        func line(_ part: String) throws(HTTP1ClientError) {
            // A CR or LF inside would end the line early and smuggle in another.
            guard !part.utf8.contains(where: { $0 == 0x0a || $0 == 0x0d }) else { throw .invalidRequest }
            text += part
            text += "\r\n"
        }
        try line("\(method) \(target) HTTP/1.1")
        try line("Host: \(host)")
        for (name, value) in headers where !Self.framingHeaders.contains(name.lowercased()) {
            try line("\(name): \(value)")
        }
        if let body {
            try line("Content-Length: \(body.count)")
        } else if let contentLength {
            try line("Content-Length: \(contentLength)")
        } else if method == "POST" || method == "PUT" {
            try line("Content-Length: 0")
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Headers this type writes itself, or that would change the framing it relies on.
    private static let framingHeaders: Set<String> = ["host", "content-length", "connection", "transfer-encoding"]
}
