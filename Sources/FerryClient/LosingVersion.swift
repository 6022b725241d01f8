import FerryAPI
import FerryJSON

/// A version of a record that lost a merge, kept so it can be seen and restored
/// (`io.ferry.Store.LosingVersion`).
public struct LosingVersion: Sendable, Hashable {
    /// The version that lost.
    public var record: WireRecord
    /// Where it came from: `"local"`, `"remote:<transport>"` or `"import:<source>"`.
    public var origin: String
    /// The stamp of the version it lost to.
    public var winner: String
    /// When it lost, in Unix milliseconds.
    public var lostAt: Int64

    public init(record: WireRecord, origin: String, winner: String, lostAt: Int64) {
        self.record = record
        self.origin = origin
        self.winner = winner
        self.lostAt = lostAt
    }

    /// Reads the wire form.
    /// - Throws: `WireError` naming the field that is missing or of the wrong type.
    public init(json: [String: JSONValue]) throws(WireError) {
        record = try json.record("record")
        origin = try json.string("origin")
        winner = try json.string("winner")
        lostAt = try json.int64("lostAt")
    }

    /// The wire form.
    public var json: JSONValue {
        .object(["record": record.json, "origin": .string(origin), "winner": .string(winner), "lostAt": .int(lostAt)])
    }
}
