import FerryAPI
import FerryJSON

/// A space on this device (`io.ferry.Engine.Space`): one dataset with its own owner, keys,
/// transports and progress.
public struct FerrySpace: Sendable, Hashable {
    /// The space's name, `[a-z][a-z0-9_.-]{0,63}`.
    public var name: String
    /// `"private"` (this user's own) or `"shared"` (shared with this device).
    public var kind: String
    /// The owner's id, once the space has one.
    public var owner: String?
    /// When it was created, in Unix milliseconds.
    public var createdAt: Int64

    public init(name: String, kind: String, owner: String?, createdAt: Int64) {
        self.name = name
        self.kind = kind
        self.owner = owner
        self.createdAt = createdAt
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        name = try json.string("name")
        kind = try json.string("kind")
        owner = try json.optionalString("owner")
        createdAt = try json.int64("createdAt")
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name), "kind": .string(kind), "createdAt": .int(createdAt)]
        object.setIfPresent("owner", owner.json)
        return .object(object)
    }
}
