import FerryJSON

/// One message between ferryd and its https helper process (`SessionHelper`): a JSON object
/// (the header) and raw bytes (the body), framed as
/// `[header length: UInt32 big-endian][body length: UInt32 big-endian][header][body]`.
///
/// ferryd sends requests: `{"id", "op": "data" | "upload" | "download", "method", "url",
/// "headers", "timeout"}` with the request body as the body, plus `"file"` (the file an upload
/// sends) or `"to"` (the file a download fills); and `{"id", "op": "cancel"}`. The helper
/// answers each request once: `{"id", "status", "headers"}` with the reply body, or
/// `{"id", "error": {"code", "message"}}` (a URLError's code and text).
struct SessionHelperFrame: Equatable, Sendable {
    var header: JSONValue
    var body: [UInt8]

    init(header: JSONValue, body: [UInt8] = []) {
        self.header = header
        self.body = body
    }

    /// The largest header: a request's URL and headers, with room to spare.
    static let maxHeaderBytes = 1 << 20
    /// The largest body: a reply the transport reads into memory (`RelayHTTP.maxReplyBytes`),
    /// and a request body (a push, far less), with room for the relay's own framing.
    static let maxBodyBytes = RelayHTTP.maxReplyBytes + (1 << 20)

    /// A frame that breaks the format: the channel it came on is closed.
    struct Malformed: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// The frame's bytes. Precondition: the header and body are within the caps (callers
    /// check the body; headers are made here, of bounded size).
    func encoded() -> [UInt8] {
        let head = JSONWriter.serialize(header)
        var out: [UInt8] = []
        out.reserveCapacity(8 + head.count + body.count)
        for length in [UInt32(head.count), UInt32(body.count)] {
            withUnsafeBytes(of: length.bigEndian) { out.append(contentsOf: $0) }
        }
        out.append(contentsOf: head)
        out.append(contentsOf: body)
        return out
    }

    /// The frame at the start of `bytes` and how many bytes it takes; nil while `bytes` hold
    /// only the start of one.
    /// - Throws: `Malformed` when a length is over its cap (known from the first 8 bytes) or
    ///   the header is not a JSON object.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(Malformed) -> (frame: SessionHelperFrame, length: Int)? {
        guard bytes.count >= 8 else { return nil }
        let start = bytes.startIndex
        func length(at offset: Int) -> Int {
            (0..<4).reduce(0) { $0 << 8 | Int(bytes[start + offset + $1]) }
        }
        let headLength = length(at: 0), bodyLength = length(at: 4)
        guard headLength <= maxHeaderBytes else { throw Malformed(description: "a header of \(headLength) bytes (at most \(maxHeaderBytes))") }
        guard bodyLength <= maxBodyBytes else { throw Malformed(description: "a body of \(bodyLength) bytes (at most \(maxBodyBytes))") }
        let total = 8 + headLength + bodyLength
        guard bytes.count >= total else { return nil }
        let headBytes = bytes[(start + 8)..<(start + 8 + headLength)]
        guard let header = try? JSONParser.parse(Array(headBytes)), header.objectValue != nil else {
            throw Malformed(description: "a header that is not a JSON object")
        }
        return (SessionHelperFrame(header: header, body: Array(bytes[(start + 8 + headLength)..<(start + total)])), total)
    }
}
