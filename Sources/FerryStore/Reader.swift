import FerryModel
import FerrySQLite
import Foundation

/// The read connection. WAL lets it read the last committed state while the writer works.
/// `@unchecked Sendable`: the connection is only used with `lock` held.
final class Reader: @unchecked Sendable {
    private let db: Database
    private let lock = NSLock()
    let catalog: Catalog

    init(db: Database, catalog: Catalog) {
        self.db = db
        self.catalog = catalog
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        lock.lock(); defer { lock.unlock() }
        return try body(db)
    }

    /// Reads the columns `entity, id, hlc, deleted, payload, attachments, seq` starting at `from`.
    static func version(_ statement: Statement, from c: Int32 = 0) throws -> (RecordVersion, Int64) {
        let hlcText = statement.text(c + 2) ?? ""
        guard let hlc = Stamp.parse(hlcText) else {
            throw FerryError.storage(context: "reading a record", message: "stored stamp \(hlcText) is malformed")
        }
        let version = RecordVersion(
            entity: statement.text(c) ?? "", id: statement.text(c + 1) ?? "", hlc: hlc,
            deleted: statement.bool(c + 3), payload: statement.text(c + 4),
            attachments: AttachmentList.decode(statement.text(c + 5)))
        return (version, statement.int64(c + 6))
    }
}
