import FerryAPI
import FerryJSON

/// An attachment the daemon stored (the reply of `io.ferry.Store.PutAttachment`).
public struct AttachmentInfo: Sendable, Hashable {
    /// The lowercase hex SHA-256 of its bytes: what records list in `attachments`.
    public var sha256: String
    /// Its size in bytes.
    public var size: Int64

    public init(sha256: String, size: Int64) {
        self.sha256 = sha256
        self.size = size
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        sha256 = try json.string("sha256")
        size = try json.int64("size")
    }

    /// The wire form.
    public var json: JSONValue { .object(["sha256": .string(sha256), "size": .int(size)]) }
}
