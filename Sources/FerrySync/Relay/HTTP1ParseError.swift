/// Why bytes read from a relay connection are not an HTTP/1.1 response `HTTP1ResponseParser`
/// takes. The texts name the fault and never quote a header value or a body (they can carry a
/// token or a user's data).
enum HTTP1ParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The first line is not `HTTP/1.x NNN reason`.
    case badStatusLine
    /// A header line is not `name: value` (or is a folded continuation line).
    case badHeader
    /// The status line and headers (or a chunked body's trailers) are over `limit` bytes.
    case headersTooLarge(limit: Int)
    /// The body is over `limit` bytes (said by its `Content-Length`, or seen as it arrived).
    case bodyTooLarge(limit: Int)
    /// `Content-Length` is not a number, or several differ.
    case badContentLength
    /// A `Transfer-Encoding` other than `chunked`: none is asked for.
    case unsupportedTransferEncoding
    /// A chunk-size line is not hexadecimal digits (with extensions), or too long.
    case badChunkSize
    /// A chunk's data is not followed by a line end.
    case badChunkEnd
    /// The input ended before the response did.
    case truncated

    var description: String {
        switch self {
        case .badStatusLine: "its first line is not an HTTP/1.x status line"
        case .badHeader: "a header line is malformed"
        case .headersTooLarge(let limit): "its headers are over \(limit / 1024) KiB"
        case .bodyTooLarge(let limit): "its body is over \(limit >> 20) MiB"
        case .badContentLength: "its Content-Length is not one number"
        case .unsupportedTransferEncoding: "it uses a Transfer-Encoding other than chunked"
        case .badChunkSize: "a chunk size is malformed"
        case .badChunkEnd: "a chunk does not end with a line end"
        case .truncated: "it ended early"
        }
    }
}
