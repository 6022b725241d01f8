import FerryAPI
import FerryJSON

/// An attachment read back from the daemon (the reply of `io.ferry.Store.GetAttachment`):
/// its bytes inline, or the path of the daemon's read-only copy for a large one.
public struct FetchedAttachment: Sendable, Hashable {
    /// Where the bytes are.
    public enum Content: Sendable, Hashable {
        /// The bytes themselves.
        case inline([UInt8])
        /// The path of the daemon's own read-only copy; read it, never write to it.
        case file(path: String)
    }

    /// The lowercase hex SHA-256 of the bytes.
    public var sha256: String
    /// The size in bytes.
    public var size: Int64
    public var content: Content

    public init(sha256: String, size: Int64, content: Content) {
        self.sha256 = sha256
        self.size = size
        self.content = content
    }

    /// Reads the wire form, decoding inline base64 data.
    /// - Throws: `WireError` when a field is missing or of the wrong type, `data` is not
    ///   base64, or neither `data` nor `path` is present.
    public init(json: [String: JSONValue]) throws(WireError) {
        sha256 = try json.string("sha256")
        size = try json.int64("size")
        if let data = try json.optionalString("data") {
            guard let bytes = Base64.decode(data) else { throw WireError(field: "data", expected: "base64") }
            content = .inline(bytes)
        } else if let path = try json.optionalString("path") {
            content = .file(path: path)
        } else {
            throw WireError(field: "data", expected: "string (or a path)")
        }
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["sha256": .string(sha256), "size": .int(size)]
        switch content {
        case .inline(let bytes): object["data"] = .string(Base64.encode(bytes))
        case .file(let path): object["path"] = .string(path)
        }
        return .object(object)
    }
}
