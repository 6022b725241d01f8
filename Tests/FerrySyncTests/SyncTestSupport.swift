import Foundation
import FerryModel
@testable import FerrySync

/// A temporary directory removed when the last reference goes.
final class SyncTempDir: Sendable {
    let path: String
    init(_ name: String) {
        path = NSTemporaryDirectory() + "ferry-sync-test-\(name)-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The names in the directory, sorted.
    var names: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
}

enum Fixtures {
    /// The test-vector root key: bytes 0x00, 0x01, ..., 0x1f.
    static let rootKey: [UInt8] = (0..<32).map { UInt8($0) }
    static let keys = try! OwnerKeys(rootKey: rootKey)
    static let stamp = Stamp(millis: 1_790_000_000_123, counter: 7, node: NodeID(0x42))
    static let version = RecordVersion(
        entity: "note", id: "n1", hlc: stamp, deleted: false, payload: #"{"title":"Hello","n":[1,2.5,null]}"#,
        attachments: [String(repeating: "a", count: 64), String(repeating: "0", count: 64)])
}
