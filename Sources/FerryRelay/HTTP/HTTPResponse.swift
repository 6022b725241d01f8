import FerryJSON

/// A response the server glue sends as is.
public struct HTTPResponse: Sendable, Equatable {
    /// Where the bytes come from.
    public enum Body: Sendable, Equatable {
        case empty
        case bytes([UInt8])
        /// A file's bytes, streamed by the glue (`size` bytes from the start).
        case file(path: String, size: Int)
        /// `size` bytes the glue reads from `source` piece by piece as the client takes them.
        case stream(size: Int, source: any BodySource)

        public static func == (a: Body, b: Body) -> Bool {
            switch (a, b) {
            case (.empty, .empty): true
            case (.bytes(let x), .bytes(let y)): x == y
            case (.file(let p, let s), .file(let q, let t)): p == q && s == t
            case (.stream(let s, let x), .stream(let t, let y)): s == t && x === y
            default: false
            }
        }
    }

    public var status: Int
    /// Extra headers (name, value), in order.
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body with `Content-Type: application/json`.
    public static func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> HTTPResponse {
        json(status, serialized: JSONWriter.serialize(value), headers: headers)
    }

    /// The same for a body already written as JSON text (a newline is added, as above).
    static func json(_ status: Int, serialized: consuming [UInt8], headers: [(String, String)] = []) -> HTTPResponse {
        var bytes = serialized
        bytes.append(10)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(bytes))
    }

    /// A text body.
    public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }

    /// The value of header `name` (case-insensitive), if set.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public static func == (a: HTTPResponse, b: HTTPResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map { "\($0.0):\($0.1)" } == b.headers.map { "\($0.0):\($0.1)" }
    }
}

/// Produces a streamed response body on demand.
public protocol BodySource: AnyObject, Sendable {
    /// Up to `maxBytes` bytes from `offset` (at least one while `offset` is below the size).
    /// - Throws: when the bytes cannot be read; the glue then cuts the connection short.
    func read(offset: Int64, maxBytes: Int) throws -> [UInt8]
}
