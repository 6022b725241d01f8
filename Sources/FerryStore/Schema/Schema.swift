/// The store's schema, as numbered SQL migrations applied in order and recorded in
/// `PRAGMA user_version`. A migration is never edited once released: changes go in a new one.
enum Schema {
    /// `PRAGMA application_id`: "FRRY", so that `file(1)` and Ferry itself can tell a Ferry store
    /// from any other SQLite file.
    static let applicationID: Int32 = 0x4652_5259

    /// Migrations by version; `migrations[i]` takes the schema from version `i` to `i + 1`.
    static let migrations: [String] = [migration001, migration002, migration003, migration004, migration005, migration006]

    static var latestVersion: Int { migrations.count }
}
