import FerryJSON
import FerryStore

/// Reads the parameters of `Put` and `PutMany` straight from a call's bytes into
/// `PutRequest`s (`VarlinkMethod.direct`): the common shape of a write, without a `JSONValue`
/// (and its dictionaries) for every record.
///
/// It reads only what the ordinary decoding would read the same way, and answers nil for
/// anything else, which then takes that decoding and gets its answers and errors:
/// - members in any order, each at most once, only those of the method's signature;
/// - `entity`, `id`, `space` and attachment hashes as strings of printable ASCII with no
///   escape; `id` and `attachments` absent rather than null;
/// - a payload object that `JSONParser.validate` accepts within the message's depth limit and
///   the store's payload depth, so the store need not read it again (as with a clean capture).
///
/// Pure and bounded by its input: it reads nothing outside the buffer and allocates only what
/// it returns.
struct PutParametersDecoder {
    /// What a call asks to write.
    struct Parameters: Sendable, Equatable {
        /// nil: the private space.
        var space: String?
        var requests: [PutRequest]
    }

    /// How deep a payload sits in a call message: message, parameters (, records, record).
    static let putDepth = 2
    static let putManyDepth = 4

    /// `Put(space?, entity, id?, payload, attachments?)`'s parameters object.
    static func put(_ bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits, maxPayloadDepth: Int) -> Parameters? {
        var reader = PutParametersDecoder(bytes)
        guard let (space, request) = reader.record(maxPayloadDepth: min(limits.maxDepth - putDepth, maxPayloadDepth), allowsSpace: true),
              reader.atEnd else { return nil }
        return Parameters(space: space, requests: [request])
    }

    /// `PutMany(space?, records)`'s parameters object.
    static func putMany(_ bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits, maxPayloadDepth: Int) -> Parameters? {
        var reader = PutParametersDecoder(bytes)
        let depth = min(limits.maxDepth - putManyDepth, maxPayloadDepth)
        var space: String?, records: [PutRequest]?
        guard reader.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = reader.key() else { return nil }
            switch key {
            case "space":
                guard space == nil, let value = reader.plainString() else { return nil }
                space = value
            case "records":
                guard records == nil, reader.take(UInt8(ascii: "[")) else { return nil }
                var list: [PutRequest] = []
                if !reader.take(UInt8(ascii: "]")) {
                    repeat {
                        guard let (_, request) = reader.record(maxPayloadDepth: depth, allowsSpace: false) else { return nil }
                        list.append(request)
                    } while reader.take(UInt8(ascii: ","))
                    guard reader.take(UInt8(ascii: "]")) else { return nil }
                }
                records = list
            default:
                return nil
            }
        } while reader.take(UInt8(ascii: ","))
        guard reader.take(UInt8(ascii: "}")), reader.atEnd, let records else { return nil }
        return Parameters(space: space, requests: records)
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Only whitespace is left.
    private var atEnd: Bool {
        mutating get {
            skipWhitespace()
            return position == bytes.count
        }
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): position += 1
            default: return
            }
        }
    }

    /// Reads `byte` after any whitespace; false (reading nothing more) when something else is there.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// A string of printable ASCII with no escape; nil for any other value.
    private mutating func plainString() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                defer { position += 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
            }
            guard byte >= 0x20, byte < 0x7f, byte != UInt8(ascii: "\\") else { return nil }
            position += 1
        }
        return nil
    }

    /// A member's key and the colon after it.
    private mutating func key() -> String? {
        guard let key = plainString(), take(UInt8(ascii: ":")) else { return nil }
        return key
    }

    /// `[` plain strings `]`.
    private mutating func stringArray() -> [String]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var out: [String] = []
        if take(UInt8(ascii: "]")) { return out }
        repeat {
            guard let value = plainString() else { return nil }
            out.append(value)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? out : nil
    }

    /// An object's text, from `{` to its `}`, when `JSONParser.validate` accepts it at most
    /// `maxDepth` deep (checks, among the rest, UTF-8, duplicate keys and numbers' range); the
    /// validation finds where it ends.
    private mutating func payload(maxDepth: Int) -> String? {
        skipWhitespace()
        guard maxDepth >= 1, position < bytes.count, bytes[position] == UInt8(ascii: "{") else { return nil }
        let rest = UnsafeBufferPointer(rebasing: bytes[position...])
        guard let (kind, end) = try? JSONParser.validatePrefix(rest, limits: JSONLimits(maxBytes: rest.count, maxDepth: maxDepth)),
              kind == .object else { return nil }
        position += end
        return String(decoding: UnsafeBufferPointer(rebasing: rest[..<end]), as: UTF8.self)
    }

    /// One record object: `entity`, `payload`, and optionally `id` and `attachments` (and
    /// `space`, when `allowsSpace`: Put's parameters are a record with a space).
    private mutating func record(maxPayloadDepth: Int, allowsSpace: Bool) -> (space: String?, request: PutRequest)? {
        var space: String?, entity: String?, id: String?, payload: String?, attachments: [String]?
        guard take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = key() else { return nil }
            switch key {
            case "entity":
                guard entity == nil, let value = plainString() else { return nil }
                entity = value
            case "id":
                guard id == nil, let value = plainString() else { return nil }
                id = value
            case "payload":
                guard payload == nil, let value = self.payload(maxDepth: maxPayloadDepth) else { return nil }
                payload = value
            case "attachments":
                guard attachments == nil, let value = stringArray() else { return nil }
                attachments = value
            case "space" where allowsSpace:
                guard space == nil, let value = plainString() else { return nil }
                space = value
            default:
                return nil
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), let entity, let payload else { return nil }
        return (space, PutRequest(entity: entity, id: id, payload: payload, attachments: attachments ?? [], payloadIsWellFormed: true))
    }
}
