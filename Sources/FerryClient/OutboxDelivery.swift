import FerryAPI
import FerryJSON

/// One transport's state of an outbox entry (`io.ferry.Engine.Delivery`).
public struct OutboxDelivery: Sendable, Hashable {
    /// The transport's name.
    public var transport: String
    /// The stamp the transport acknowledged, if it did.
    public var acknowledged: String?
    /// The transport's error text, when it rejected the entry.
    public var error: String?
    /// The stamp of the version it rejected.
    public var errorHlc: String?
    /// Why the transport takes nothing now (its pushes fail as a whole), while it waits for this
    /// entry; nil while it takes entries.
    public var held: String?

    public init(transport: String, acknowledged: String?, error: String?, errorHlc: String?, held: String? = nil) {
        self.transport = transport
        self.acknowledged = acknowledged
        self.error = error
        self.errorHlc = errorHlc
        self.held = held
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        transport = try json.string("transport")
        acknowledged = try json.optionalString("acknowledged")
        error = try json.optionalString("error")
        errorHlc = try json.optionalString("errorHlc")
        held = try json.optionalString("held")
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["transport": .string(transport)]
        object.setIfPresent("acknowledged", acknowledged.json)
        object.setIfPresent("error", error.json)
        object.setIfPresent("errorHlc", errorHlc.json)
        object.setIfPresent("held", held.json)
        return .object(object)
    }
}
