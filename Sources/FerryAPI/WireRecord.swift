import FerryJSON

/// A record as it travels over the API (`io.ferry.Store.Record`).
///
/// Two records are equal when their fields are, the payload compared as parsed: `payloadText`
/// (a spelling of the payload, present only on records read with it) takes no part, so a record
/// read from the daemon equals the same record built here.
public struct WireRecord: Sendable, Hashable {
    public var space: String
    public var entity: String
    public var id: String
    /// The version stamp's text.
    public var hlc: String
    public var deleted: Bool
    /// The JSON object; nil for tombstones. As a `JSONValue` it keeps integers to 64 bits and
    /// other numbers as doubles; `payloadText` has it exactly.
    public var payload: [String: JSONValue]?
    /// The payload's JSON text exactly as stored (byte for byte as it was written), when the
    /// record was read with it (`FerryClient` reads records so); nil for tombstones and
    /// records made here. Not part of `json`.
    public var payloadText: String?
    public var attachments: [String]
    /// The change-log sequence number of the change that made this version current.
    public var seq: Int64

    public init(space: String, entity: String, id: String, hlc: String, deleted: Bool,
                payload: [String: JSONValue]?, attachments: [String], seq: Int64) {
        self.space = space
        self.entity = entity
        self.id = id
        self.hlc = hlc
        self.deleted = deleted
        self.payload = payload
        self.attachments = attachments
        self.seq = seq
    }

    public static func == (a: WireRecord, b: WireRecord) -> Bool {
        a.space == b.space && a.entity == b.entity && a.id == b.id && a.hlc == b.hlc && a.deleted == b.deleted
            && a.payload == b.payload && a.attachments == b.attachments && a.seq == b.seq
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(space)
        hasher.combine(entity)
        hasher.combine(id)
        hasher.combine(hlc)
        hasher.combine(deleted)
        hasher.combine(payload)
        hasher.combine(attachments)
        hasher.combine(seq)
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "space": .string(space), "entity": .string(entity), "id": .string(id), "hlc": .string(hlc),
            "deleted": .bool(deleted), "attachments": .array(attachments.map(JSONValue.string)), "seq": .int(seq),
        ]
        if let payload { object["payload"] = .object(payload) }
        return .object(object)
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: JSONValue) throws(WireError) {
        guard let o = json.objectValue else { throw WireError(field: "record", expected: "object") }
        space = try o.string("space")
        entity = try o.string("entity")
        id = try o.string("id")
        hlc = try o.string("hlc")
        guard let deleted = o["deleted"]?.boolValue else { throw WireError(field: "deleted", expected: "bool") }
        self.deleted = deleted
        switch o["payload"] {
        case nil, .null?: payload = nil
        case .object(let p)?: payload = p
        default: throw WireError(field: "payload", expected: "object")
        }
        attachments = try o.strings("attachments")
        guard let seq = o["seq"]?.intValue else { throw WireError(field: "seq", expected: "int") }
        self.seq = seq
    }
}

/// A reply field that is missing or has the wrong type.
public struct WireError: Error, Sendable, Hashable, CustomStringConvertible {
    public var field: String
    public var expected: String
    public init(field: String, expected: String) {
        self.field = field
        self.expected = expected
    }
    public var description: String { "malformed reply: field \(field) should be \(expected)" }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// A required string field.
    public func string(_ key: String) throws(WireError) -> String {
        guard let s = self[key]?.stringValue else { throw WireError(field: key, expected: "string") }
        return s
    }

    /// An optional string field (absent or null is nil).
    public func optionalString(_ key: String) throws(WireError) -> String? {
        switch self[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw WireError(field: key, expected: "string")
        }
    }

    /// A string array field; absent is empty.
    public func strings(_ key: String) throws(WireError) -> [String] {
        switch self[key] {
        case nil, .null?: return []
        case .array(let items)?:
            var out: [String] = []
            out.reserveCapacity(items.count)
            for item in items {
                guard let s = item.stringValue else { throw WireError(field: key, expected: "array of strings") }
                out.append(s)
            }
            return out
        default: throw WireError(field: key, expected: "array of strings")
        }
    }
}
