/// Every error Ferry's core reports, with the context a user needs to act on it.
///
/// Each case maps to one wire error (a Varlink error name, an HTTP status) in one place in the IPC
/// layer; `code` is the stable name used there.
public enum FerryError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidEntity(String)
    case invalidID(entity: String, id: String, reason: String)
    case invalidStamp(String, reason: String)
    case invalidPayload(entity: String, id: String, reason: String)
    case payloadTooLarge(entity: String, id: String, size: Int, limit: Int)
    case invalidAttachmentReference(entity: String, id: String, reference: String)
    case immutableRecord(entity: String, id: String)
    case notFound(space: String, entity: String, id: String)
    case invalidSpaceName(String)
    case spaceNotFound(String)
    case spaceExists(String)
    case batchTooLarge(count: Int, limit: Int)
    case attachmentMissing(sha256: String)
    /// The attachment's file on this device was gone, cut short or changed behind ferryd's back:
    /// it was set aside (`Store.setAttachmentAside`) and counts as missing. On the wire it is
    /// `AttachmentMissing`, with its own message.
    case attachmentDamaged(sha256: String)
    /// A local write references an attachment whose bytes are not in the store. On the wire it
    /// is `AttachmentMissing`, with its own message.
    case attachmentNotStored(sha256: String)
    /// A read of an attachment the store does not know of (never stored here, or removed once
    /// nothing referenced it). On the wire it is `AttachmentMissing`, with its own message.
    case attachmentUnknown(sha256: String)
    case attachmentMismatch(expected: String, actual: String)
    case attachmentTooLarge(size: Int, limit: Int)
    case conflictNotFound(entity: String, id: String, stamp: String)
    case invalidTransportName(String)
    /// The store could not read or write its files; `context` says what it was doing.
    case storage(context: String, message: String)
    /// `error` is about the record at `index` (from 0) of a write of several records (a
    /// PutMany): which one failed, when the record alone does not say (one without an id).
    indirect case inBatch(index: Int, FerryError)

    /// A stable, machine-readable name for the error kind.
    public var code: String {
        switch self {
        case .invalidEntity: "InvalidEntity"
        case .invalidID: "InvalidID"
        case .invalidStamp: "InvalidStamp"
        case .invalidPayload: "InvalidPayload"
        case .payloadTooLarge: "PayloadTooLarge"
        case .invalidAttachmentReference: "InvalidAttachmentReference"
        case .immutableRecord: "ImmutableRecord"
        case .notFound: "NotFound"
        case .invalidSpaceName: "InvalidSpaceName"
        case .spaceNotFound: "SpaceNotFound"
        case .spaceExists: "SpaceExists"
        case .batchTooLarge: "BatchTooLarge"
        case .attachmentMissing, .attachmentDamaged, .attachmentNotStored, .attachmentUnknown: "AttachmentMissing"
        case .attachmentMismatch: "AttachmentMismatch"
        case .attachmentTooLarge: "AttachmentTooLarge"
        case .conflictNotFound: "ConflictNotFound"
        case .invalidTransportName: "InvalidTransportName"
        case .storage: "StorageFailure"
        case .inBatch(_, let error): error.code
        }
    }

    /// What happened and what to do next, in words for a person.
    public var description: String {
        switch self {
        case .invalidEntity(let e):
            return "invalid entity name \(quoted(e)): use 1 to 64 characters of a-z, 0-9, '_', '.', '-', starting with a letter"
        case .invalidID(let e, let id, let reason):
            return "invalid id \(quoted(id)) for entity \(e): \(reason)"
        case .invalidStamp(let s, let reason):
            return "invalid stamp \(quoted(s)): \(reason)"
        case .invalidPayload(let e, let id, let reason):
            return "invalid payload for \(record(e, id)): \(reason)"
        case .payloadTooLarge(let e, let id, let size, let limit):
            return "payload for \(record(e, id)) is \(size) bytes, over the limit of \(limit): store large data as an attachment"
        case .invalidAttachmentReference(let e, let id, let r):
            return "\(record(e, id)) references attachment \(quoted(r)), which is not a lowercase hex SHA-256 (64 characters 0-9a-f)"
        case .immutableRecord(let e, let id):
            return "\(e)/\(id) belongs to an immutable entity kind and already exists: write a new record instead of changing it"
        case .notFound(let s, let e, let id):
            return "no record \(e)/\(id) in space \(s); check the entity, id and space (List shows the ids)"
        case .invalidSpaceName(let s):
            return "invalid space name \(quoted(s)): use 1 to 64 characters of a-z, 0-9, '_', '.', '-', starting with a letter"
        case .spaceNotFound(let s):
            return "no space named \(quoted(s)): list spaces with 'ferryctl space ls' or create it with 'ferryctl space create'"
        case .spaceExists(let s):
            return "a space named \(quoted(s)) already exists; use it, or pick another name"
        case .batchTooLarge(let count, let limit):
            return "batch of \(count) records is over the limit of \(limit): split it into smaller batches"
        case .attachmentMissing(let sha):
            return "attachment \(sha) is not on this device yet: a record from another device references it and "
                + "the sync engine keeps fetching it, so read it again later"
        case .attachmentNotStored(let sha):
            return "attachment \(sha) is not in the store: store its file first ('ferryctl attach FILE', or PutAttachment), "
                + "then write the record that references it"
        case .attachmentUnknown(let sha):
            return "no attachment \(sha) on this device: it was never stored here, or was removed once nothing referenced it; "
                + "check the SHA-256, or store the file with 'ferryctl attach FILE'"
        case .attachmentDamaged(let sha):
            return "attachment \(sha) on this device was damaged (its file was gone, cut short or changed outside ferryd): "
                + "it was set aside and the sync engine fetches it again from a transport that has it, so read it again later; "
                + "or store the original file again with 'ferryctl attach FILE'"
        case .attachmentMismatch(let expected, let actual):
            return "attachment content hashes to \(actual), not the expected \(expected): the file changed or was corrupted in transit; upload it again"
        case .attachmentTooLarge(let size, let limit):
            return "attachment of \(size) bytes is over the limit of \(limit) bytes: this device stores attachments up to "
                + "MaxAttachmentBytes ([Store] in ferryd.conf); raise it there and restart ferryd to store larger ones"
        case .conflictNotFound(let e, let id, let stamp):
            return "no losing version \(stamp) is kept for \(e)/\(id): list them with 'ferryctl conflicts'"
        case .invalidTransportName(let n):
            return "invalid transport name \(quoted(n)): use 1 to 64 characters of a-z, 0-9, '_', '.', '-', starting with a letter"
        case .storage(let context, let message):
            return "storage failure while \(context): \(message); check free disk space and the state directory's permissions"
        case .inBatch(let index, let error):
            return "records[\(index)]: \(error.description)"
        }
    }

    /// The same error about a record written without an id: its id is left empty, since the
    /// one the store made up for it was never stored and nobody should look for it.
    public func aboutRecordWithoutID() -> FerryError {
        switch self {
        case .inBatch(let index, let error): .inBatch(index: index, error.aboutRecordWithoutID())
        case .invalidPayload(let e, _, let reason): .invalidPayload(entity: e, id: "", reason: reason)
        case .payloadTooLarge(let e, _, let size, let limit): .payloadTooLarge(entity: e, id: "", size: size, limit: limit)
        case .invalidAttachmentReference(let e, _, let r): .invalidAttachmentReference(entity: e, id: "", reference: r)
        default: self
        }
    }

    /// The same error about the record at `index` of a write of `count` records: marked with
    /// its place when there are several (a storage failure is about none of them).
    public func inBatch(index: Int, of count: Int) -> FerryError {
        switch self {
        case .storage, .inBatch, .batchTooLarge: self
        default: count > 1 ? .inBatch(index: index, self) : self
        }
    }

    /// `entity/id`, or for a record written without an id, words that say so.
    private func record(_ entity: String, _ id: String) -> String {
        id.isEmpty ? "the new \(entity) record (written without an id)" : "record \(entity)/\(id)"
    }

    private func quoted(_ s: String) -> String {
        "\"" + String(s.unicodeScalars.prefix(80).map { $0.value < 0x20 ? "?" : Character($0) })
            + (s.unicodeScalars.count > 80 ? "…" : "") + "\""
    }
}
