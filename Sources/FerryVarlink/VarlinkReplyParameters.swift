import FerryJSON

/// The parameters of a reply: as values, or already serialized. The serialized form lets a
/// service write large or shared replies once, straight from bytes it has (a stored JSON
/// payload, one change sent to a hundred watchers), instead of building values to serialize.
public enum VarlinkReplyParameters: Sendable {
    case values([String: JSONValue])
    /// The bytes of one JSON object, written as they are: the caller guarantees they are a
    /// valid JSON object.
    case json([UInt8])

    /// The final reply (no `continues`) carrying these parameters, NUL included.
    func encodedFinalReply() -> [UInt8] {
        switch self {
        case .values(let parameters):
            return VarlinkReplyMessage(parameters: parameters).encoded()
        case .json(let object):
            var bytes: [UInt8] = []
            bytes.reserveCapacity(object.count + 16)
            bytes += Self.parametersPrefix
            bytes += object
            bytes.append(UInt8(ascii: "}"))
            bytes.append(0)
            return bytes
        }
    }

    static let parametersPrefix = Array(#"{"parameters":"#.utf8)
    static let continuingPrefix = Array(#"{"continues":true,"parameters":"#.utf8)
}

/// One intermediate reply of a `more` call (`"continues": true`), encoded once and sendable to
/// any number of callers through `VarlinkReplySink.send(_:)`.
public struct VarlinkEncodedReply: Sendable {
    let bytes: [UInt8]

    /// Its size on the wire, in bytes.
    public var size: Int { bytes.count }

    /// - Parameter parametersJSON: the bytes of one valid JSON object.
    public init(parametersJSON: [UInt8]) {
        self.init(capacity: parametersJSON.count) { $0 += parametersJSON }
    }

    public init(parameters: [String: JSONValue]) {
        bytes = VarlinkReplyMessage(parameters: parameters, continues: true).encoded()
    }

    /// The same reply as `init(parametersJSON:)`, with the object's bytes written by `write`
    /// straight into it (no array of their own to copy).
    /// - Parameters:
    ///   - capacity: about how many bytes `write` appends (room reserved up front).
    ///   - write: appends the bytes of one valid JSON object.
    public init(capacity: Int, parametersJSON write: (inout [UInt8]) -> Void) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity + VarlinkReplyParameters.continuingPrefix.count + 2)
        bytes += VarlinkReplyParameters.continuingPrefix
        write(&bytes)
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0)
        self.bytes = bytes
    }
}
