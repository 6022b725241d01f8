import FerryPostgres
import FerrySQLite
import Foundation

extension RelayBackend {
    /// What `ferry-relay check-config` says of the storage the configuration names, found
    /// without changing anything: no directory or database is created and no migration runs
    /// (a check with a newer ferry-relay must leave a running relay's database as it is). An
    /// existing SQLite database is opened read-only; PostgreSQL is only read.
    /// - Returns: one line, e.g. "storage sqlite: /var/lib/ferry-relay/relay.db, schema version 3 (current)".
    /// - Throws: `StateDirectoryError` for a state directory that cannot be used or made,
    ///   `RelaySchemaTooNew`, `RelayStorageError.database` for a database that cannot be read.
    public static func check(_ configuration: RelayConfiguration) throws -> String {
        let directory = try checkStateDirectory(configuration.stateDirectory)
        switch configuration.storage {
        case .sqlite:
            let path = configuration.databasePath
            guard FileManager.default.fileExists(atPath: path) else {
                return "storage sqlite: \(path) does not exist yet; serve creates it" + (directory ?? "")
            }
            let version: Int
            do {
                let db = try Database(path: path, mode: .readOnly)
                version = Int(try db.scalarInt("PRAGMA user_version") ?? 0)
            } catch {
                throw RelayStorageError.database(context: "reading \(path)", message: "\(error)")
            }
            return "storage sqlite: \(path), " + (try schemaState(version, latest: RelaySchema.latestVersion))
        case .postgresql:
            let version: Int?
            let target: String
            var taken: [String] = []
            do {
                let db = try PostgresConnection(conninfo: configuration.postgresConnection ?? "", timeout: .seconds(configuration.postgresTimeoutSeconds))
                target = db.target
                let tables = try db.execute("SELECT (to_regclass('relay_schema') IS NOT NULL)::int::bigint").int64(0, 0)
                version = tables == 0 ? nil
                    : Int(try db.execute("SELECT COALESCE(MAX(version), 0)::bigint FROM relay_schema").int64(0, 0))
                // Tables of the relay's names that its schema version does not account for.
                for name in Self.postgresTables where try db.execute("SELECT (to_regclass($1) IS NOT NULL)::int::bigint", [.text(name)]).int64(0, 0) == 1 {
                    taken.append(name)
                }
            } catch {
                throw RelayStorageError.database(context: "reading the PostgreSQL database", message: "\(error)")
            }
            if (version ?? 0) <= 0, !taken.isEmpty {
                throw RelayStorageError.database(context: "checking \(target)", message: "it holds tables named like the relay's "
                    + "(\(taken.joined(separator: ", "))) but no relay schema version, so serve could not create its own: give the relay "
                    + "a database of its own, or a schema (add options='-c search_path=NAME' to Connection=)")
            }
            guard let version else { return "storage postgresql: \(target) has no relay tables yet; serve creates them" }
            return "storage postgresql: \(target), " + (try schemaState(version, latest: PostgresRelaySchema.latestVersion))
        }
    }

    /// The tables the PostgreSQL schema creates (`PostgresRelaySchema`, version 1).
    static let postgresTables = ["owners", "tokens", "grants", "events", "blobs", "blob_chunks", "pairing_codes"]

    private static func schemaState(_ version: Int, latest: Int) throws -> String {
        if version > latest { throw RelaySchemaTooNew(found: version, known: latest) }
        if version < 0 { throw RelayStorageError.database(context: "checking the schema", message: "its schema version is \(version), which no relay writes") }
        return version == latest ? "schema version \(version) (current)" : "schema version \(version); serve migrates it to \(latest)"
    }

    /// Checks that the state directory is a directory this process can write in, or that it
    /// could be made (its nearest existing ancestor is one); nil, or what serve would make.
    private static func checkStateDirectory(_ path: String) throws -> String? {
        if try stateDirectoryExists(path) { return nil }
        var status = stat()
        var ancestor = URL(fileURLWithPath: path).deletingLastPathComponent().path
        while stat(ancestor, &status) != 0 {
            guard errno == ENOENT, ancestor != "/" else { throw StateDirectoryError(path: path, errno: errno, operation: "create") }
            ancestor = URL(fileURLWithPath: ancestor).deletingLastPathComponent().path
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw StateDirectoryError(path: path, errno: ENOTDIR, operation: "create") }
        guard access(ancestor, W_OK | X_OK) == 0 else { throw StateDirectoryError(path: path, errno: errno, operation: "create") }
        return " (and the state directory \(path))"
    }
}
