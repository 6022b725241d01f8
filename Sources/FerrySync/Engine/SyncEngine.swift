import FerryModel
import FerryStore
import Foundation
import Synchronization

/// Runs every configured transport of every space: one `TransportRunner` (a push loop and a
/// pull loop) each, each transport with a full copy of its space. The one owner of the set of
/// runners; everything else asks it.
///
/// Paused, the loops idle; the data and the outbox stay, and resuming goes on where they were.
public final class SyncEngine: Sendable {
    /// Builds a transport from its configuration and its space's owner keys.
    public typealias TransportFactory = @Sendable (TransportInfo, OwnerKeys, NodeID) throws(TransportFailure) -> any Transport

    public let keyring: OwnerKeyring
    private let store: Store
    private let options: SyncOptions
    private let log: SyncLog
    private let makeTransport: TransportFactory
    private let runners = Mutex<[String: TransportRunner]>([:])
    /// Configured transports that could not be built, with why.
    private let broken = Mutex<[String: String]>([:])
    private let paused: Atomic<Bool>
    /// Serializes `reconcile` calls.
    private let reconciling = AsyncLock()

    static let pausedSetting = "engine-paused"

    public init(store: Store, options: SyncOptions, log: SyncLog, makeTransport: @escaping TransportFactory) {
        self.store = store
        self.options = options
        self.log = log
        self.makeTransport = makeTransport
        self.keyring = OwnerKeyring(store: store)
        self.paused = Atomic((try? store.setting(Self.pausedSetting)) == "1")
        Self.emptyScratch(options.scratchDirectory)
    }

    private static func key(_ space: String, _ name: String) -> String { space + "\u{0}" + name }

    /// Asks the runners of `space` but `name` to check their blobs soon.
    private func checkBlobsSoon(space: String, except name: String) {
        let others = runners.withLock { r in r.values.filter { $0.space == space && $0.info.name != name } }
        for runner in others { runner.checkBlobsSoon() }
    }

    /// Removes the files a previous run left in the scratch directory (sealed blobs on their
    /// way up or down, opened ones, imports): a run killed mid-transfer left them, and nothing
    /// else would (a 50 MB attachment cut short left 100 MB). Nothing uses it before the engine
    /// starts.
    static func emptyScratch(_ directory: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names {
            var st = stat()
            let path = directory + "/" + name
            if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG { unlink(path) }
        }
    }

    /// Makes the running transports match the configured ones: starts new ones, stops removed
    /// ones, restarts changed ones. Also gives every space its owner keys.
    public func reconcile() async {
        await reconciling.run {
            mkdir(options.scratchDirectory, 0o700)
            var wanted: [String: (String, TransportInfo)] = [:]
            for space in store.spaces() {
                do {
                    _ = try keyring.keys(for: space.name)
                    for t in try store.transports(space: space.name) { wanted[Self.key(space.name, t.name)] = (space.name, t) }
                } catch {
                    log(.error, "cannot read the sync setup of space \(space.name): \(error)", ["space": space.name])
                }
            }
            let current = runners.withLock { $0 }
            for (key, runner) in current where wanted[key]?.1 != runner.info {
                await runner.stop()
                runners.withLock { _ = $0.removeValue(forKey: key) }
                log(.info, "stopped transport \(runner.info.name) of space \(runner.space)", ["space": runner.space, "transport": runner.info.name])
            }
            broken.withLock { b in b = b.filter { wanted[$0.key] != nil } }
            for (key, (space, info)) in wanted.sorted(by: { $0.key < $1.key }) where runners.withLock({ $0[key] == nil }) {
                do {
                    let keys = try keyring.keys(for: space)
                    let transport: any Transport
                    do { transport = try makeTransport(info, keys, store.nodeID) } catch {
                        broken.withLock { $0[key] = "\(error)" }
                        log(.error, "cannot start transport \(info.name) of space \(space): \(error)", ["space": space, "transport": info.name])
                        continue
                    }
                    let runner = TransportRunner(space: space, info: info, transport: transport, store: store, keys: keys,
                                                 options: options, log: log, isPaused: { [weak self] in self?.isPaused ?? true },
                                                 attachmentsArrived: { [weak self] in self?.checkBlobsSoon(space: space, except: info.name) })
                    runners.withLock { $0[key] = runner }
                    broken.withLock { _ = $0.removeValue(forKey: key) }
                    runner.start()
                    log(.info, "started transport \(info.name) (\(info.kind)) of space \(space)", ["space": space, "transport": info.name])
                } catch {
                    log(.error, "cannot start transport \(info.name) of space \(space): \(error)", ["space": space, "transport": info.name])
                }
            }
        }
    }

    /// Adds (or reconfigures) a transport: the store queues every record of the space for it,
    /// then its loops start. A running transport of that name is stopped first.
    /// - Parameter startOver: for a name that exists: it now points at another place, so it
    ///   starts from nothing like a new one (see `Store.addTransport`).
    public func addTransport(space: String, name: String, kind: String, config: String, startOver: Bool = true) async throws(FerryError) {
        await stopRunner(space: space, name: name)
        try store.addTransport(space: space, name: name, kind: kind, config: config, startOver: startOver)
        await reconcile()
    }

    /// Removes a transport: its loops stop first, then its cursor and progress go.
    public func removeTransport(space: String, name: String) async throws(FerryError) {
        await stopRunner(space: space, name: name)
        try store.removeTransport(space: space, name: name)
        await reconcile()
    }

    private func stopRunner(space: String, name: String) async {
        await reconciling.run {
            if let runner = runners.withLock({ $0.removeValue(forKey: Self.key(space, name)) }) { await runner.stop() }
        }
    }

    /// Records of `spaces` changed (a commit, local or from a transport): the push loops of
    /// those spaces look at what their transports need soon. Loops of other spaces are left
    /// alone: nothing there changed for them.
    public func localChange(spaces: Set<String>) {
        for runner in runners.withLock({ Array($0.values) }) where spaces.contains(runner.space) { runner.localChange() }
    }

    /// Push and pull now, ending backoffs and waits; nil: every space.
    public func syncNow(space: String? = nil) {
        for runner in runners.withLock({ Array($0.values) }) where space == nil || runner.space == space { runner.nudge() }
    }

    /// Where blobs are staged.
    public var scratchDirectory: String { options.scratchDirectory }

    public var isPaused: Bool { paused.load(ordering: .sequentiallyConsistent) }

    /// Pauses or resumes every loop; kept across restarts.
    public func setPaused(_ value: Bool) throws(FerryError) {
        try store.setSetting(Self.pausedSetting, value ? "1" : nil)
        paused.store(value, ordering: .sequentiallyConsistent)
        // Paused: the loops check before anything leaves or is applied, and park at their next
        // turn. Resumed: they go at once.
        syncNow()
    }

    /// Stops every loop and closes every transport.
    public func stop() async {
        let all = runners.withLock { r -> [TransportRunner] in defer { r = [:] }; return Array(r.values) }
        for runner in all { await runner.stop() }
    }

    /// One configured transport's state.
    public struct TransportState: Sendable {
        public var space: String
        public var info: TransportInfo
        public var health: TransportHealth
        /// The transport's own account; nil when it could not be started.
        public var status: TransportStatus?
    }

    /// The sync loops' health of every running transport (without asking the transports for
    /// their own status, so it never waits).
    public var health: [TransportHealth] { runners.withLock { $0.values.map(\.health) } }

    /// Every configured transport's state.
    public func states() async -> [TransportState] {
        var out: [TransportState] = []
        for space in store.spaces() {
            guard let configured = try? store.transports(space: space.name) else { continue }
            for info in configured {
                let key = Self.key(space.name, info.name)
                if let runner = runners.withLock({ $0[key] }) {
                    var health = runner.health
                    if isPaused { health.state = "paused" }
                    out.append(TransportState(space: space.name, info: info, health: health, status: await runner.transport.status()))
                } else {
                    var health = TransportHealth()
                    health.state = "failed"
                    let why = broken.withLock { $0[key] } ?? "not started yet"
                    health.lastError = why
                    health.failing["start"] = (why, 0)
                    out.append(TransportState(space: space.name, info: info, health: health, status: nil))
                }
            }
        }
        return out
    }

    // MARK: Owners

    /// The recovery phrase of a space's owner.
    public func recoveryPhrase(space: String) throws(FerryError) -> String {
        RecoveryPhrase.encode(try keyring.keys(for: space))
    }

    /// Makes `space` belong to the owner of `phrase`: the records already here stay and are
    /// queued for every transport again; transports start over under the new owner.
    /// - Throws: `SyncEngine.OwnerError`.
    public func restoreOwner(space: String, phrase: String) async throws(OwnerError) {
        let keys: OwnerKeys
        do { keys = try RecoveryPhrase.decode(phrase) } catch { throw .phrase(error) }
        // Two spaces of one owner would write one folder directory and one relay log as the
        // same device, each overwriting the other's files: one space per owner per device.
        if let other = store.spaces().first(where: { $0.name != space && $0.ownerID == keys.owner.description }) {
            throw .ownerInUse(space: space, by: other.name)
        }
        do throws(FerryError) {
            if try keyring.keys(for: space).owner == keys.owner { return }
            let configured = try store.transports(space: space)
            // Stop the space's runners first, so none pushes under the old owner meanwhile.
            for info in configured {
                if let runner = runners.withLock({ $0.removeValue(forKey: Self.key(space, info.name)) }) { await runner.stop() }
            }
            try keyring.restore(space: space, keys: keys)
            try store.requeueForTransports(space: space)
        } catch {
            throw .store(error)
        }
        log(.notice, "space \(space) now belongs to owner \(keys.owner); its records are queued for upload", ["space": space])
        await reconcile()
    }

    /// Why an owner could not be restored.
    public enum OwnerError: Error, Sendable, CustomStringConvertible {
        case phrase(RecoveryPhraseError)
        case store(FerryError)
        /// Another space on this device already belongs to that owner.
        case ownerInUse(space: String, by: String)

        public var description: String {
            switch self {
            case .phrase(let e): "\(e)"
            case .store(let e): "\(e)"
            case .ownerInUse(let space, let other):
                "space \(other) on this device already belongs to the owner of that phrase, and one owner syncs "
                    + "through one space per device: use space \(other) (--space \(other)) instead of \(space)"
            }
        }
    }
}

/// An async mutual exclusion for rare, long operations (reconfiguring the engine).
final class AsyncLock: Sendable {
    private let state = Mutex<(locked: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func run<T: Sendable>(_ body: () async -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if !s.locked { s.locked = true; return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
        let result = await body()
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty { s.locked = false; return nil }
            return s.waiters.removeFirst()
        }
        next?.resume()
        return result
    }
}
