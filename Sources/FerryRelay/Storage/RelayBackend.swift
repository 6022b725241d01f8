import Foundation

/// The storage the configuration names, opened: events and tokens (`RelayStorage`), blob bytes
/// (`BlobStore`) and, with PostgreSQL, the listener that wakes long-polls for pushes made
/// through other relays. The one place that turns `[Relay] Storage=` into objects.
public struct RelayBackend: Sendable {
    public let storage: any RelayStorage
    public let blobs: any BlobStore
    private let wakes: PostgresWakeListener?

    /// Opens everything `serve` needs and starts listening for other relays' pushes into `hub`.
    /// - Throws: `RelayStorageError` for the database, or the file system's error for blob directories.
    public static func open(_ configuration: RelayConfiguration, hub: LongPollHub, logger: RelayLogger) throws -> RelayBackend {
        try createStateDirectory(configuration)
        switch configuration.storage {
        case .sqlite:
            let storage = try SQLiteRelayStorage(path: configuration.databasePath)
            return RelayBackend(storage: storage, blobs: try BlobFiles(root: configuration.blobDirectory), wakes: nil)
        case .postgresql:
            let conninfo = configuration.postgresConnection ?? ""
            let storage = try PostgresRelayStorage(conninfo: conninfo, poolSize: configuration.postgresPoolSize)
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
            return try SQLiteRelayStorage(path: configuration.databasePath)
        case .postgresql:
            return try PostgresRelayStorage(conninfo: configuration.postgresConnection ?? "", poolSize: 1)
        }
    }

    /// Stops listening (at shutdown).
    public func close() { wakes?.stop() }

    private static func createStateDirectory(_ configuration: RelayConfiguration) throws {
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }
}
