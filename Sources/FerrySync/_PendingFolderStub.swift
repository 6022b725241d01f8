// TEMPORARY: a compile-time stand-in for the folder transport being built on branch sync-folder.
import FerryModel
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
