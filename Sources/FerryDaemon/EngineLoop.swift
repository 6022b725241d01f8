import FerryModel
import FerryStore
import FerrySystemd
import Foundation
import Synchronization

/// The engine's own loop: each turn it does real engine work (reads the store's state), keeps
/// systemd's STATUS= current and, only after that work succeeded, pings the watchdog. A hung
/// store or engine therefore stops the pings and systemd restarts the daemon.
///
/// The sync engine of a later issue runs its rounds from here.
final class EngineLoop: Sendable {
    struct Health: Sendable {
        var state = "idle"
        var lastError: String?
        var lastSuccessAt: Int64?
    }

    private let store: Store
    private let logger: Logger
    private let watchdogInterval: Duration?
    private let healthState = Mutex(Health())
    private let woken = Atomic<Bool>(false)
    private let statusStale = Atomic<Bool>(false)

    init(store: Store, logger: Logger, watchdogTimeout: Duration?) {
        self.store = store
        self.logger = logger
        self.watchdogInterval = watchdogTimeout.map { $0 / 2 }
    }

    var health: Health { healthState.withLock { $0 } }

    /// Asks for a turn now (SyncNow, local writes).
    func wake() { woken.store(true, ordering: .releasing) }

    /// Sends STATUS= again at the next turn even if it did not change (after a reload, which
    /// replaced it).
    func refreshStatus() {
        statusStale.store(true, ordering: .releasing)
        wake()
    }

    /// Runs until the task is cancelled.
    func run() async {
        let tick = min(watchdogInterval ?? .seconds(1), .seconds(1))
        var lastStatus = ""
        var countedAt: Int64 = -1
        var lastCount = ContinuousClock.now - .seconds(10)
        while !Task.isCancelled {
            let store = self.store
            // The turn's own work: read the store's position (cheap, and it proves the store
            // answers). Counting the outbox scans it, so that is redone only when something
            // changed, and at most every 2 seconds.
            let seq = try? await Blocking.run { () throws(FerryError) in store.lastSeq }
            if let seq {
                if seq != countedAt || statusStale.load(ordering: .acquiring), ContinuousClock.now - lastCount >= .seconds(2) {
                    if let stats = try? await Blocking.run({ () throws(FerryError) in try store.stats() }) {
                        countedAt = seq
                        lastCount = ContinuousClock.now
                        let status = stats.outbox == 0 ? "idle, nothing pending"
                            : "idle, \(stats.outbox) change\(stats.outbox == 1 ? "" : "s") pending"
                        if status != lastStatus || statusStale.exchange(false, ordering: .acquiring) {
                            SystemdNotifier.status(status)
                            lastStatus = status
                        }
                    }
                }
                if watchdogInterval != nil { SystemdNotifier.watchdog() }
            } else {
                logger.error("the engine could not read the store's state")
            }
            // Sleep for a tick, or until woken (checked every 50 ms).
            let deadline = ContinuousClock.now + tick
            while ContinuousClock.now < deadline, !Task.isCancelled {
                if woken.exchange(false, ordering: .acquiring) { break }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }
}
