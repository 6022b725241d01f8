import FerryAPI
import FerryJSON

/// A record some transport still needs (`io.ferry.Engine.OutboxEntry`).
public struct OutboxEntry: Sendable, Hashable {
    public var space: String
    public var entity: String
    public var id: String
    /// The stamp of the record's current version (the one that will be sent).
    public var hlc: String
    /// The change-log sequence number of that version.
    public var seq: Int64
    /// When the entry was queued, in Unix milliseconds.
    public var queuedAt: Int64
    /// Each transport's state of this entry.
    public var deliveries: [OutboxDelivery]

    public init(space: String, entity: String, id: String, hlc: String, seq: Int64, queuedAt: Int64,
                deliveries: [OutboxDelivery]) {
        self.space = space
        self.entity = entity
        self.id = id
        self.hlc = hlc
        self.seq = seq
        self.queuedAt = queuedAt
        self.deliveries = deliveries
    }

    /// True when some transport rejected the entry.
    public var hasError: Bool { deliveries.contains { $0.error != nil } }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        space = try json.string("space")
        entity = try json.string("entity")
        id = try json.string("id")
        hlc = try json.string("hlc")
        seq = try json.int64("seq")
        queuedAt = try json.int64("queuedAt")
        var deliveries: [OutboxDelivery] = []
        for delivery in try json.objects("deliveries") { deliveries.append(try OutboxDelivery(json: delivery)) }
        self.deliveries = deliveries
    }

    /// The wire form.
    public var json: JSONValue {
        .object([
            "space": .string(space), "entity": .string(entity), "id": .string(id), "hlc": .string(hlc),
            "seq": .int(seq), "queuedAt": .int(queuedAt), "deliveries": .array(deliveries.map(\.json)),
        ])
    }
}
