import FerryAPI
import FerryJSON

/// One transport's progress and health (`io.ferry.Engine.TransportStatus`).
public struct TransportStatus: Sendable, Hashable {
    /// The space the transport syncs.
    public var space: String
    /// The transport's name, unique within its space.
    public var name: String
    /// Its kind, for example `"folder"` or `"relay"`.
    public var kind: String
    /// The `push:<name>` progress value, if any.
    public var push: String?
    /// The `cursor:<name>` progress value, if any.
    public var cursor: String?
    /// Records this transport still needs.
    public var pending: Int
    /// The last failure's text, if the transport failed since its last success.
    public var lastError: String?
    /// When it last failed, in Unix milliseconds.
    public var lastErrorAt: Int64?
    /// When it last succeeded, in Unix milliseconds.
    public var lastSuccessAt: Int64?

    public init(space: String, name: String, kind: String, push: String?, cursor: String?, pending: Int,
                lastError: String?, lastErrorAt: Int64?, lastSuccessAt: Int64?) {
        self.space = space
        self.name = name
        self.kind = kind
        self.push = push
        self.cursor = cursor
        self.pending = pending
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.lastSuccessAt = lastSuccessAt
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        space = try json.string("space")
        name = try json.string("name")
        kind = try json.string("kind")
        push = try json.optionalString("push")
        cursor = try json.optionalString("cursor")
        pending = try json.int("pending")
        lastError = try json.optionalString("lastError")
        lastErrorAt = try json.optionalInt64("lastErrorAt")
        lastSuccessAt = try json.optionalInt64("lastSuccessAt")
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "space": .string(space), "name": .string(name), "kind": .string(kind), "pending": .int(Int64(pending)),
        ]
        object.setIfPresent("push", push.json)
        object.setIfPresent("cursor", cursor.json)
        object.setIfPresent("lastError", lastError.json)
        object.setIfPresent("lastErrorAt", lastErrorAt.json)
        object.setIfPresent("lastSuccessAt", lastSuccessAt.json)
        return .object(object)
    }
}
