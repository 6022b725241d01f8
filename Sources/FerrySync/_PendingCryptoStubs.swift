// TEMPORARY: compile-time stand-ins for the sealing API being built on branch sync-crypto.
// Deleted when that branch merges.
import FerryModel
import FerryCrypto
import FerryJSON

public enum OwnerKeyError: Error, Sendable { case wrongLength(Int) }
public enum RecoveryPhraseError: Error, Sendable { case invalid(String) }
public enum BlobSealError: Error, Sendable { case failed(String) }

public struct OwnerKeys: Sendable {
    public let rootKey: [UInt8]
    public let owner: OwnerID
    public init(rootKey: [UInt8]) throws(OwnerKeyError) {
        guard rootKey.count == 32 else { throw .wrongLength(rootKey.count) }
        self.rootKey = rootKey
        owner = ID128(bytes: rootKey)
    }
    public static func generate() -> OwnerKeys { try! OwnerKeys(rootKey: (0..<32).map { _ in UInt8.random(in: 0...255) }) }
    public func streamID(entity: String, id: String) -> StreamID {
        var h = Hasher(); h.combine(entity); h.combine(id); let v = UInt64(bitPattern: Int64(h.finalize()))
        return ID128(high: v, low: v)
    }
    public func eventID(stream: StreamID, stamp: Stamp) -> EventID { ID128(high: stream.high ^ UInt64(bitPattern: stamp.millis), low: stamp.node.value ^ UInt64(stamp.counter)) }
    public func blobKey(sha256: String) -> BlobKey { sha256 }
}

public enum RecoveryPhrase {
    public static func encode(_ keys: OwnerKeys) -> String { keys.rootKey.map { String($0, radix: 16) }.joined(separator: "-") }
    public static func decode(_ phrase: String) throws(RecoveryPhraseError) -> OwnerKeys {
        let bytes = phrase.split(separator: "-").compactMap { UInt8($0, radix: 16) }
        do { return try OwnerKeys(rootKey: bytes) } catch { throw .invalid("bad phrase") }
    }
}

public struct EnvelopeSealer: Sendable {
    let keys: OwnerKeys
    let device: NodeID
    public init(keys: OwnerKeys, device: NodeID) { self.keys = keys; self.device = device }
    public var owner: OwnerID { keys.owner }
    public func seal(_ version: RecordVersion) -> Envelope {
        let stream = keys.streamID(entity: version.entity, id: version.id)
        let header = EnvelopeHeader(owner: keys.owner, device: device, event: keys.eventID(stream: stream, stamp: version.hlc),
                                    stamp: version.hlc, deleted: version.deleted, stream: stream)
        let body = JSONWriter.string(.object(["e": .string(version.entity), "i": .string(version.id),
                                              "p": version.payload.map { .string($0) } ?? .null,
                                              "a": .array(version.attachments.map { .string($0) })]))
        return Envelope(header: header, body: Array(body.utf8))
    }
    public func open(_ envelope: Envelope, limits: RecordLimits = .default) throws(EnvelopeError) -> RecordVersion {
        guard envelope.header.owner == keys.owner else { throw .wrongOwner(expected: keys.owner, found: envelope.header.owner) }
        guard let value = try? JSONParser.parse(envelope.body), case .object(let o) = value,
              let e = o["e"]?.stringValue, let i = o["i"]?.stringValue else { throw .invalidBody("stub") }
        let v = RecordVersion(entity: e, id: i, hlc: envelope.header.stamp, deleted: envelope.header.deleted,
                              payload: o["p"]?.stringValue, attachments: o["a"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        do { try v.validate(limits: limits) } catch { throw .invalidBody("\(error)") }
        return v
    }
}

public struct BlobSealer: Sendable {
    public init(keys: OwnerKeys) {}
    public func seal(file source: String, to destination: String) throws(BlobSealError) {
        guard let d = FileManager.default.contents(atPath: source), FileManager.default.createFile(atPath: destination, contents: d) else { throw .failed(source) }
    }
    public func open(file source: String, to destination: String, expectedSHA256: String, maxBytes: Int64) throws(BlobSealError) {
        guard let d = FileManager.default.contents(atPath: source), FileManager.default.createFile(atPath: destination, contents: d) else { throw .failed(source) }
    }
}
import Foundation

public final class FolderTransport: Transport {
    public struct Options: Sendable { public init() {} }
    public let name: String
    public init(name: String, path: String, owner: OwnerID, device: NodeID, options: Options = .init()) { self.name = name }
    public func push(_ batch: [Envelope]) async throws(TransportFailure) -> [PushOutcome] { throw .unavailable("stub") }
    public func pull(after cursor: String?, limit: Int, wait: Duration) async throws(TransportFailure) -> PullPage { throw .unavailable("stub") }
    public func putBlob(key: BlobKey, from path: String) async throws(TransportFailure) { throw .unavailable("stub") }
    public func hasBlob(key: BlobKey) async throws(TransportFailure) -> Bool { false }
    public func getBlob(key: BlobKey, to path: String) async throws(TransportFailure) -> Bool { false }
    public func status() async -> TransportStatus { TransportStatus() }
    public func close() async {}
}
