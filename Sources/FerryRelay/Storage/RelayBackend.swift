import Foundation

/// The storage the configuration names, opened: events and tokens (`RelayStorage`), blob bytes
/// (`BlobStore`) and, with PostgreSQL, the listener that wakes long-polls for pushes made
/// through other relays. The one place that turns `[Relay] Storage=` into objects.
public struct RelayBackend: Sendable {
    public let storage: any RelayStorage
    public let blobs: any BlobStore
    private let wakes: PostgresWakeListener?
    /// The SQLite storage, emptied of its log at `close`.
    private var sqlite: SQLiteRelayStorage? { storage as? SQLiteRelayStorage }

    /// Opens everything `serve` needs and starts listening for other relays' pushes into `hub`.
    /// - Throws: `RelayStorageError` for the database, or the file system's error for blob directories.
    public static func open(_ configuration: RelayConfiguration, hub: LongPollHub, logger: RelayLogger) throws -> RelayBackend {
        try createStateDirectory(configuration)
        try lockStateDirectory(configuration.stateDirectory)
        switch configuration.storage {
        case .sqlite:
            let storage = try SQLiteRelayStorage(path: configuration.databasePath, cacheMiB: configuration.cacheMiB)
            return RelayBackend(storage: storage, blobs: try BlobFiles(root: configuration.blobDirectory), wakes: nil)
        case .postgresql:
            let conninfo = configuration.postgresConnection ?? ""
            let storage = try PostgresRelayStorage(conninfo: conninfo, poolSize: configuration.postgresPoolSize,
                                                   timeout: .seconds(configuration.postgresTimeoutSeconds))
            let wakes = try PostgresWakeListener(conninfo: conninfo, storage: storage, hub: hub, logger: logger)
            wakes.start()
            logger.info("storage: PostgreSQL at \(storage.target)", ["storage": "postgresql"])
            return RelayBackend(storage: storage, blobs: try PostgresBlobStore(storage: storage, spool: configuration.blobSpoolDirectory),
                                wakes: wakes)
        }
    }

    /// Opens the storage alone (for `ferry-relay admin`).
    public static func openStorage(_ configuration: RelayConfiguration) throws -> any RelayStorage {
        switch configuration.storage {
        case .sqlite:
            try createStateDirectory(configuration)
            return try SQLiteRelayStorage(path: configuration.databasePath, cacheMiB: configuration.cacheMiB)
        case .postgresql:
            return try PostgresRelayStorage(conninfo: configuration.postgresConnection ?? "", poolSize: 1,
                                            timeout: .seconds(configuration.postgresTimeoutSeconds))
        }
    }

    /// At shutdown, once no request runs: stops listening, and leaves every write of a SQLite
    /// storage in its database file. Returns false when its log could not be emptied (it is
    /// read back at the next start).
    @discardableResult
    public func close() -> Bool {
        wakes?.stop()
        return sqlite?.close() ?? true
    }

    /// Takes the state directory for this process until it exits (`relay.lock`, flock): two
    /// serving relays in one directory would share its uploads in progress, and with SQLite
    /// neither would hear of the other's pushes.
    /// - Throws: `StateDirectoryError` ("lock") when another process holds it.
    private static func lockStateDirectory(_ path: String) throws {
        let fd = Glibc.open(path + "/relay.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StateDirectoryError(path: path, errno: errno, operation: "lock") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw StateDirectoryError(path: path, errno: code, operation: "lock")
        }
        // Held, open, for the life of the process.
    }

    /// Makes the state directory (0700) when it is missing.
    /// - Throws: `StateDirectoryError` saying what is in the way.
    private static func createStateDirectory(_ configuration: RelayConfiguration) throws {
        let path = configuration.stateDirectory
        if try stateDirectoryExists(path) { return }
        // Each missing component in turn, so a failure names the system's reason.
        var built = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            built += "/" + component
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw StateDirectoryError(path: path, errno: errno, operation: "create")
            }
        }
        _ = chmod(path, 0o700)   // mkdir's mode went through the umask
    }

    /// Whether the state directory is there (false when it is missing).
    /// - Throws: `StateDirectoryError` when something else is in the way, it cannot be written
    ///   in, or it cannot be reached.
    static func stateDirectoryExists(_ path: String) throws -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let code = errno
            guard code == ENOENT else { throw StateDirectoryError(path: path, errno: code, operation: "reach") }
            return false
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw StateDirectoryError(path: path, errno: ENOTDIR, operation: "use") }
        guard access(path, R_OK | W_OK | X_OK) == 0 else { throw StateDirectoryError(path: path, errno: errno, operation: "write in") }
        return true
    }
}
