/// One HTTP/1.x response as `HTTP1ResponseParser` read it: its status, its headers (names in
/// lower case; a repeated header's values joined with ", ", as URLSession gives them), the body
/// with any chunked framing removed, and whether the connection may carry another request.
struct HTTP1Response: Sendable, Equatable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    /// False when the server said `Connection: close` (or is HTTP/1.0 without keep-alive), or
    /// the body ran to the connection's end: the connection is done after this response.
    var keepAlive: Bool
}
