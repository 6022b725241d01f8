import FerryJSON

/// A method call as sent on the wire:
/// `{"method": "iface.Method", "parameters": {...}, "oneway": true, "more": true, "upgrade": true}`.
///
/// Unknown top-level keys are ignored: the spec reserves them for vendor extensions.
public struct VarlinkCallMessage: Sendable, Hashable {
    /// Fully qualified method name.
    public var method: String
    public var parameters: [String: JSONValue]
    /// The server must not reply at all.
    public var oneway: Bool
    /// The client accepts a stream of replies marked `continues`.
    public var more: Bool
    /// The client asks to take over the connection with another protocol.
    public var upgrade: Bool
    /// Parameters sent as the JSON text given, byte for byte (a key here wins over the same key
    /// in `parameters`): for a value that must reach the service exactly as a user wrote it,
    /// such as a payload stored as sent. Each must be one valid JSON value without a NUL;
    /// `encoded()` does not check.
    public var verbatimParameters: [String: [UInt8]] = [:]

    public init(
        method: String, parameters: [String: JSONValue] = [:],
        oneway: Bool = false, more: Bool = false, upgrade: Bool = false
    ) {
        self.method = method
        self.parameters = parameters
        self.oneway = oneway
        self.more = more
        self.upgrade = upgrade
    }

    /// The interface part of `method` (everything before the last dot).
    public var interfaceName: String {
        guard let dot = method.lastIndex(of: ".") else { return "" }
        return String(method[..<dot])
    }

    /// The member part of `method` (after the last dot).
    public var methodName: String {
        guard let dot = method.lastIndex(of: ".") else { return method }
        return String(method[method.index(after: dot)...])
    }

    /// Decodes one framed message (without its NUL).
    ///
    /// `parameters` may be absent or `null` (both mean `{}`); flags may be absent or
    /// `null` (false).
    /// - Throws: `VarlinkMessageError` for non-JSON, non-objects, a missing or malformed
    ///   `method`, or wrongly typed fields.
    public static func decode(
        _ bytes: [UInt8], limits: JSONLimits = .default
    ) throws(VarlinkMessageError) -> VarlinkCallMessage {
        try decode(bytes, limits: limits, capturing: []).message
    }

    /// Decodes one framed message (without its NUL), leaving the objects at `paths` (from the
    /// message's top level, so starting with `parameters`) as text: they stand as
    /// placeholders in `parameters` (see `JSONCapture`).
    /// - Throws: what `decode(_:limits:)` throws, for the same input.
    static func decode(
        _ bytes: [UInt8], limits: JSONLimits, capturing paths: [[JSONPathComponent]]
    ) throws(VarlinkMessageError) -> (message: VarlinkCallMessage, captures: [JSONCapture]) {
        let (object, captures) = try VarlinkWire.decodeObject(bytes, limits: limits, capturing: paths)
        guard let methodValue = object["method"], !methodValue.isNull else {
            throw .missingField("method")
        }
        guard case let .string(method) = methodValue else {
            throw .wrongFieldType(field: "method", expected: "a string")
        }
        guard VarlinkNames.isQualifiedMemberName(method) else { throw .invalidMethodName(method) }
        let message = VarlinkCallMessage(
            method: method,
            parameters: try VarlinkWire.parameters(in: object),
            oneway: try VarlinkWire.flag("oneway", in: object),
            more: try VarlinkWire.flag("more", in: object),
            upgrade: try VarlinkWire.flag("upgrade", in: object))
        return (message, captures)
    }

    /// The wire form including the NUL terminator. Flags are written only when true, and
    /// `parameters` is always present (an empty object when there are none).
    public func encoded() -> [UInt8] {
        var object: [String: JSONValue] = ["method": .string(method)]
        if oneway { object["oneway"] = true }
        if more { object["more"] = true }
        if upgrade { object["upgrade"] = true }
        guard !verbatimParameters.isEmpty else {
            object["parameters"] = .object(parameters)
            var bytes = JSONWriter.serialize(.object(object))
            bytes.append(0)
            return bytes
        }
        // {"method":...,"parameters":{<verbatim members>,<other members>}}
        var bytes = JSONWriter.serialize(.object(object))
        bytes.removeLast()
        bytes += Array(#","parameters":{"#.utf8)
        var first = true
        for (key, text) in verbatimParameters.sorted(by: { $0.key < $1.key }) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.append(.string(key), to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            bytes += text
        }
        let rest = parameters.filter { verbatimParameters[$0.key] == nil }
        if !rest.isEmpty {
            bytes.append(UInt8(ascii: ","))
            bytes += JSONWriter.serialize(.object(rest)).dropFirst()   // its members and its '}'
        } else {
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0)
        return bytes
    }
}
