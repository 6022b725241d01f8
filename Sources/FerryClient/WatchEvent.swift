import FerryAPI
import FerryJSON

/// One reply of `watch` (`io.ferry.Store.Watch`).
public enum WatchEvent: Sendable, Hashable {
    /// The first event: the cursor the watch starts after. Changes that follow have greater
    /// cursors.
    case started(cursor: Int64)
    /// A change: the record at its latest version, and the change's cursor. Pass the cursor
    /// as `since` to resume after this change.
    case change(WireRecord, cursor: Int64)

    /// The cursor to resume after this event.
    public var cursor: Int64 {
        switch self {
        case .started(let cursor): return cursor
        case .change(_, let cursor): return cursor
        }
    }

    /// The changed record, or nil for `.started`.
    public var record: WireRecord? {
        if case .change(let record, _) = self { return record }
        return nil
    }

    /// Reads one reply's parameters.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        let cursor = try json.int64("cursor")
        if let record = try json.optionalRecord("record") {
            self = .change(record, cursor: cursor)
        } else {
            self = .started(cursor: cursor)
        }
    }

    /// The wire form (one reply's parameters).
    public var json: JSONValue {
        switch self {
        case .started(let cursor): return .object(["cursor": .int(cursor)])
        case .change(let record, let cursor): return .object(["cursor": .int(cursor), "record": record.json])
        }
    }
}
