import FerryJSON

/// One record of a `putMany` batch (`io.ferry.Store.PutItem`).
public struct PutItem: Sendable, Hashable {
    /// The entity kind, `[a-z][a-z0-9_.-]{0,63}`.
    public var entity: String
    /// The record's id; nil makes a new record with a new upper-case UUID.
    public var id: String?
    /// The record's JSON object.
    public var payload: [String: JSONValue]
    /// Lowercase hex SHA-256 of attachments already stored with `putAttachment`; nil keeps
    /// the daemon's default (none).
    public var attachments: [String]?

    public init(entity: String, id: String? = nil, payload: [String: JSONValue], attachments: [String]? = nil) {
        self.entity = entity
        self.id = id
        self.payload = payload
        self.attachments = attachments
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["entity": .string(entity), "payload": .object(payload)]
        object.setIfPresent("id", id.json)
        if let attachments { object["attachments"] = .array(attachments.map(JSONValue.string)) }
        return .object(object)
    }
}
