import Glibc

/// Why `HTTP1Client` got no response. `RelayHTTP.reason` puts these in the words users read
/// (the same words as for URLSession's errors); the texts here name the fault for logs and
/// tests and never hold a header, a token or a body.
enum HTTP1ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The URL is not `http://host[:port]`.
    case unsupportedURL
    /// A request header that cannot be sent as is (a line break in it).
    case invalidRequest
    /// getaddrinfo(3) found no address for `host`; `detail` is its `gai_strerror` text.
    case unresolvable(host: String, detail: String)
    /// connect(2) failed with `errno` on every address (the last one's errno).
    case connectFailed(errno: Int32)
    /// No byte was sent or received for the request's timeout (or connecting took as long).
    case timedOut
    /// A send(2) or recv(2) on the connection failed with `errno` (`sending`: while the request
    /// was being sent).
    case connectionFailed(sending: Bool, errno: Int32)
    /// The connection was closed before any byte of a response.
    case closedBeforeAnswer
    /// The connection was closed in the middle of a response.
    case closedMidAnswer
    /// The bytes received are not an HTTP/1.x response, or pass a size cap.
    case notHTTP(HTTP1ParseError)
    /// The awaiting task was cancelled.
    case cancelled
    /// A system call needed for the request itself failed (socket, socketpair, poll).
    case system(call: String, errno: Int32)
    /// A local file the request reads its body from, or writes the response's body to, failed
    /// (`call` on `path`).
    case file(call: String, path: String, errno: Int32)

    var description: String {
        switch self {
        case .unsupportedURL: "the URL is not an http:// URL"
        case .invalidRequest: "a request header holds a line break"
        case .unresolvable(let host, let detail): "\(host) does not resolve: \(detail)"
        case .connectFailed(let code): "connect: \(Self.text(code))"
        case .timedOut: "no progress within the timeout"
        case .connectionFailed(let sending, let code): "\(sending ? "send" : "recv"): \(Self.text(code))"
        case .closedBeforeAnswer: "the connection was closed before any answer"
        case .closedMidAnswer: "the connection was closed in the middle of the answer"
        case .notHTTP(let why): "the answer is not HTTP: \(why)"
        case .cancelled: "cancelled"
        case .system(let call, let code): "\(call): \(Self.text(code))"
        case .file(let call, let path, let code): "\(call) \(path): \(Self.text(code))"
        }
    }

    /// `strerror`'s text for `code`.
    static func text(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
