import FerryAPI
import FerryJSON

/// One page of `list` (the reply of `io.ferry.Store.List`).
public struct ListPage: Sendable, Hashable {
    /// The records of this page, in the order asked for.
    public var records: [WireRecord]
    /// Pass as `after` to read the following page; nil on the last page.
    public var next: String?

    public init(records: [WireRecord], next: String?) {
        self.records = records
        self.next = next
    }

    /// Reads the wire form (the reply's parameters).
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        guard let items = json["records"]?.arrayValue else { throw WireError(field: "records", expected: "array") }
        var records: [WireRecord] = []
        records.reserveCapacity(items.count)
        for item in items { records.append(try WireRecord(json: item)) }
        self.records = records
        next = try json.optionalString("next")
    }

    /// The wire form.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["records": .array(records.map(\.json))]
        object.setIfPresent("next", next.json)
        return .object(object)
    }
}
