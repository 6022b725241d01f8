import FerryPostgres
import FerrySync

/// Wakes this relay's long-polls for pushes that landed on other relays sharing the database:
/// a dedicated connection `LISTEN`s on `PostgresRelayStorage.channel`, and each notification
/// (its payload is the owner's hex id) becomes `LongPollHub.notify`. Notifications this relay's
/// own sessions sent are skipped (its service woke its waiters already). After a lost
/// connection, every waiter is woken: notifications may have been missed meanwhile.
public final class PostgresWakeListener: Sendable {
    private let listener: PostgresListener

    /// Connects and listens.
    /// - Throws: `RelayStorageError.database` when connecting or `LISTEN` fails.
    public init(conninfo: String, storage: PostgresRelayStorage, hub: LongPollHub, logger: RelayLogger) throws(RelayStorageError) {
        do {
            listener = try PostgresListener(
                conninfo: conninfo, channel: PostgresRelayStorage.channel,
                onNotification: { notification in
                    guard !storage.backendPIDs.contains(notification.senderPID),
                          let owner = OwnerID(hex: notification.payload) else { return }
                    hub.notify(owner)
                },
                onReconnect: {
                    logger.notice("listening for other relays' pushes again; waking every long-poll")
                    hub.wakeAll()
                },
                onError: { error in logger.error("listening for other relays' pushes: \(error)") })
        } catch {
            throw .database(context: "listening for other relays' pushes", message: "\(error)")
        }
    }

    public func start() { listener.start() }
    public func stop() { listener.stop() }
}
