import FerryAPI
import FerryJSON

/// The daemon's state at a glance (the reply of `io.ferry.Engine.Status`).
public struct FerryStatus: Sendable, Hashable {
    /// This device's node id (16 hex digits).
    public var node: String
    /// ferryd's version.
    public var version: String
    /// `"idle"`, `"syncing"` (a transport pushes or pulls), `"backoff"` (a transport retries
    /// after a failure), `"failed"` (a transport could not start) or `"paused"`.
    public var state: String
    /// Live records, over all spaces.
    public var records: Int
    /// Deleted records (tombstones), over all spaces.
    public var tombstones: Int
    /// Outbox entries some transport still needs.
    public var outbox: Int
    /// Of `outbox`, the entries in spaces with no transport: kept for the first one added
    /// (0 from a daemon that does not say).
    public var outboxWithoutTransport: Int = 0
    /// Outbox entries some transport rejected.
    public var outboxErrors: Int
    /// The change log's last sequence number (the newest `Watch` cursor).
    public var lastSeq: Int64
    /// Attachments stored, and their total size in bytes.
    public var attachments: Int
    public var attachmentBytes: Int64
    /// Attachments a record references whose bytes have not arrived (0 from a daemon that does
    /// not say).
    public var attachmentsMissing: Int = 0
    public var spaces: [FerrySpace]
    public var transports: [TransportStatus]
    /// The latest sync failure of any transport ("NAME: kind: what happened"), if any, and when.
    public var lastError: String?
    public var lastErrorAt: Int64?
    /// When a sync last succeeded, in Unix milliseconds.
    public var lastSuccessAt: Int64?
    /// When the daemon started, in Unix milliseconds.
    public var startedAt: Int64

    public init(node: String, version: String, state: String, records: Int, tombstones: Int, outbox: Int,
                outboxErrors: Int, lastSeq: Int64, attachments: Int, attachmentBytes: Int64, spaces: [FerrySpace],
                transports: [TransportStatus], lastError: String?, lastSuccessAt: Int64?, startedAt: Int64) {
        self.node = node
        self.version = version
        self.state = state
        self.records = records
        self.tombstones = tombstones
        self.outbox = outbox
        self.outboxErrors = outboxErrors
        self.lastSeq = lastSeq
        self.attachments = attachments
        self.attachmentBytes = attachmentBytes
        self.spaces = spaces
        self.transports = transports
        self.lastError = lastError
        self.lastSuccessAt = lastSuccessAt
        self.startedAt = startedAt
    }

    /// Reads the wire form (the reply's parameters).
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        node = try json.string("node")
        version = try json.string("version")
        state = try json.string("state")
        records = try json.int("records")
        tombstones = try json.int("tombstones")
        outbox = try json.int("outbox")
        outboxWithoutTransport = json["outboxWithoutTransport"]?.intValue.map(Int.init) ?? 0
        outboxErrors = try json.int("outboxErrors")
        lastSeq = try json.int64("lastSeq")
        attachments = try json.int("attachments")
        attachmentBytes = try json.int64("attachmentBytes")
        attachmentsMissing = json["attachmentsMissing"]?.intValue.map(Int.init) ?? 0
        var spaces: [FerrySpace] = []
        for space in try json.objects("spaces") { spaces.append(try FerrySpace(json: space)) }
        self.spaces = spaces
        var transports: [TransportStatus] = []
        for transport in try json.objects("transports") { transports.append(try TransportStatus(json: transport)) }
        self.transports = transports
        lastError = try json.optionalString("lastError")
        lastErrorAt = try json.optionalInt64("lastErrorAt")
        lastSuccessAt = try json.optionalInt64("lastSuccessAt")
        startedAt = try json.int64("startedAt")
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "node": .string(node), "version": .string(version), "state": .string(state),
            "records": .int(Int64(records)), "tombstones": .int(Int64(tombstones)), "outbox": .int(Int64(outbox)), "outboxWithoutTransport": .int(Int64(outboxWithoutTransport)),
            "outboxErrors": .int(Int64(outboxErrors)), "lastSeq": .int(lastSeq),
            "attachments": .int(Int64(attachments)), "attachmentBytes": .int(attachmentBytes),
            "attachmentsMissing": .int(Int64(attachmentsMissing)),
            "spaces": .array(spaces.map(\.json)), "transports": .array(transports.map(\.json)),
            "startedAt": .int(startedAt),
        ]
        object.setIfPresent("lastError", lastError.json)
        object.setIfPresent("lastErrorAt", lastErrorAt.json)
        object.setIfPresent("lastSuccessAt", lastSuccessAt.json)
        return .object(object)
    }
}
