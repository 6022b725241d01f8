/// Reads one HTTP/1.x response from bytes fed in pieces of any size: the status line, headers
/// (names case-insensitive), and a body framed by `Content-Length`, by `Transfer-Encoding:
/// chunked`, or by the connection's end when neither is given (then `finish()` at the end of
/// input). Interim 1xx responses are skipped; a HEAD request's response, 1xx, 204 and 304 have no
/// body.
///
/// A pure value: no I/O, no clock. It holds at most `maxHeaderBytes` of head (status line and
/// headers, interim responses before them included, and separately a chunked body's trailers) and `maxBodyBytes` of body; beyond either
/// it throws instead of growing.
struct HTTP1ResponseParser: Sendable {
    /// What the bytes fed so far make.
    enum Outcome: Sendable, Equatable {
        /// The response is not complete yet: feed more (or call `finish()` at the end of input).
        case needMore
        /// The whole response. Bytes fed after its end are counted in `unconsumed`.
        case complete(HTTP1Response)
    }

    /// The most bytes of status line and headers, and of trailers, by default.
    static let defaultMaxHeaderBytes = 64 << 10
    /// The longest chunk-size line (with extensions) taken.
    static let maxChunkLineBytes = 1024

    let maxHeaderBytes: Int
    let maxBodyBytes: Int
    /// False for a response to HEAD: its headers describe a body that is not sent.
    let expectsBody: Bool

    private enum Phase: Sendable {
        case head
        case length(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd(sawCR: Bool)
        case trailers
        case untilClose
        case done
    }

    private var phase = Phase.head
    /// The head read so far (status line and headers, up to the blank line).
    private var head: [UInt8] = []
    /// A chunk-size or trailer line read so far.
    private var line: [UInt8] = []
    private var trailerBytes = 0
    /// The bytes of the interim (1xx) responses skipped so far: they count against
    /// `maxHeaderBytes` with the final head, so a server cannot send them without end.
    private var interimBytes = 0
    private var status = 0
    private var headers: [String: String] = [:]
    private var keepAlive = true
    private var body: [UInt8] = []
    /// Body bytes already handed out by `takeBody` (they count against `maxBodyBytes`).
    private var bodyTaken = 0
    /// The body is handed out as it comes (`takeBody`), not held whole: no room is reserved
    /// for a `Content-Length` up front.
    let streamsBody: Bool
    /// How many bytes of the last input came after the response's end (a server that sent more
    /// than one response for one request: the connection is not to be used again).
    private(set) var unconsumed = 0

    /// - Parameters:
    ///   - expectsBody: false when the request was HEAD.
    ///   - maxHeaderBytes: the most bytes of head, and of trailers, taken.
    ///   - maxBodyBytes: the most bytes of body taken.
    ///   - streamsBody: the caller takes the body as it comes (`takeBody`).
    init(expectsBody: Bool = true, maxHeaderBytes: Int = Self.defaultMaxHeaderBytes, maxBodyBytes: Int, streamsBody: Bool = false) {
        self.expectsBody = expectsBody
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.streamsBody = streamsBody
    }

    /// The final response's status once its head was read whole; nil before.
    var headStatus: Int? {
        switch phase {
        case .head: nil
        default: status
        }
    }

    /// The body bytes held now (not handed out by `takeBody`).
    var heldBodyCount: Int { body.count }

    /// Hands out the body bytes read since the last call (with `streamsBody`, so that a large
    /// body need not be held whole); the response then carries only what was not taken.
    mutating func takeBody() -> [UInt8] {
        defer {
            bodyTaken += body.count
            body.removeAll(keepingCapacity: true)
        }
        return body
    }

    /// Feeds `bytes` (the next ones read).
    /// - Returns: `.complete` with the response once its last byte was fed, else `.needMore`.
    /// - Throws: `HTTP1ParseError` when the bytes are not such a response or pass a size cap;
    ///   the parser is not to be fed again after that.
    mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> Outcome {
        let count = bytes.count
        var i = 0
        if case .done = phase {
            unconsumed += count
            return .complete(response)
        }
        while i < count {
            switch phase {
            case .head:
                let byte = bytes[i]
                i += 1
                head.append(byte)
                if head.count <= Self.httpPrefix.count {
                    // Anything else is no HTTP response: said at once, not after 64 KiB.
                    guard byte == Self.httpPrefix[head.count - 1] else { throw .badStatusLine }
                } else if head.count + interimBytes > maxHeaderBytes {
                    throw .headersTooLarge(limit: maxHeaderBytes)
                }
                if byte == Self.lf && Self.endsWithBlankLine(head) { try headDone() }
            case .length(let remaining):
                let take = min(remaining, count - i)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                phase = take == remaining ? .done : .length(remaining: remaining - take)
            case .untilClose:
                let take = count - i
                guard bodyTaken + body.count + take <= maxBodyBytes else { throw .bodyTooLarge(limit: maxBodyBytes) }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<count]))
                i = count
            case .chunkSize:
                let byte = bytes[i]
                i += 1
                guard byte == Self.lf else {
                    line.append(byte)
                    guard line.count <= Self.maxChunkLineBytes else { throw .badChunkSize }
                    continue
                }
                let size = try Self.chunkSize(line)
                line.removeAll(keepingCapacity: true)
                if size == 0 {
                    phase = .trailers
                } else {
                    guard size <= maxBodyBytes - bodyTaken - body.count else { throw .bodyTooLarge(limit: maxBodyBytes) }
                    phase = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let take = min(remaining, count - i)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                phase = take == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - take)
            case .chunkDataEnd(let sawCR):
                let byte = bytes[i]
                i += 1
                if byte == Self.cr && !sawCR {
                    phase = .chunkDataEnd(sawCR: true)
                } else if byte == Self.lf {
                    phase = .chunkSize
                } else {
                    throw .badChunkEnd
                }
            case .trailers:
                let byte = bytes[i]
                i += 1
                trailerBytes += 1
                guard trailerBytes <= maxHeaderBytes else { throw .headersTooLarge(limit: maxHeaderBytes) }
                guard byte == Self.lf else {
                    line.append(byte)
                    continue
                }
                // Trailers are read past, not kept: the relay sends none it needs.
                if line.isEmpty || line == [Self.cr] { phase = .done }
                line.removeAll(keepingCapacity: true)
            case .done:
                break
            }
            if case .done = phase {
                unconsumed = count - i
                return .complete(response)
            }
        }
        return .needMore
    }

    /// Feeds `bytes`; see `parse(_:)` of a raw buffer.
    mutating func parse(_ bytes: ArraySlice<UInt8>) throws(HTTP1ParseError) -> Outcome {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(HTTP1ParseError) -> Outcome in try parse(raw) }
        }
        return try result.get()
    }

    /// The end of input: completes a body that runs to the connection's end.
    /// - Returns: the response, when it is complete at this point.
    /// - Throws: `.truncated` when the input ended before the response did.
    mutating func finish() throws(HTTP1ParseError) -> HTTP1Response {
        switch phase {
        case .untilClose:
            phase = .done
            return response
        case .done:
            return response
        default:
            throw .truncated
        }
    }

    private var response: HTTP1Response {
        HTTP1Response(status: status, headers: headers, body: body, keepAlive: keepAlive)
    }

    // MARK: The head

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")
    private static let httpPrefix = Array("HTTP/".utf8)

    /// Whether `bytes` (ending in LF) end with an empty line: LF LF or LF CR LF.
    private static func endsWithBlankLine(_ bytes: [UInt8]) -> Bool {
        let n = bytes.count
        if n >= 2 && bytes[n - 2] == lf { return true }
        return n >= 3 && bytes[n - 2] == cr && bytes[n - 3] == lf
    }

    /// Reads the complete head and picks how the body is framed.
    private mutating func headDone() throws(HTTP1ParseError) {
        var lines = head.split(separator: Self.lf, omittingEmptySubsequences: false).map { line in
            line.last == Self.cr ? line.dropLast() : line
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { throw .badStatusLine }
        let minor = try parseStatusLine(first)
        headers = [:]
        for line in lines.dropFirst() {
            let (name, value) = try Self.header(line)
            if let earlier = headers[name] { headers[name] = earlier + ", " + value } else { headers[name] = value }
        }
        let headBytes = head.count
        head.removeAll(keepingCapacity: true)
        let connection = Self.tokens(headers["connection"])
        keepAlive = minor >= 1 ? !connection.contains("close") : connection.contains("keep-alive")

        if (100..<200).contains(status) && status != 101 {
            // An interim response (100 Continue, 103 Early Hints): the real one follows.
            interimBytes += headBytes
            phase = .head
            return
        }
        if status == 101 {
            // Switching protocols was never asked for: nothing more on this connection is HTTP.
            keepAlive = false
            phase = .done
            return
        }
        if !expectsBody || status == 204 || status == 304 {
            phase = .done
            return
        }
        if let encoding = headers["transfer-encoding"] {
            guard Self.tokens(encoding) == ["chunked"] else { throw .unsupportedTransferEncoding }
            // Both framings given: chunked wins, and the connection is not trusted again.
            if headers["content-length"] != nil { keepAlive = false }
            phase = .chunkSize
            return
        }
        if let text = headers["content-length"] {
            let length = try Self.contentLength(text)
            guard length <= maxBodyBytes else { throw .bodyTooLarge(limit: maxBodyBytes) }
            if !streamsBody { body.reserveCapacity(length) }
            phase = length == 0 ? .done : .length(remaining: length)
            return
        }
        keepAlive = false
        phase = .untilClose
    }

    /// Reads `HTTP/1.x NNN reason` into `status`; returns the minor version.
    private mutating func parseStatusLine(_ line: ArraySlice<UInt8>) throws(HTTP1ParseError) -> Int {
        let b = Array(line)
        // "HTTP/1.1 200" at least; the reason phrase may be empty or missing.
        guard b.count >= 12, b[0..<5].elementsEqual(Self.httpPrefix), b[5] == UInt8(ascii: "1"), b[6] == UInt8(ascii: "."),
              let minor = Self.digit(b[7]), b[8] == UInt8(ascii: " "),
              let d0 = Self.digit(b[9]), let d1 = Self.digit(b[10]), let d2 = Self.digit(b[11]), d0 >= 1,
              b.count == 12 || b[12] == UInt8(ascii: " ") else { throw .badStatusLine }
        guard !b.dropFirst(12).contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7f }) else { throw .badStatusLine }
        status = d0 * 100 + d1 * 10 + d2
        return minor
    }

    /// A header line's name (in lower case) and value (without the whitespace around it).
    private static func header(_ line: ArraySlice<UInt8>) throws(HTTP1ParseError) -> (String, String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else { throw .badHeader }
        let name = line[line.startIndex..<colon]
        guard name.allSatisfy(isTokenByte) else { throw .badHeader }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        guard !value.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7f }) else { throw .badHeader }
        let lower = name.map { $0 >= 0x41 && $0 <= 0x5a ? $0 + 0x20 : $0 }
        return (String(decoding: lower, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// RFC 9110's `tchar`: the bytes a header name is made of.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }

    /// A comma-separated header value as lower-case tokens.
    private static func tokens(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ",").map { $0.trimmingSpaces.lowercased() }.filter { !$0.isEmpty }
    }

    /// `Content-Length`: one number (repeated copies of it, joined by commas, are the same one).
    private static func contentLength(_ text: String) throws(HTTP1ParseError) -> Int {
        var length: Int?
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let digits = part.trimmingSpaces.utf8
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { throw .badContentLength }
            let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard length == nil || length == value else { throw .badContentLength }
            length = value
        }
        guard let length else { throw .badContentLength }
        return length
    }

    /// A chunk-size line (without its LF): hexadecimal digits, optionally followed by `;`
    /// extensions, which are ignored.
    private static func chunkSize(_ line: [UInt8]) throws(HTTP1ParseError) -> Int {
        var end = line.count
        if end > 0 && line[end - 1] == cr { end -= 1 }
        var size = 0
        var digits = 0
        var i = 0
        while i < end, let value = hexDigit(line[i]) {
            // 15 hex digits stay far below Int.max; no body that large is taken anyway.
            guard digits < 15 else { throw .badChunkSize }
            size = size * 16 + value
            digits += 1
            i += 1
        }
        guard digits > 0 else { throw .badChunkSize }
        while i < end, line[i] == 0x20 || line[i] == 0x09 { i += 1 }
        guard i == end || line[i] == UInt8(ascii: ";") else { throw .badChunkSize }
        return size
    }

    private static func digit(_ b: UInt8) -> Int? {
        b >= 0x30 && b <= 0x39 ? Int(b - 0x30) : nil
    }

    private static func hexDigit(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b - 0x30)
        case 0x41...0x46: Int(b - 0x41 + 10)
        case 0x61...0x66: Int(b - 0x61 + 10)
        default: nil
        }
    }
}

private extension Substring {
    /// Without the spaces and tabs around it.
    var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}
