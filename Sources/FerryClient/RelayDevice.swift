import FerryAPI
import FerryJSON

/// A device that can reach a space owner's data on a relay (`io.ferry.Engine.RelayDevice`): one
/// live token of the owner, named by its id, never by the token.
public struct RelayDevice: Sendable, Hashable {
    /// The token's id (16 hex digits): what `relayRevoke(id:)` takes.
    public var id: String
    /// The name the device gave when it paired (or the operator gave the token).
    public var device: String
    /// `"owner"`, `"editor"` or `"viewer"`.
    public var role: String
    /// When the token was made, in Unix milliseconds.
    public var createdAt: Int64
    /// When it was last used, in Unix milliseconds (the relay updates it at most once a
    /// minute); nil if never.
    public var lastUsedAt: Int64?
    /// Whether it is the token this device uses for the space.
    public var thisDevice: Bool

    public init(id: String, device: String, role: String, createdAt: Int64, lastUsedAt: Int64?, thisDevice: Bool) {
        self.id = id
        self.device = device
        self.role = role
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.thisDevice = thisDevice
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        id = try json.string("id")
        device = try json.string("device")
        role = try json.string("role")
        createdAt = try json.int64("createdAt")
        lastUsedAt = try json.optionalInt64("lastUsedAt")
        guard let mine = json["thisDevice"]?.boolValue else { throw WireError(field: "thisDevice", expected: "bool") }
        thisDevice = mine
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["id": .string(id), "device": .string(device), "role": .string(role),
                                           "createdAt": .int(createdAt), "thisDevice": .bool(thisDevice)]
        object.setIfPresent("lastUsedAt", lastUsedAt.json)
        return .object(object)
    }
}
