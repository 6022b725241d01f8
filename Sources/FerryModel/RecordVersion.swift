import FerryJSON

/// One version of one record, as it is stored, sent and merged.
public struct RecordVersion: Sendable, Hashable {
    /// The entity kind, `[a-z][a-z0-9_.-]{0,63}`.
    public var entity: String
    /// The record's id within its entity kind, compared as given.
    public var id: String
    /// The version stamp; the merge rules compare these.
    public var hlc: Stamp
    /// A tombstone: the record is deleted as of `hlc`.
    public var deleted: Bool
    /// The payload as the text of a JSON object; nil for tombstones.
    public var payload: String?
    /// Lowercase hex SHA-256 of the attachments this version references, sorted, no duplicates.
    public var attachments: [String]

    public init(entity: String, id: String, hlc: Stamp, deleted: Bool, payload: String?, attachments: [String] = []) {
        self.entity = entity
        self.id = id
        self.hlc = hlc
        self.deleted = deleted
        self.payload = deleted ? nil : payload
        self.attachments = deleted ? [] : Array(Set(attachments)).sorted()
    }

    public var key: RecordKey { RecordKey(entity: entity, id: id) }
}

/// Limits on what a record may hold.
public struct RecordLimits: Sendable {
    /// The largest payload, in bytes of its JSON text. Default 1 MiB.
    public var maxPayloadBytes: Int
    /// The most attachments one record may reference.
    public var maxAttachments: Int
    /// The deepest JSON nesting a payload may have.
    public var maxPayloadDepth: Int

    public init(maxPayloadBytes: Int = 1 << 20, maxAttachments: Int = 256, maxPayloadDepth: Int = 128) {
        self.maxPayloadBytes = maxPayloadBytes
        self.maxAttachments = maxAttachments
        self.maxPayloadDepth = maxPayloadDepth
    }

    public static let `default` = RecordLimits()
}

extension RecordVersion {
    /// Checks every field against the record model. Pure: it changes nothing.
    /// - Throws: the first `FerryError` found: `invalidEntity`, `invalidID`, `invalidPayload`,
    ///   `payloadTooLarge`, `invalidAttachmentReference`.
    /// - Parameter payloadIsWellFormed: the caller produced the payload itself by serializing
    ///   a JSON object no deeper than `limits.maxPayloadDepth`, so only its size is checked.
    public func validate(limits: RecordLimits = .default, payloadIsWellFormed: Bool = false) throws(FerryError) {
        try RecordVersion.validate(entity: entity, id: id)
        if deleted {
            if payload != nil { throw .invalidPayload(entity: entity, id: id, reason: "a tombstone has no payload") }
        } else {
            guard let payload else {
                throw .invalidPayload(entity: entity, id: id, reason: "a payload (a JSON object) is required unless the record is deleted")
            }
            if payloadIsWellFormed {
                let size = payload.utf8.count
                if size > limits.maxPayloadBytes {
                    throw .payloadTooLarge(entity: entity, id: id, size: size, limit: limits.maxPayloadBytes)
                }
            } else {
                try RecordVersion.validatePayload(payload, entity: entity, id: id, limits: limits)
            }
        }
        if attachments.count > limits.maxAttachments {
            throw .invalidPayload(entity: entity, id: id, reason: "at most \(limits.maxAttachments) attachments per record")
        }
        for a in attachments where !Names.isSHA256Hex(a) {
            throw .invalidAttachmentReference(entity: entity, id: id, reference: a.clipped(to: 80))
        }
    }

    /// Checks an entity name and an id.
    public static func validate(entity: String, id: String) throws(FerryError) {
        guard Names.isValidName(entity) else { throw .invalidEntity(entity.clipped(to: 80)) }
        if let problem = Names.idProblem(id) { throw .invalidID(entity: entity, id: id.clipped(to: 140), reason: problem) }
    }

    /// Checks that `payload` is the text of one JSON object within the limits.
    public static func validatePayload(_ payload: String, entity: String, id: String, limits: RecordLimits) throws(FerryError) {
        let size = payload.utf8.count
        if size > limits.maxPayloadBytes {
            throw .payloadTooLarge(entity: entity, id: id, size: size, limit: limits.maxPayloadBytes)
        }
        var text = payload
        let result: Result<JSONTopLevel, JSONError> = text.withUTF8 { buffer in
            do throws(JSONError) {
                return .success(try JSONParser.validate(UnsafeRawBufferPointer(buffer),
                                                        limits: JSONLimits(maxBytes: limits.maxPayloadBytes, maxDepth: limits.maxPayloadDepth)))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(.object): return
        case .success(let top):
            throw .invalidPayload(entity: entity, id: id, reason: "the payload must be a JSON object, not \(top)")
        case .failure(let error):
            throw .invalidPayload(entity: entity, id: id, reason: payloadProblem(error, in: payload, limits: limits))
        }
    }

    /// What is wrong with a payload's JSON, in words, and what to do about it.
    static func payloadProblem(_ error: JSONError, in payload: String, limits: RecordLimits) -> String {
        switch error.kind {
        case .duplicateKey:
            // The offset is the key's opening quote: quote the key as it was written.
            let bytes = Array(payload.utf8)
            var end = error.offset + 1
            while end < bytes.count, end - error.offset <= 80 {
                if bytes[end] == UInt8(ascii: "\\") { end += 2; continue }
                if bytes[end] == UInt8(ascii: "\"") { end += 1; break }
                end += 1
            }
            let key = error.offset < bytes.count ? String(decoding: bytes[error.offset..<min(end, bytes.count)], as: UTF8.self) : "?"
            return "the key \(key) appears twice in one object (byte \(error.offset)); keys of a JSON object must be unique: keep one"
        case .invalidNumber:
            return "the number at byte \(error.offset) is beyond what a double holds (about ±1.8e308) or not a JSON number; "
                + "send a value that large as a string"
        case .tooDeep:
            return "the payload nests deeper than \(limits.maxPayloadDepth) levels (at byte \(error.offset)); flatten it"
        default:
            return error.description + "; send the text of one JSON object"
        }
    }
}
