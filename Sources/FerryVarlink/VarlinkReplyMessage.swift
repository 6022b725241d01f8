import FerryJSON

/// A reply as sent on the wire: `{"parameters": {...}, "continues": true}` or
/// `{"error": "iface.Error", "parameters": {...}}`.
public struct VarlinkReplyMessage: Sendable, Hashable {
    public var parameters: [String: JSONValue]
    /// More replies to the same call follow.
    public var continues: Bool
    /// Set when the call failed: the fully qualified error name.
    public var error: String?

    public init(parameters: [String: JSONValue] = [:], continues: Bool = false, error: String? = nil) {
        self.parameters = parameters
        self.continues = continues
        self.error = error
    }

    /// An error reply carrying `error`'s name and parameters, each string in them cut at
    /// `maxErrorString` bytes (ending in "…"): an error may echo what the call sent, and a
    /// call can send megabytes, but the reply must stay small (within any peer's message cap).
    public init(_ error: VarlinkError) {
        self.init(parameters: error.parameters.mapValues(Self.capped), continues: false, error: error.name)
    }

    /// The most UTF-8 bytes of any string in an error reply's parameters.
    public static let maxErrorString = 1024

    private static func capped(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let s) where s.utf8.count > maxErrorString:
            // Whole characters only, leaving room for the three bytes of "…".
            var end = s.startIndex, bytes = 0
            for index in s.indices {
                bytes += s[index].utf8.count
                if bytes > maxErrorString - 3 { break }
                end = s.index(after: index)
            }
            return .string(s[..<end] + "…")
        case .array(let items): return .array(items.map(capped))
        case .object(let members): return .object(members.mapValues(capped))
        default: return value
        }
    }

    /// The error this reply carries, if it is an error reply.
    public var varlinkError: VarlinkError? {
        error.map { VarlinkError($0, parameters: parameters) }
    }

    /// Decodes one framed message (without its NUL).
    /// - Throws: `VarlinkMessageError` for non-JSON, non-objects, or wrongly typed fields.
    public static func decode(
        _ bytes: [UInt8], limits: JSONLimits = .default
    ) throws(VarlinkMessageError) -> VarlinkReplyMessage {
        try decode(bytes, limits: limits, capturing: []).message
    }

    /// Decodes one framed message (without its NUL), leaving the objects at `paths` (from the
    /// message's top level, so starting with `parameters`) as text: they stand as
    /// placeholders in `parameters` (see `JSONCapture`).
    static func decode(
        _ bytes: [UInt8], limits: JSONLimits, capturing paths: [[JSONPathComponent]]
    ) throws(VarlinkMessageError) -> (message: VarlinkReplyMessage, captures: [JSONCapture]) {
        let (object, captures) = try VarlinkWire.decodeObject(bytes, limits: limits, capturing: paths)
        var error: String?
        switch object["error"] {
        case nil, .null?: error = nil
        case let .string(name)?: error = name
        default: throw .wrongFieldType(field: "error", expected: "a string")
        }
        let message = VarlinkReplyMessage(
            parameters: try VarlinkWire.parameters(in: object),
            continues: try VarlinkWire.flag("continues", in: object),
            error: error)
        return (message, captures)
    }

    /// The wire form including the NUL terminator; `continues` is written only when true.
    public func encoded() -> [UInt8] {
        var object: [String: JSONValue] = ["parameters": .object(parameters)]
        if continues { object["continues"] = true }
        if let error { object["error"] = .string(error) }
        var bytes = JSONWriter.serialize(.object(object))
        bytes.append(0)
        return bytes
    }
}
