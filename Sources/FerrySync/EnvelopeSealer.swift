import FerryCrypto
import FerryJSON
import FerryModel

/// Seals record versions into envelopes for one owner and device, and opens envelopes of that
/// owner.
///
/// The body plaintext is the compact JSON object
/// `{"e":entity,"i":id,"p":payload-or-null,"a":[sha256,...]}` (members in that order, the
/// payload's own text spliced in), sealed with XChaCha20-Poly1305 under the owner's data key
/// with the 76 header bytes as associated data. See docs/protocol.md "Envelopes and keys".
public struct EnvelopeSealer: Sendable {
    let keys: OwnerKeys
    let device: NodeID

    /// A sealer that seals as `device` with `keys`.
    public init(keys: OwnerKeys, device: NodeID) {
        self.keys = keys
        self.device = device
    }

    /// The owner whose envelopes this sealer makes and opens.
    public var owner: OwnerID { keys.owner }

    /// Seals `version`. The header's event id depends only on the record and its stamp, so
    /// sealing the same version again gives the same event id (the body differs: a new nonce).
    /// The version is sealed as given; `open` validates it.
    public func seal(_ version: RecordVersion) -> Envelope {
        let stream = keys.streamID(entity: version.entity, id: version.id)
        let header = EnvelopeHeader(
            owner: keys.owner, device: device, event: keys.eventID(stream: stream, stamp: version.hlc),
            stamp: version.hlc, deleted: version.deleted, stream: stream)
        let payload = version.deleted ? nil : version.payload
        var plaintext = Self.bodyPrefix(entity: version.entity, id: version.id)
        if let payload { plaintext.append(contentsOf: payload.utf8) } else { plaintext.append(contentsOf: "null".utf8) }
        plaintext.append(contentsOf: Self.bodySuffix(attachments: version.attachments))
        return Envelope(header: header, body: AEAD.seal(plaintext, associatedData: header.encoded, key: keys.dataKey))
    }

    /// Opens an envelope of this sealer's owner.
    ///
    /// Checks the header's owner, authenticates the body with the header bytes as associated
    /// data, parses the body (size- and depth-capped), checks that its `(entity, id)` hashes to
    /// the header's stream id, and builds the version with the header's stamp and deleted flag,
    /// validated against `limits`. Pure; never traps on any input.
    /// - Throws: `EnvelopeError.wrongOwner`, `.tooLarge` (a body over `Envelope.maxBodyBytes`),
    ///   `.authenticationFailed` (wrong key, changed header or body), `.invalidBody(reason)`.
    public func open(_ envelope: Envelope, limits: RecordLimits = .default) throws(EnvelopeError) -> RecordVersion {
        let header = envelope.header
        guard header.owner == keys.owner else { throw .wrongOwner(expected: keys.owner, found: header.owner) }
        guard envelope.body.count <= Envelope.maxBodyBytes else {
            throw .tooLarge(size: envelope.body.count, limit: Envelope.maxBodyBytes)
        }
        let plaintext: [UInt8]
        do {
            plaintext = try AEAD.open(envelope.body, associatedData: header.encoded, key: keys.dataKey)
        } catch {
            throw .authenticationFailed
        }
        let body = try Self.parseBody(plaintext, maxDepth: limits.maxPayloadDepth)
        guard keys.streamID(entity: body.entity, id: body.id) == header.stream else {
            throw .invalidBody("the record (entity, id) inside does not match the header's stream id")
        }
        if header.deleted && body.payload != nil { throw .invalidBody("a tombstone's body has a payload") }
        let version = RecordVersion(entity: body.entity, id: body.id, hlc: header.stamp, deleted: header.deleted,
                                    payload: body.payload, attachments: body.attachments)
        do {
            // The body parse above already proved the payload a JSON object within the depth
            // limit (its text is either that object's exact bytes or its re-serialization), so
            // only the rest is checked here.
            try version.validate(limits: limits, payloadIsWellFormed: true)
        } catch {
            throw .invalidBody(error.description)
        }
        return version
    }

    /// The fields of a body.
    struct Body: Equatable {
        var entity: String
        var id: String
        var payload: String?
        var attachments: [String]
    }

    /// Parses a body plaintext. The payload object is checked (depth included) but not built
    /// (a capture). It keeps its exact text when the body has the layout `seal` writes, so a
    /// version reads back equal to the one sealed; otherwise it is parsed and re-serialized
    /// canonically.
    static func parseBody(_ plaintext: [UInt8], maxDepth: Int) throws(EnvelopeError) -> Body {
        if let body = parseSealedLayout(plaintext, maxDepth: maxDepth) { return body }
        return try parseAnyLayout(plaintext, maxDepth: maxDepth)
    }

    /// `parseBody` for a body in any layout: a general JSON reading.
    static func parseAnyLayout(_ plaintext: [UInt8], maxDepth: Int) throws(EnvelopeError) -> Body {
        let value: JSONValue
        let captures: [JSONCapture]
        let limits = JSONLimits(maxBytes: Envelope.maxBodyBytes, maxDepth: max(0, maxDepth) + 1)
        do {
            (value, captures) = try JSONParser.parse(plaintext, limits: limits, capturing: [[.key("p")]])
        } catch {
            throw .invalidBody("not JSON: \(error.description)")
        }
        guard case .object(let members) = value else { throw .invalidBody("not a JSON object") }
        guard members.count == 4, case .string(let entity)? = members["e"], case .string(let id)? = members["i"],
              let p = members["p"], case .array(let list)? = members["a"] else {
            throw .invalidBody("the body must have exactly the members e, i (strings), p and a (an array)")
        }
        var attachments: [String] = []
        attachments.reserveCapacity(list.count)
        for element in list {
            guard case .string(let sha) = element else { throw .invalidBody("an attachment reference is not a string") }
            attachments.append(sha)
        }
        let payload: String?
        switch p {
        case .null:
            payload = nil
        case .object:
            guard let i = JSONCapture.index(of: p), i < captures.count else {
                throw .invalidBody("the payload could not be read")   // every object at "p" is captured
            }
            let range = captures[i].range
            // A capture that is not clean holds a duplicate key or a number out of range.
            if !captures[i].isClean {
                do { _ = try JSONParser.validate(plaintext[range], limits: limits) } catch {
                    throw .invalidBody("the payload is not valid JSON: \(error.description)")
                }
            }
            let prefix = bodyPrefix(entity: entity, id: id)
            let suffix = bodySuffix(attachments: attachments)
            if range.lowerBound == prefix.count, range.upperBound == plaintext.count - suffix.count,
               plaintext.starts(with: prefix), plaintext[range.upperBound...].elementsEqual(suffix) {
                payload = String(decoding: plaintext[range], as: UTF8.self)
            } else {
                // Checked within `limits` already, so it parses again.
                guard let parsed = try? JSONParser.parse(plaintext[range], limits: limits) else {
                    throw .invalidBody("the payload could not be read")
                }
                payload = JSONWriter.string(parsed)
            }
        default:
            throw .invalidBody("the payload must be a JSON object or null, not \(p.typeName)")
        }
        return Body(entity: entity, id: id, payload: payload, attachments: attachments)
    }

    /// Reads a body laid out exactly as `seal` writes it, with plain entity and id strings
    /// (no escapes) and well-formed attachment references, checking the payload in one pass
    /// instead of building a tree of the whole body. Accepts only bodies that `parseBody`'s
    /// general reading accepts with the same result; nil for anything else (which that reading
    /// then accepts or explains).
    static func parseSealedLayout(_ plaintext: [UInt8], maxDepth: Int) -> Body? {
        let n = plaintext.count
        var i = 0
        /// Matches `literal` at `i` and moves past it.
        func expect(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard i + count <= n else { return false }
            let start = literal.utf8Start
            for k in 0..<count where plaintext[i + k] != start[k] { return false }
            i += count
            return true
        }
        /// A string without escapes or control characters up to its closing quote, moving past it.
        func plainString() -> String? {
            let start = i
            while i < n {
                let byte = plaintext[i]
                if byte == UInt8(ascii: "\"") {
                    let text = String(validating: plaintext[start..<i], as: UTF8.self)
                    i += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                i += 1
            }
            return nil
        }
        guard expect(#"{"e":""#), let entity = plainString(), expect(#","i":""#), let id = plainString(),
              expect(#","p":"#) else { return nil }
        let payloadStart = i
        // The attachment list, read backwards from the closing `]}`.
        guard n - payloadStart >= 8, plaintext[n - 2] == UInt8(ascii: "]"), plaintext[n - 1] == UInt8(ascii: "}") else { return nil }
        var end = n - 2   // just past the last attachment reference
        var references: [String] = []
        if plaintext[end - 1] != UInt8(ascii: "[") {
            while true {
                guard end - 66 > payloadStart, plaintext[end - 1] == UInt8(ascii: "\""), plaintext[end - 66] == UInt8(ascii: "\"") else { return nil }
                let hex = plaintext[(end - 65)..<(end - 1)]
                guard hex.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return nil }
                references.append(String(decoding: hex, as: UTF8.self))
                end -= 66
                if plaintext[end - 1] == UInt8(ascii: ",") { end -= 1; continue }
                if plaintext[end - 1] == UInt8(ascii: "[") { break }
                return nil
            }
        }
        let payloadEnd = end - 6
        guard payloadEnd > payloadStart, plaintext[payloadEnd..<end].elementsEqual(#","a":["#.utf8) else { return nil }
        let payloadBytes = plaintext[payloadStart..<payloadEnd]
        let payload: String?
        if payloadBytes.elementsEqual("null".utf8) {
            payload = nil
        } else {
            // No white space around it (the general reading would drop it).
            guard payloadBytes.first == UInt8(ascii: "{"), payloadBytes.last == UInt8(ascii: "}") else { return nil }
            let limits = JSONLimits(maxBytes: Envelope.maxBodyBytes, maxDepth: max(0, maxDepth))
            guard case .object? = try? JSONParser.validate(payloadBytes, limits: limits) else { return nil }
            payload = String(decoding: payloadBytes, as: UTF8.self)
        }
        return Body(entity: entity, id: id, payload: payload, attachments: references.reversed())
    }

    /// `{"e":<entity>,"i":<id>,"p":`
    static func bodyPrefix(entity: String, id: String) -> [UInt8] {
        var out = Array(#"{"e":"#.utf8)
        JSONWriter.appendString(entity, to: &out)
        out.append(contentsOf: #","i":"#.utf8)
        JSONWriter.appendString(id, to: &out)
        out.append(contentsOf: #","p":"#.utf8)
        return out
    }

    /// `,"a":[<sha256>,...]}`
    static func bodySuffix(attachments: [String]) -> [UInt8] {
        var out = Array(#","a":["#.utf8)
        for (i, a) in attachments.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(a, to: &out)
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }
}
