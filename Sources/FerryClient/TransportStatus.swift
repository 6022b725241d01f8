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
    /// The folder's path or the relay's URL.
    public var location: String?
    /// The sync loops' state: `starting`, `idle`, `pushing`, `pulling`, `backoff`, `paused`,
    /// `failed`.
    public var state: String?
    /// The last failure's kind (`unavailable`, `unauthorized`, `quota`, ...).
    public var lastErrorKind: String?
    /// When the next retry is due while backing off (Unix milliseconds).
    public var retryAt: Int64?
    /// What is wrong now: the failure of each sync loop that has not succeeded since
    /// ("push: …", "pull: …"); nil while both work. `lastError` is the latest failure, put
    /// right or not.
    public var problem: String?
    /// Envelopes pushed, pulled and refused since the daemon started.
    public var pushed: Int64?
    public var pulled: Int64?
    public var refused: Int64?
    /// The last refused envelope or unreadable frame, with why.
    public var lastRefusal: String?
    /// The transport's own account (`ok`, `unavailable`, `read-only`, ...), its message and
    /// figures.
    public var transportState: String?
    public var transportMessage: String?
    public var details: [String: String]

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
        self.details = [:]
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
        location = try json.optionalString("location")
        state = try json.optionalString("state")
        lastErrorKind = try json.optionalString("lastErrorKind")
        retryAt = try json.optionalInt64("retryAt")
        problem = try json.optionalString("problem")
        pushed = try json.optionalInt64("pushed")
        pulled = try json.optionalInt64("pulled")
        refused = try json.optionalInt64("refused")
        lastRefusal = try json.optionalString("lastRefusal")
        transportState = try json.optionalString("transportState")
        transportMessage = try json.optionalString("transportMessage")
        var details: [String: String] = [:]
        if case .object(let o)? = json["details"] {
            for (k, v) in o { if let text = v.stringValue { details[k] = text } }
        }
        self.details = details
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
        object.setIfPresent("location", location.json)
        object.setIfPresent("state", state.json)
        object.setIfPresent("lastErrorKind", lastErrorKind.json)
        object.setIfPresent("retryAt", retryAt.json)
        object.setIfPresent("problem", problem.json)
        object.setIfPresent("pushed", pushed.json)
        object.setIfPresent("pulled", pulled.json)
        object.setIfPresent("refused", refused.json)
        object.setIfPresent("lastRefusal", lastRefusal.json)
        object.setIfPresent("transportState", transportState.json)
        object.setIfPresent("transportMessage", transportMessage.json)
        if !details.isEmpty { object["details"] = .object(details.mapValues { .string($0) }) }
        return .object(object)
    }
}
