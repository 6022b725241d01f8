import Testing
@testable import FerrySync

/// The relay client's response parser: every valid response gives the same result however its
/// bytes are split (at every byte position, and one byte at a time); malformed and over-cap
/// input gives its typed error, wherever it is split.
@Suite struct HTTP1ResponseParserTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var bytes: [UInt8]
        var expected: HTTP1Response
        /// The body runs to the end of input: `finish()` completes it.
        var untilClose = false
        var expectsBody = true
        var description: String { name }
    }

    static func response(_ status: Int, _ headers: [String: String], _ body: String, keepAlive: Bool = true) -> HTTP1Response {
        HTTP1Response(status: status, headers: headers, body: Array(body.utf8), keepAlive: keepAlive)
    }

    static let valid: [Case] = [
        Case(name: "content-length",
             bytes: Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"events\":[]}".utf8),
             expected: response(200, ["content-type": "application/json", "content-length": "13"], #"{"events":[]}"#)),
        Case(name: "chunked with extensions and trailers",
             bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\nA \r\n, world!!!\r\n0\r\nX-Trailer: t\r\n\r\n".utf8),
             expected: response(200, ["transfer-encoding": "chunked"], "hello, world!!!")),
        Case(name: "chunked, upper-case hex, no trailers",
             bytes: Array("HTTP/1.1 201 Created\r\ntransfer-encoding: Chunked\r\n\r\nB\r\nhello world\r\n0\r\n\r\n".utf8),
             expected: response(201, ["transfer-encoding": "Chunked"], "hello world")),
        Case(name: "body to the connection's end",
             bytes: Array("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome body\r\nwith lines".utf8),
             expected: response(200, ["content-type": "text/plain"], "some body\r\nwith lines", keepAlive: false), untilClose: true),
        Case(name: "empty body to the connection's end",
             bytes: Array("HTTP/1.1 200 OK\r\n\r\n".utf8),
             expected: response(200, [:], "", keepAlive: false), untilClose: true),
        Case(name: "HEAD: the length is the unsent body's",
             bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n".utf8),
             expected: response(200, ["content-length": "1234"], ""), expectsBody: false),
        Case(name: "204 has no body", bytes: Array("HTTP/1.1 204 No Content\r\n\r\n".utf8), expected: response(204, [:], "")),
        Case(name: "304 has no body", bytes: Array("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n".utf8),
             expected: response(304, ["etag": "\"x\""], "")),
        Case(name: "interim 100 and 103 skipped",
             bytes: Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8),
             expected: response(200, ["content-length": "2"], "ok")),
        Case(name: "repeated and mixed-case headers, Connection: close",
             bytes: Array("HTTP/1.1 429 Too Many Requests\r\nRetry-After:  7 \r\nX-A: 1\r\nx-a: 2\r\nCONNECTION: Close\r\nContent-Length: 0\r\n\r\n".utf8),
             expected: response(429, ["retry-after": "7", "x-a": "1, 2", "connection": "Close", "content-length": "0"], "", keepAlive: false)),
        Case(name: "HTTP/1.0 with keep-alive",
             bytes: Array("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc".utf8),
             expected: response(200, ["connection": "keep-alive", "content-length": "3"], "abc")),
        Case(name: "bare LF line ends, no reason phrase",
             bytes: Array("HTTP/1.1 404\nContent-Length: 4\n\nnope".utf8),
             expected: response(404, ["content-length": "4"], "nope")),
        Case(name: "repeated equal Content-Length", bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nhi".utf8),
             expected: response(200, ["content-length": "2, 2"], "hi")),
        Case(name: "chunked and Content-Length: chunked wins, the connection is not reused",
             bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n".utf8),
             expected: response(200, ["content-length": "99", "transfer-encoding": "chunked"], "hi", keepAlive: false)),
        Case(name: "binary body", bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n".utf8) + [0, 0x0d, 0x0a, 0xff],
             expected: HTTP1Response(status: 200, headers: ["content-length": "4"], body: [0, 0x0d, 0x0a, 0xff], keepAlive: true)),
    ]

    /// Feeds `pieces` in order; the outcome of the last, and `finish()`'s when the body runs to
    /// the end.
    static func parse(_ pieces: [ArraySlice<UInt8>], _ c: Case, maxHeaderBytes: Int = HTTP1ResponseParser.defaultMaxHeaderBytes,
                      maxBodyBytes: Int = 1 << 20) throws(HTTP1ParseError) -> HTTP1Response? {
        var parser = HTTP1ResponseParser(expectsBody: c.expectsBody, maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes)
        for (i, piece) in pieces.enumerated() {
            let outcome = try parser.parse(piece)
            if case .complete(let response) = outcome {
                // Complete only with the last byte: never early.
                #expect(i == pieces.count - 1 || pieces[(i + 1)...].allSatisfy(\.isEmpty), "\(c): complete before its end")
                #expect(parser.unconsumed == 0)
                return response
            }
        }
        return c.untilClose ? try parser.finish() : nil
    }

    @Test(arguments: valid) func aValidResponseSplitAtEveryByteParsesTheSame(_ c: Case) throws {
        for split in 0...c.bytes.count {
            let response = try Self.parse([c.bytes[..<split], c.bytes[split...]], c)
            #expect(response == c.expected, "\(c) split at \(split)")
        }
        let bytewise = try Self.parse(c.bytes.indices.map { c.bytes[$0...$0] }, c)
        #expect(bytewise == c.expected, "\(c) one byte at a time")
    }

    @Test(arguments: valid.filter { !$0.untilClose }) func aResponseCutShortIsTruncated(_ c: Case) throws {
        for end in 0..<c.bytes.count {
            var parser = HTTP1ResponseParser(expectsBody: c.expectsBody, maxBodyBytes: 1 << 20)
            #expect(try parser.parse(c.bytes[..<end]) == .needMore, "\(c) cut at \(end)")
            #expect(throws: HTTP1ParseError.truncated) { try parser.finish() }
        }
    }

    @Test func bytesAfterTheResponseAreCounted() throws {
        var parser = HTTP1ResponseParser(maxBodyBytes: 100)
        let outcome = try parser.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1".utf8)[...])
        #expect(outcome == .complete(Self.response(200, ["content-length": "2"], "hi")))
        #expect(parser.unconsumed == 8)
    }

    struct Bad: Sendable, CustomStringConvertible {
        var name: String
        var bytes: [UInt8]
        var error: HTTP1ParseError
        var maxHeaderBytes = HTTP1ResponseParser.defaultMaxHeaderBytes
        var maxBodyBytes = 1 << 20
        var description: String { name }
    }

    static let malformed: [Bad] = [
        Bad(name: "not HTTP at all", bytes: Array("SSH-2.0-OpenSSH_9.6\r\n".utf8), error: .badStatusLine),
        Bad(name: "TLS alert bytes", bytes: [0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46], error: .badStatusLine),
        Bad(name: "HTTP/2", bytes: Array("HTTP/2 200\r\n\r\n".utf8), error: .badStatusLine),
        Bad(name: "status not a number", bytes: Array("HTTP/1.1 2x0 OK\r\n\r\n".utf8), error: .badStatusLine),
        Bad(name: "status of 2 digits", bytes: Array("HTTP/1.1 20 OK\r\n\r\n".utf8), error: .badStatusLine),
        Bad(name: "status of 4 digits", bytes: Array("HTTP/1.1 2000 OK\r\n\r\n".utf8), error: .badStatusLine),
        Bad(name: "status line cut", bytes: Array("HTTP/1.1\r\n\r\n".utf8), error: .badStatusLine),
        Bad(name: "header without colon", bytes: Array("HTTP/1.1 200 OK\r\nBad Header\r\n\r\n".utf8), error: .badHeader),
        Bad(name: "space before colon", bytes: Array("HTTP/1.1 200 OK\r\nName : v\r\n\r\n".utf8), error: .badHeader),
        Bad(name: "folded header", bytes: Array("HTTP/1.1 200 OK\r\nA: 1\r\n  more\r\n\r\n".utf8), error: .badHeader),
        Bad(name: "empty header name", bytes: Array("HTTP/1.1 200 OK\r\n: v\r\n\r\n".utf8), error: .badHeader),
        Bad(name: "control byte in a value", bytes: Array("HTTP/1.1 200 OK\r\nA: x\u{1}y\r\n\r\n".utf8), error: .badHeader),
        Bad(name: "Content-Length not a number", bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n".utf8), error: .badContentLength),
        Bad(name: "negative Content-Length", bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n".utf8), error: .badContentLength),
        Bad(name: "two Content-Lengths", bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n".utf8),
            error: .badContentLength),
        Bad(name: "gzip transfer coding", bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".utf8),
            error: .unsupportedTransferEncoding),
        Bad(name: "chunk size not hex", bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8), error: .badChunkSize),
        Bad(name: "chunk size empty", bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n".utf8), error: .badChunkSize),
        Bad(name: "negative chunk size", bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n".utf8), error: .badChunkSize),
        Bad(name: "chunk size of 16 digits", bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n".utf8),
            error: .badChunkSize),
        Bad(name: "chunk-size line too long",
            bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;\(String(repeating: "x", count: 2000))\r\n".utf8),
            error: .badChunkSize),
        Bad(name: "chunk data not ended by a line end",
            bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n".utf8), error: .badChunkEnd),
        Bad(name: "head over the cap", bytes: Array("HTTP/1.1 200 OK\r\nX-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n".utf8),
            error: .headersTooLarge(limit: 64 << 10)),
        Bad(name: "head over a small cap", bytes: Array("HTTP/1.1 200 OK\r\nX: \(String(repeating: "a", count: 100))\r\n\r\n".utf8),
            error: .headersTooLarge(limit: 64), maxHeaderBytes: 64),
        Bad(name: "interim responses without end",
            bytes: Array((String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 4) + "HTTP/1.1 200 OK\r\n\r\n").utf8),
            error: .headersTooLarge(limit: 64), maxHeaderBytes: 64),
        Bad(name: "trailers over the cap",
            bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: \(String(repeating: "a", count: 100))\r\n\r\n".utf8),
            error: .headersTooLarge(limit: 64), maxHeaderBytes: 64),
        Bad(name: "Content-Length over the cap", bytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n".utf8),
            error: .bodyTooLarge(limit: 100), maxBodyBytes: 100),
        Bad(name: "chunks over the cap",
            bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n\(String(repeating: "a", count: 64))\r\n30\r\n".utf8),
            error: .bodyTooLarge(limit: 100), maxBodyBytes: 100),
        Bad(name: "body to the end over the cap", bytes: Array("HTTP/1.1 200 OK\r\n\r\n\(String(repeating: "a", count: 101))".utf8),
            error: .bodyTooLarge(limit: 100), maxBodyBytes: 100),
    ]

    /// Every position of a short input; of a long one (a head over 64 KiB), every 997th and the
    /// last 100, which keeps the test quick.
    static func splits(_ count: Int) -> [Int] {
        count <= 4096 ? Array(0...count) : Array(stride(from: 0, to: count - 100, by: 997)) + Array((count - 100)...count)
    }

    @Test(arguments: malformed) func malformedInputGivesItsErrorWhereverSplit(_ bad: Bad) {
        for split in Self.splits(bad.bytes.count) {
            var parser = HTTP1ResponseParser(maxHeaderBytes: bad.maxHeaderBytes, maxBodyBytes: bad.maxBodyBytes)
            #expect(throws: bad.error, "\(bad) split at \(split)") {
                _ = try parser.parse(bad.bytes[..<split])
                _ = try parser.parse(bad.bytes[split...])
                // Not complete by here: the error is not one of these bytes.
                Issue.record("\(bad) split at \(split): no error")
            }
        }
    }

    /// Not HTTP is said at the first byte that shows it, not after 64 KiB of waiting.
    @Test func notHTTPIsSeenAtItsFirstByte() {
        var parser = HTTP1ResponseParser(maxBodyBytes: 100)
        #expect(throws: HTTP1ParseError.badStatusLine) { _ = try parser.parse(Array("HTTX".utf8)[...]) }
    }

    /// The errors' texts say what is wrong and never quote the bytes (a header could hold a token).
    @Test func errorTextsQuoteNothing() {
        var parser = HTTP1ResponseParser(maxBodyBytes: 100)
        do {
            _ = try parser.parse(Array("HTTP/1.1 200 OK\r\nAuthorization: Bearer SECRET\u{1}\r\n\r\n".utf8)[...])
            Issue.record("no error")
        } catch {
            #expect(error == .badHeader && !error.description.contains("SECRET"), "\(error)")
        }
    }
}
