import FerryRelay
import FerryTestSupport

/// The storage backends every storage and relay-process test runs against.
enum TestBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgresql

    var description: String { rawValue }

    /// A fresh, empty storage: a SQLite file in `dir`, or a new database in the shared cluster.
    func makeStorage(in dir: TempDir) throws -> any RelayStorage {
        switch self {
        case .sqlite: try SQLiteRelayStorage(path: dir.path + "/relay.db", synchronous: "NORMAL")
        case .postgresql: try PostgresRelayStorage(conninfo: try PostgresCluster.shared().createDatabase(), poolSize: 2)
        }
    }
}
