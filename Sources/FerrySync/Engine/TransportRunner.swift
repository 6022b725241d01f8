import FerryModel
import FerryStore
import Foundation
import Synchronization

/// The push loop, the pull loop and the missing-attachments loop of one transport of one space.
///
/// Push: seals what the outbox holds for this transport, uploads the attachments those
/// versions reference first, pushes batches of at most the transport's `batchLimit` (a batch the
/// transport refuses as too large goes again in halves), and records each outcome in the
/// outbox (acknowledged, or refused for good with the reason).
/// Pull: reads pages after the stored cursor, opens and checks every envelope (another owner,
/// a bad key, tampering: refused and logged, never applied), fetches the attachments the
/// versions reference, applies them with the merge rules, then saves the cursor. Applying
/// again after a crash is harmless: the merge is idempotent. This device's own envelopes are
/// applied like any other: transports deliver them only when the store may lack them (see
/// `Transport.pull`), so a store restored from an older backup gets back what it wrote since.
/// Missing attachments: now and then, with backoff, looks for the blobs of attachments that
/// records of the space were applied without (they had not arrived within `attachmentWait`),
/// and stores those it finds.
final class TransportRunner: Sendable {
    let space: String
    let info: TransportInfo
    let transport: any Transport

    private let store: Store
    private let keys: OwnerKeys
    private let sealer: EnvelopeSealer
    private let blobs: BlobSealer
    private let options: SyncOptions
    private let log: SyncLog
    private let isPaused: @Sendable () -> Bool
    /// Called when this runner stored attachments whose bytes were missing: the space's other
    /// transports may have records whose blobs this device passed on without them.
    private let attachmentsArrived: @Sendable () -> Void

    private let pushSignal = WakeSignal()
    private let pushRetry = WakeSignal()
    private let pullRetry = WakeSignal()
    private let attachmentRetry = WakeSignal()
    private let blobCheck = WakeSignal()
    /// What the missing-attachments loop was asked, with `attachmentRetry`.
    private let attachmentRequest = Mutex(AttachmentRequest.none)
    /// Which loop is backing off because the host could not be reached: a success of the other
    /// loop shows it can be again, and ends that backoff at once.
    private let unreachable = Mutex<(push: Bool, pull: Bool)>((false, false))
    private let healthState = Mutex(TransportHealth())
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let currentPull = Mutex<Task<PullPage, any Error>?>(nil)
    /// Blobs this runner stored on the transport or found there, and when: trusted for
    /// `uploadTrust` only, since another device may remove a blob nothing references from its
    /// view (`deleteBlob`) and this device may reference it again later.
    private let uploadedBlobs = Mutex<[BlobKey: ContinuousClock.Instant]>([:])
    /// When the pull loop last applied everything the transport held (a page with no more
    /// after it): the blob removal runs only soon after, so that it has every reference other
    /// devices pushed until shortly before.
    private let pulledUpAt = Mutex<ContinuousClock.Instant?>(nil)
    private let blobRemoval = WakeSignal()
    /// Blobs the host kept as in use, and when it said to ask again (its Retry-After).
    private let blobRemovalNotBefore = Mutex<[BlobKey: ContinuousClock.Instant]>([:])
    private let missingSince = Mutex<[String: ContinuousClock.Instant]>([:])
    /// Attachments whose blob opened but holds more than this device's `MaxAttachmentBytes`,
    /// with that limit: not fetched again while the limit stays (each try downloaded the whole
    /// blob to refuse it again).
    private let overLimit = Mutex<[String: Int]>([:])
    /// Why the host lost this device's data, when the push loop found out: the pull loop (the
    /// only writer of the cursor) then starts the transport over.
    private let startOverRequest = Mutex<String?>(nil)

    init(space: String, info: TransportInfo, transport: any Transport, store: Store, keys: OwnerKeys,
         options: SyncOptions, log: SyncLog, isPaused: @escaping @Sendable () -> Bool,
         attachmentsArrived: @escaping @Sendable () -> Void = {}) {
        self.space = space
        self.info = info
        self.transport = transport
        self.store = store
        self.keys = keys
        self.sealer = EnvelopeSealer(keys: keys, device: store.nodeID)
        self.blobs = BlobSealer(keys: keys)
        self.options = options
        self.log = log
        self.isPaused = isPaused
        self.attachmentsArrived = attachmentsArrived
    }

    /// What the loops are doing and what went wrong, with a push that has waited longer than
    /// `options.slowPushAfter` for the transport's answer (`slowPush`).
    var health: TransportHealth {
        var health = healthState.withLock { $0 }
        if let since = pushWaitingSince.withLock({ $0 }) {
            let waited = ContinuousClock.now - since
            if waited >= options.slowPushAfter {
                health.slowPush = "\(info.name) has not answered a push for \(waited.components.seconds) s; "
                    + "still waiting: check the network and that \(info.name) is up"
            }
        }
        return health
    }
    /// Since when the push loop waits for the transport to answer its oldest push on the way.
    private let pushWaitingSince = Mutex<ContinuousClock.Instant?>(nil)
    var progressKey: String { "cursor:" + info.name }
    /// Where the last success is kept across restarts (at most once a minute, and at stop).
    private var lastSuccessKey: String { "last-success:" + info.name }
    /// The last success kept there (Unix milliseconds).
    private let lastSuccessSaved = Mutex<Int64>(0)
    private var fields: [String: String] { ["space": space, "transport": info.name] }

    func start() {
        // The last success before this start, so that status does not read "never" for a
        // transport that synced a minute before a restart.
        if let saved = (try? store.progress(space: space, key: lastSuccessKey)).flatMap({ $0.flatMap { Int64($0) } }) {
            healthState.withLock { h in h.lastSuccessAt = max(h.lastSuccessAt ?? 0, saved) }
            lastSuccessSaved.withLock { $0 = saved }
        }
        let push = Task { await self.pushLoop() }
        let pull = Task { await self.pullLoop() }
        let attachments = Task { await self.missingAttachmentsLoop() }
        var all = [push, pull, attachments]
        if transport.blobsCanVanish { all.append(Task { await self.blobCheckLoop() }) }
        if let retention = options.blobRetention { all.append(Task { await self.blobRemovalLoop(retention: retention) }) }
        tasks.withLock { $0 = all }
    }

    /// Stops the loops (an in-flight push finishes or is cancelled; nothing is lost: the
    /// outbox keeps what was not acknowledged) and closes the transport.
    func stop() async {
        let running = tasks.withLock { t -> [Task<Void, Never>] in defer { t = [] }; return t }
        for task in running { task.cancel() }
        currentPull.withLock { $0?.cancel() }
        for task in running { await task.value }
        await transport.close()
        // The last success since the last save (once a minute), so a restart shows the latest.
        if let last = healthState.withLock({ $0.lastSuccessAt }), lastSuccessSaved.withLock({ saved in
            defer { saved = max(saved, last) }
            return last > saved
        }) {
            await saveLastSuccess(last)
        }
    }

    /// Keeps `millis` as the last success (best effort).
    private func saveLastSuccess(_ millis: Int64) async {
        let store = self.store, space = self.space, key = lastSuccessKey
        _ = try? await Blocking.run { () throws(FerryError) in try store.setProgress(space: space, key: key, value: String(millis)) }
    }

    /// Local data changed: push soon.
    func localChange() { pushSignal.signal() }

    /// Attachments arrived through another transport of the space: check soon that this
    /// transport has the blobs of what it was sent (a record passed on before its attachment's
    /// bytes were here went up without them).
    func checkBlobsSoon() {
        if transport.blobsCanVanish { blobCheck.signal() }
    }

    /// SyncNow or resume: push and pull now, ending any backoff and any pull wait, and look for
    /// missing attachments now.
    func nudge() {
        pushSignal.signal()
        pushRetry.signal()
        pullRetry.signal()
        currentPull.withLock { $0?.cancel() }
        attachmentRequest.withLock { $0 = .lookNow }
        attachmentRetry.signal()
        blobCheck.signal()
        blobRemoval.signal()
    }

    // MARK: Push

    private func pushLoop() async {
        var failures = 0
        var lastPush = ContinuousClock.now - .seconds(60)
        var woken = false
        while !Task.isCancelled {
            if isPaused() {
                setState("paused")
                await pushSignal.wait(timeout: .seconds(5))
                continue
            }
            // Writes close together go out together: after a wake, a push follows the previous
            // one by at least the debounce (a first write after a quiet spell goes at once). A
            // backlog (`more`) is pushed back to back.
            if woken {
                let sinceLast = ContinuousClock.now - lastPush
                if sinceLast < options.debounce { try? await Task.sleep(for: options.debounce - sinceLast) }
                woken = false
            }
            do throws(SyncFailure) {
                setActivity(pushing: true)
                lastPush = ContinuousClock.now
                let pushed = try await pushRound()
                failures = 0
                if pushed {
                    reachedHost(by: .push)
                } else {
                    // Nothing to push: no earlier push failure is still in the way (the records
                    // it held went out through another round or stopped needing it), but the
                    // host was not asked anything, so it is no success either.
                    cleared(.push)
                }
                setActivity(pushing: false)
                await pushSignal.wait(timeout: options.pollInterval)
                woken = true
            } catch {
                if Task.isCancelled { break }   // stopping: what was not acknowledged stays queued
                activity.withLock { $0.pushing = false }
                if case .transport(.hostLostData(let why)) = error {
                    // The pull loop starts the transport over, then wakes this one.
                    startOverRequest.withLock { $0 = why }
                    pullRetry.signal()
                    currentPull.withLock { $0?.cancel() }
                    await pushRetry.wait(timeout: .seconds(5))
                    continue
                }
                failures += 1
                let delay = options.backoff(error, failures)
                unreachable.withLock { $0.push = Self.isUnreachable(error) }
                failed(error, retryIn: delay, during: .push)
                if case .transport(.quotaExceeded) = error {
                    await waitOutQuota(delay)
                } else {
                    await pushRetry.wait(timeout: delay)
                }
            }
        }
    }

    /// The backoff after the host refused the backlog for its quota. A host over its quota
    /// still takes deletions whose tombstones free the room of what they replace, so deletions
    /// the outbox holds go ahead of the backlog now and after local writes while the backoff
    /// lasts (a user deleting to make room sees it used at once). Returns, for the backlog to
    /// be tried again, when deletions went, at the backoff's end, or on SyncNow.
    private func waitOutQuota(_ delay: Duration) async {
        let deadline = ContinuousClock.now + delay
        // Reading the deletions reads the backlog's index: after a read of d, the next waits
        // at least 10 d (and 2 s), so writes during a long backoff cost a tenth of a CPU at most.
        var nextLook = ContinuousClock.now
        // Deletions may be waiting at first; later only a local write brings new ones.
        var wanted = true
        while !Task.isCancelled {
            if wanted, ContinuousClock.now >= nextLook {
                let (pushed, took) = await pushDeletionsAhead()
                if pushed > 0 {
                    log(.info, "\(info.name) is over its quota: \(pushed) deletion(s) went ahead of the backlog to free room", fields)
                    return
                }
                wanted = false
                nextLook = ContinuousClock.now + max(.seconds(2), took * 10)
            }
            let until = wanted ? min(deadline, nextLook) : deadline
            guard until > ContinuousClock.now else {
                if ContinuousClock.now >= deadline { return }
                continue
            }
            // A local write (or SyncNow, start-over) signals `pushSignal`; SyncNow and start-over
            // `pushRetry` as well, which ends the backoff.
            await pushSignal.wait(timeout: until - .now)
            if pushRetry.take() || ContinuousClock.now >= deadline { return }
            if ContinuousClock.now < until { wanted = true }
        }
    }

    /// After the host refused `batch` for its quota: pushes as much of it as fits, in halves (a
    /// backlog held as a whole may fit in part once deletions freed room), and marks what the
    /// host took (`Store.recordAhead`), so it is not offered again; the rest waits for the quota
    /// backoff. Stops at the first envelope that does not fit on its own, or any other failure:
    /// about twice log2(count) requests.
    private func pushWhatFits(_ batch: PreparedBatch) async {
        let name = info.name
        let middle = batch.envelopes.count / 2
        var ranges: [Range<Int>] = [0..<middle, middle..<batch.envelopes.count]
        var taken = 0
        while !ranges.isEmpty, !Task.isCancelled {
            let range = ranges.removeFirst()
            let outcomes: [PushOutcome]
            do throws(TransportFailure) {
                outcomes = try await Self.push(batch.envelopes[range], to: transport)
            } catch {
                guard case .quotaExceeded = error, range.count > 1 else { break }
                let half = range.lowerBound + range.count / 2
                ranges.insert(contentsOf: [range.lowerBound..<half, half..<range.upperBound], at: 0)
                continue
            }
            let items = range.map { (rid: batch.rids[$0], version: batch.versions[$0]) }
            guard let took = await recordTakenAhead(items, outcomes, since: batch.since) else { break }
            taken += took.taken
        }
        guard taken > 0 else { return }
        log(.info, "\(name) is over its quota: \(taken) of \(batch.envelopes.count) record(s) fitted and went; the rest waits", fields)
    }

    /// Pushes the deletions the outbox holds for the transport, past its backlog, batch after
    /// batch, and records what the transport took (`Store.recordAhead`). Returns how many it
    /// stored (not counting those it had), and how long reading the outbox took. Stops at the
    /// first failure, which the caller's backoff already covers.
    private func pushDeletionsAhead() async -> (stored: Int, reading: Duration) {
        let store = self.store, space = self.space, name = info.name, limit = batchEnvelopes
        var stored = 0
        var reading = Duration.zero
        var seen = Set<Int64>()
        while !Task.isCancelled, !isPaused() {
            let started = ContinuousClock.now
            guard let (items, since) = try? await local("reading the outbox's deletions", { () throws(FerryError) in
                try store.pendingDeletions(space: space, transport: name, limit: limit)
            }) else { break }
            reading += ContinuousClock.now - started
            // Only what was not offered in this round: a deletion refused goes no further.
            let fresh = items.filter { seen.insert($0.rid).inserted }
            guard !fresh.isEmpty else { break }
            let outcomes: [PushOutcome]
            do throws(TransportFailure) {
                outcomes = try await Self.push(fresh.map { sealer.seal($0.version) }[...], to: transport)
            } catch {
                break
            }
            guard let took = await recordTakenAhead(fresh.map { ($0.rid, $0.version) }, outcomes, since: since) else { break }
            stored += took.stored
            if items.count < limit { break }
        }
        return (stored, reading)
    }

    /// Records what the transport answered for versions pushed past its cursor: those it
    /// stored or had are marked taken ahead (`Store.recordAhead`), those it refused are
    /// refusals (logged). Returns how many it took and how many of those it stored new, or nil
    /// when the answer does not fit the push or could not be recorded.
    private func recordTakenAhead(_ items: [(rid: Int64, version: RecordVersion)], _ outcomes: [PushOutcome],
                                  since: Int64) async -> (taken: Int, stored: Int)? {
        let store = self.store, space = self.space, name = info.name
        guard outcomes.count == items.count else { return nil }
        var acked: [(rid: Int64, hlc: Stamp)] = []
        var stored = 0
        for (item, outcome) in zip(items, outcomes) {
            switch outcome {
            case .accepted:
                acked.append((item.rid, item.version.hlc))
                stored += 1
            case .duplicate:
                acked.append((item.rid, item.version.hlc))
            case .rejected(let why):
                log(.warning, "\(name) refused \(item.version.entity)/\(item.version.id): \(why)",
                    fields.merging(["entity": item.version.entity], uniquingKeysWith: { a, _ in a }))
                try? await local("recording a refusal by \(name)") { () throws(FerryError) in
                    try store.reject(space: space, transport: name, key: item.version.key, hlc: item.version.hlc, error: why)
                }
            }
        }
        let took = acked
        guard (try? await local("recording what \(name) took", { () throws(FerryError) in
            try store.recordAhead(space: space, transport: name, since: since, acked: took)
        })) != nil else { return nil }
        healthState.withLock { $0.pushed += Int64(took.count) }
        return (took.count, stored)
    }

    /// One sealed batch, ready to push: its attachments are on the transport already.
    private struct PreparedBatch: Sendable {
        var envelopes: [Envelope]
        var versions: [RecordVersion]
        /// The store's row of each version (`Store.Pending.rid`), for acknowledging it.
        var rids: [Int64]
        /// The change-log range the batch covers (`Store.recordPush`): every record the
        /// transport needs after `from` up to `through` is in it; the next batch starts after
        /// `through`.
        var from: Int64
        var through: Int64
        /// The transport's start-over mark when read (`Store.PendingPage.since`).
        var since: Int64
        /// More may be pending than this batch holds.
        var more: Bool
        /// Versions left out of `envelopes` because the transport refused an attachment they
        /// reference as too large, with the reason: rejected when the batch's outcomes are
        /// recorded, so they wait for a later version instead of holding every record back.
        var refused: [(RecordVersion, String)] = []
    }

    /// Pushes what the outbox holds for the transport, batch after batch, and returns when it
    /// is empty. Pipelined: up to `transport.pushesInFlight` batches are on their way while the
    /// next is read, sealed and its attachments uploaded; a batch leaves as soon as there is
    /// room, and outcomes are recorded in batch order. A failure stops the round (what was not
    /// acknowledged stays in the outbox, and batches already sent are answered as duplicates
    /// when sent again) and is thrown. Returns whether anything was pushed (an empty outbox asks
    /// nothing of the host, so it proves nothing about it).
    @discardableResult
    private func pushRound() async throws(SyncFailure) -> Bool {
        let window = max(1, transport.pushesInFlight)
        var sending: [(batch: PreparedBatch, task: Task<Result<[PushOutcome], TransportFailure>, Never>)] = []
        func abandon() async {
            for item in sending { item.task.cancel() }
            for item in sending { _ = await item.task.value }
            sending.removeAll()
        }
        var next = try await prepareBatch(after: 0)
        var pushed = false
        while true {
            // Fill the window, reading ahead one batch beyond what is on its way.
            while sending.count < window, let batch = next {
                sending.append((batch, send(batch)))
                do {
                    next = batch.more ? try await prepareBatch(after: batch.through) : nil
                } catch {
                    await abandon()
                    throw error
                }
            }
            guard !sending.isEmpty else { return pushed }
            let (batch, task) = sending.removeFirst()
            let outcomes: [PushOutcome]
            pushWaitingSince.withLock { $0 = .now }
            let answer = await withTaskCancellationHandler(operation: { await task.value }, onCancel: { task.cancel() })
            pushWaitingSince.withLock { $0 = nil }
            switch answer {
            case .success(let o): outcomes = o
            case .failure(let e):
                await abandon()
                if case .quotaExceeded = e, batch.envelopes.count > 1 { await pushWhatFits(batch) }
                throw .transport(e)
            }
            do {
                try await record(outcomes, of: batch)
            } catch {
                await abandon()
                throw error
            }
            if !batch.envelopes.isEmpty {
                pushed = true
                succeeded(.push)
            }
        }
    }

    /// Starts pushing a batch; the task's value is the transport's answer (nothing is sent for
    /// a batch whose every version was left out).
    private func send(_ batch: PreparedBatch) -> Task<Result<[PushOutcome], TransportFailure>, Never> {
        let transport = self.transport, envelopes = batch.envelopes
        return Task {
            if envelopes.isEmpty { return .success([]) }
            do throws(TransportFailure) {
                return .success(try await Self.push(envelopes[...], to: transport))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Pushes `envelopes` and returns one outcome per envelope. A batch the transport refuses
    /// as too large is pushed again in halves (and those in halves, as far as needed), so the
    /// rest goes through; an envelope refused as too large on its own is rejected, which keeps
    /// it in the outbox with the reason instead of holding every later record back.
    private static func push(_ envelopes: ArraySlice<Envelope>, to transport: any Transport) async throws(TransportFailure) -> [PushOutcome] {
        do {
            return try await transport.push(Array(envelopes))
        } catch {
            guard case .tooLarge(let why) = error else { throw error }
            if envelopes.count == 1 { return [.rejected("too large for \(transport.name): \(why)")] }
            let middle = envelopes.startIndex + envelopes.count / 2
            let first = try await push(envelopes[..<middle], to: transport)
            return first + (try await push(envelopes[middle...], to: transport))
        }
    }

    /// Reads the next batch after `after` (and after the transport's cursor) in change-log
    /// order, seals it and uploads the attachments it references; nil when nothing is pending
    /// (or the engine is paused). A batch with no envelopes moves the cursor past changes the
    /// transport does not need.
    private func prepareBatch(after: Int64) async throws(SyncFailure) -> PreparedBatch? {
        let store = self.store, space = self.space, name = info.name, limit = batchEnvelopes
        let page = try await local("reading the outbox") { () throws(FerryError) in
            try store.pending(space: space, transport: name, after: after, limit: limit)
        }
        // A pause set before these records were written stops them here, before they leave.
        guard !isPaused() else { return nil }
        guard !page.items.isEmpty else {
            guard page.through > page.from else { return nil }
            return PreparedBatch(envelopes: [], versions: [], rids: [], from: page.from, through: page.through,
                                 since: page.since, more: false)
        }
        var batch: [Envelope] = []
        var versions: [RecordVersion] = []
        var rids: [Int64] = []
        var bytes = 0
        var through = page.through
        for (i, item) in page.items.enumerated() {
            let envelope = sealer.seal(item.version)
            let size = envelope.encodedSize
            if !batch.isEmpty, bytes + size > batchBytes {
                through = page.items[i - 1].outboxSeq
                break
            }
            batch.append(envelope)
            versions.append(item.version)
            rids.append(item.rid)
            bytes += size
        }
        let cutShort = versions.count < page.items.count
        let tooLarge = try await uploadAttachments(of: versions)
        var refused: [(RecordVersion, String)] = []
        if !tooLarge.isEmpty {
            var kept: [Envelope] = [], keptVersions: [RecordVersion] = [], keptRIDs: [Int64] = []
            for (i, (envelope, version)) in zip(batch, versions).enumerated() {
                if let sha = version.attachments.first(where: { tooLarge[$0] != nil }), let why = tooLarge[sha] {
                    refused.append((version, "attachment \(sha.prefix(12))… is too large for \(name): \(why)"))
                } else {
                    kept.append(envelope)
                    keptVersions.append(version)
                    keptRIDs.append(rids[i])
                }
            }
            batch = kept
            versions = keptVersions
            rids = keptRIDs
        }
        return PreparedBatch(envelopes: batch, versions: versions, rids: rids, from: page.from, through: through,
                             since: page.since, more: cutShort || page.items.count >= limit, refused: refused)
    }

    /// Records a pushed batch's outcomes: acknowledged, or refused for good.
    private func record(_ outcomes: [PushOutcome], of batch: PreparedBatch) async throws(SyncFailure) {
        let store = self.store, space = self.space, name = info.name
        guard outcomes.count == batch.envelopes.count else {
            throw .transport(.unavailable("the transport answered \(outcomes.count) outcomes for \(batch.envelopes.count) envelopes"))
        }
        var acks: [(rid: Int64, hlc: Stamp)] = []
        var refusals: [(RecordVersion, String)] = batch.refused
        for (i, (version, outcome)) in zip(batch.versions, outcomes).enumerated() {
            switch outcome {
            case .accepted, .duplicate: acks.append((batch.rids[i], version.hlc))
            case .rejected(let why): refusals.append((version, why))
            }
        }
        let acknowledged = acks
        let refused = refusals.map { (key: $0.0.key, hlc: $0.0.hlc, error: $0.1) }
        try await local("recording what \(name) stored") { () throws(FerryError) in
            try store.recordPush(space: space, transport: name, from: batch.from, through: batch.through,
                                 since: batch.since, acked: acknowledged, refused: refused)
        }
        for (version, why) in refusals {
            log(.warning, "\(name) refused \(version.entity)/\(version.id): \(why)",
                fields.merging(["entity": version.entity], uniquingKeysWith: { a, _ in a }))
        }
        healthState.withLock {
            $0.pushed += Int64(acknowledged.count)
            $0.refused += Int64(refusals.count)
            if let last = refusals.last { $0.lastRefusal = "push of \(last.0.entity)/\(last.0.id): \(last.1)" }
        }
    }

    /// Seals and uploads the attachments `versions` reference that the transport lacks.
    /// Attachments whose bytes are not on this device are skipped: the device that has them
    /// uploads them. Returns the attachments the transport refused as too large, with its
    /// reason (the versions referencing them are rejected; any other failure is thrown).
    private func uploadAttachments(of versions: [RecordVersion]) async throws(SyncFailure) -> [String: String] {
        var tooLarge: [String: String] = [:]
        for version in versions where !version.attachments.isEmpty {
            for sha in version.attachments where tooLarge[sha] == nil {
                let key = keys.blobKey(sha256: sha)
                if uploadedRecently(key) { continue }
                guard let path = store.attachmentPath(sha) else { continue }
                do {
                    if try await transport.hasBlob(key: key) {
                        uploadedBlobs.withLock { $0[key] = .now }
                        continue
                    }
                } catch { throw .transport(error) }
                do { try await upload(sha, from: path, key: key) } catch {
                    if case .transport(.tooLarge(let why)) = error {
                        tooLarge[sha] = why
                        continue
                    }
                    throw error
                }
            }
        }
        return tooLarge
    }

    /// Seals attachment `sha` (its bytes at `path`) and puts the blob under `key`. Returns
    /// false, uploading nothing, when this device's copy no longer hashes to `sha` (changed or
    /// cut short outside ferryd): it is set aside (`Store.setAttachmentAside`), so the engine
    /// fetches it again from a transport that has it, instead of spreading bytes that no
    /// device could open.
    @discardableResult
    private func upload(_ sha: String, from path: String, key: BlobKey, replacing: Bool = false) async throws(SyncFailure) -> Bool {
        let sealed = scratchPath("up")
        defer { unlink(sealed) }
        do throws(BlobSealError) {
            try blobs.seal(file: path, to: sealed, expectedSHA256: sha)
        } catch {
            guard case .contentMismatch = error else { throw .local("sealing attachment \(sha.prefix(12)): \(error)") }
            let store = self.store
            try await local("setting aside attachment \(sha.prefix(12))") { () throws(FerryError) in try store.setAttachmentAside(sha) }
            log(.error, "\(info.name): attachment \(sha) on this device is damaged (\(error)); it was set aside and is "
                + "fetched again from a transport that has it, or store the original file again with 'ferryctl attach FILE'", fields)
            return false
        }
        do {
            if replacing {
                try await transport.replaceBlob(key: key, from: sealed)
            } else {
                try await transport.putBlob(key: key, from: sealed)
            }
        } catch { throw .transport(error) }
        uploadedBlobs.withLock { $0[key] = .now }
        return true
    }

    /// Whether blob `key` was stored on the transport, or found there, within `uploadTrust`.
    private func uploadedRecently(_ key: BlobKey) -> Bool {
        uploadedBlobs.withLock { known in
            guard let at = known[key] else { return false }
            if ContinuousClock.now - at < Self.uploadTrust { return true }
            known[key] = nil
            return false
        }
    }

    /// How long a blob stored or found on the transport is taken to be there without asking.
    /// ferry-relay keeps a blob at least `BlobDeleteGraceSeconds` (an hour by default) after a
    /// device stored it or asked for it, so a push within this time after that finds it there.
    static let uploadTrust: Duration = .seconds(600)

    // MARK: Blobs that vanish

    /// For a transport whose blobs can vanish: every `blobCheckInterval` times the transport's
    /// `blobCheckFactor`, at SyncNow and resume, and when attachments arrived through another
    /// transport, puts back the blobs of the space's attachments that are here and that the
    /// transport no longer has (deleted by a user or the sync tool, removed by another device,
    /// or never sent up), so other devices can still fetch them. Only attachments of versions the transport was sent count: the push
    /// puts the blobs of the others before it sends them (counting them had a resume report
    /// blobs "gone" that were only not sent yet).
    private func blobCheckLoop() async {
        while !Task.isCancelled {
            await blobCheck.wait(timeout: options.blobCheckInterval * max(1, transport.blobCheckFactor))
            if Task.isCancelled { break }
            if isPaused() { continue }
            await putBackVanishedBlobs()
        }
    }

    /// One check: the attachments the space's records sent to the transport reference, a page
    /// of records at a time; for each one here whose blob the transport lacks, the blob is
    /// sealed and put again. A failure ends the check early (the sync loops report such
    /// failures); it is only logged.
    private func putBackVanishedBlobs() async {
        let store = self.store, space = self.space, name = info.name
        var after: Int64 = 0
        var putBack = 0
        var repaired = 0
        var checked = Set<String>()
        // The blobs of which a copy changed since the last check that finished (all of them the
        // first time): each copy is read back, and when one does not open this device writes
        // its own (over its own damaged one), so a good copy is there even when the device
        // whose copy was damaged is gone.
        let progressKey = "blobs-checked:" + name
        let started = Int64(Date().timeIntervalSince1970) - 2
        let changed: Set<BlobKey>
        do {
            let since = try await local("reading progress") { () throws(FerryError) in
                try store.progress(space: space, key: progressKey).flatMap { Int64($0) }
            }
            changed = try await transport.blobsChanged(since: since)
        } catch {
            log(.debug, "\(info.name): cannot check attachment blobs: \(error)", fields)
            return
        }
        while !Task.isCancelled && !isPaused() {
            let page: (shas: [String], last: Int64?)
            do {
                let from = after
                page = try await local("listing attachments") { () throws(FerryError) in
                    try store.referencedAttachments(space: space, afterRID: from, sentTo: name)
                }
            } catch {
                log(.debug, "\(info.name): cannot check attachment blobs: \(error)", fields)
                return
            }
            guard let last = page.last else { break }
            after = last
            for sha in page.shas where checked.insert(sha).inserted {
                guard let path = store.attachmentPath(sha) else { continue }
                let key = keys.blobKey(sha256: sha)
                do {
                    if try await transport.hasBlob(key: key) {
                        if changed.contains(key), try await !everyCopyOpens(sha, key: key),
                           try await upload(sha, from: path, key: key, replacing: true) {
                            repaired += 1
                        }
                        continue
                    }
                    if try await upload(sha, from: path, key: key) { putBack += 1 }
                } catch {
                    log(.debug, "\(info.name): cannot check attachment blobs: \(error)", fields)
                    return
                }
            }
        }
        if Task.isCancelled || isPaused() { return }
        if putBack > 0 {
            log(.warning, "\(info.name): \(putBack) attachment file(s) this device has were gone from the transport "
                + "(deleted by a user or the sync tool, removed by another device, or not uploaded by the device that passed "
                + "their records on); they were written again", fields)
        }
        if repaired > 0 {
            log(.warning, "\(info.name): \(repaired) attachment file(s) were damaged on the transport "
                + "(cut short or altered by the sync tool); this device wrote them again", fields)
        }
        _ = try? await local("saving progress") { () throws(FerryError) in
            try store.setProgress(space: space, key: progressKey, value: String(started))
        }
    }

    /// Whether every copy of blob `key` the transport holds opens to attachment `sha`.
    private func everyCopyOpens(_ sha: String, key: BlobKey) async throws(SyncFailure) -> Bool {
        let sealed = scratchPath("check")
        let plain = scratchPath("plain")
        defer { unlink(sealed); unlink(plain) }
        for copy in 0..<Self.maxBlobCopies {
            switch try await openCopy(copy, of: sha, key: key, sealed: sealed, plain: plain) {
            case .absent: return true
            case .opened: continue
            case .refused: return false
            }
        }
        return true
    }

    /// What copy number `copy` of a blob is: not there, opened to its attachment (the bytes are
    /// at `plain`), or there but refused with why.
    private enum Copy {
        case absent, opened, refused(any Error)
    }

    /// Fetches copy number `copy` of blob `key` to `sealed` and opens it to `plain`, checking it
    /// is attachment `sha`.
    private func openCopy(_ copy: Int, of sha: String, key: BlobKey, sealed: String, plain: String) async throws(SyncFailure) -> Copy {
        let found: Bool
        do { found = try await transport.getBlob(key: key, to: sealed, copy: copy) } catch { throw .transport(error) }
        guard found else { return .absent }
        do {
            try blobs.open(file: sealed, to: plain, expectedSHA256: sha, maxBytes: Int64(store.configuration.maxAttachmentBytes))
            return .opened
        } catch {
            return .refused(error)
        }
    }

    // MARK: Blobs nothing references

    /// Removes from the transport the blobs of attachments nothing in the space has referenced
    /// for `retention` (`Store.blobDeletions`): every quarter of it (between 1 s and the blob
    /// check interval), and at SyncNow and resume.
    private func blobRemovalLoop(retention: Duration) async {
        let every = min(max(retention / 4, .seconds(1)), options.blobCheckInterval)
        while !Task.isCancelled {
            await blobRemoval.wait(timeout: every)
            if Task.isCancelled { break }
            if isPaused() { continue }
            await removeUnreferencedBlobs(retention: retention)
        }
    }

    /// One pass: only while the pull applied everything the transport held within
    /// `pulledUpWithin` (and has not failed or been paused since), so that a reference another
    /// device pushed before then is here (and took its blob off the list). A blob the host
    /// keeps as in use (a device stored it or asked for it lately) stays listed, and is asked
    /// for again no sooner than the host said; by then that device's reference, if it made
    /// one, has been pulled. A failure ends the pass; the sync loops report it.
    private func removeUnreferencedBlobs(retention: Duration) async {
        guard let pulled = pulledUpAt.withLock({ $0 }), ContinuousClock.now - pulled < pulledUpWithin else { return }
        let store = self.store, space = self.space, name = info.name
        let before = store.configuration.wallClock() / 1000 - retention.components.seconds
        var removed = 0, kept = 0
        while !Task.isCancelled && !isPaused() {
            let due: [String]
            do {
                due = try await local("listing blobs to remove") { () throws(FerryError) in
                    try store.blobDeletions(space: space, transport: name, unreferencedBefore: before, limit: Self.blobRemovalPage)
                }
            } catch {
                log(.debug, "\(name): cannot remove unreferenced blobs: \(error)", fields)
                break
            }
            var done: [String] = []
            var failure: TransportFailure?
            var waiting = 0
            for sha in due where !Task.isCancelled {
                let key = keys.blobKey(sha256: sha)
                if let at = blobRemovalNotBefore.withLock({ $0[key] }), at > .now {
                    waiting += 1
                    continue
                }
                do {
                    switch try await transport.deleteBlob(key: key) {
                    case .deleted:
                        done.append(sha)
                        uploadedBlobs.withLock { $0[key] = nil }
                        blobRemovalNotBefore.withLock { $0[key] = nil }
                    case .inUse(let retryAfter):
                        kept += 1
                        if let retryAfter { blobRemovalNotBefore.withLock { $0[key] = .now + retryAfter } }
                    }
                } catch {
                    failure = error
                    break
                }
            }
            if !done.isEmpty {
                let finished = done
                _ = try? await local("forgetting removed blobs") { () throws(FerryError) in
                    try store.blobsDeleted(space: space, transport: name, shas: finished, unreferencedBefore: before)
                }
                removed += done.count
            }
            if let failure {
                log(.debug, "\(name): cannot remove unreferenced blobs: \(failure)", fields)
                break
            }
            if due.count < Self.blobRemovalPage || done.count + waiting < due.count || done.isEmpty { break }
        }
        if removed > 0 || kept > 0 {
            log(.info, "\(name): removed \(removed) attachment blob(s) nothing references any more"
                + (kept > 0 ? "; kept \(kept) a device stored or asked for lately (tried again later)" : ""), fields)
        }
    }

    /// How recently the pull must have caught up for blobs to be removed: a caught-up pull
    /// comes back at least every poll interval (empty), so twice that and a margin, at most
    /// 5 minutes.
    private var pulledUpWithin: Duration { min(options.pollInterval * 2 + .seconds(5), .seconds(300)) }
    /// How many blobs to remove one pass lists at a time.
    static let blobRemovalPage = 200

    // MARK: Pull

    private func pullLoop() async {
        var failures = 0
        var caughtUp = false
        let store = self.store, space = self.space, key = progressKey
        var cursor = try? await Blocking.run { () throws(FerryError) in try store.progress(space: space, key: key) }
        // A backlog is read ahead: the page after the one being applied is already on its way.
        var ahead: PageAhead?
        func dropAhead() {
            ahead?.task.cancel()
            ahead = nil
        }
        defer { dropAhead() }
        while !Task.isCancelled {
            if isPaused() {
                dropAhead()
                // What others pushed meanwhile is not here: no blob is removed before a pull
                // after the resume has caught up.
                pulledUpAt.withLock { $0 = nil }
                setState("paused")
                await pullRetry.wait(timeout: .seconds(5))
                continue
            }
            if let why = startOverRequest.withLock({ r -> String? in defer { r = nil }; return r }) {
                dropAhead()
                if await startOver(because: why) {
                    cursor = nil
                    caughtUp = false
                }
            }
            do throws(SyncFailure) {
                let page: OpenedPage
                if let fetched = ahead, fetched.after == cursor {
                    ahead = nil
                    page = try await Self.page(from: fetched.task)
                } else {
                    dropAhead()
                    page = Self.open(try await fetch(after: cursor, wait: caughtUp ? options.pollInterval : .zero),
                                     with: sealer, limits: store.configuration.limits)
                }
                // Applying a page, or a backlog, shows as pulling; a caught-up long-poll as idle.
                if page.envelopeCount > 0 || page.more { setActivity(pulling: true) }
                if page.more && !isPaused() {
                    let transport = self.transport, limit = batchEnvelopes, after = page.cursor
                    let sealer = self.sealer, limits = store.configuration.limits
                    ahead = PageAhead(after: after, task: Task {
                        Self.open(try await transport.pull(after: after, limit: limit, wait: .zero), with: sealer, limits: limits)
                    })
                }
                let next = try await apply(page, after: cursor)
                cursor = next
                failures = 0
                succeeded(.pull)
                caughtUp = !page.more
                if caughtUp {
                    setActivity(pulling: false)
                    if !isPaused() { pulledUpAt.withLock { $0 = .now } }
                }
                reachedHost(by: .pull)
            } catch {
                dropAhead()
                if Task.isCancelled { break }   // stopping: the saved cursor is where the next start goes on
                activity.withLock { $0.pulling = false }
                if case .transport(.hostLostData(let why)) = error, await startOver(because: why) {
                    cursor = nil
                    caughtUp = false
                    continue
                }
                failures += 1
                // The retry is a quick pull, not a long wait, so a host that is back shows as
                // working (and its news is applied) at once.
                caughtUp = false
                pulledUpAt.withLock { $0 = nil }
                let delay = options.backoff(error, failures)
                unreachable.withLock { $0.pull = Self.isUnreachable(error) }
                failed(error, retryIn: delay, during: .pull)
                await pullRetry.wait(timeout: delay)
            }
        }
    }

    /// The next page of a backlog, pulled and opened while the one before it is applied; used
    /// only if the cursor it was asked after is the one saved then.
    private struct PageAhead {
        var after: String
        var task: Task<OpenedPage, any Error>
    }

    /// A pulled page with its envelopes opened: what `apply` writes. Opening (decrypting,
    /// checking and parsing each envelope) needs no store, so a backlog's next page is opened
    /// on the read-ahead task while the page before it is written.
    private struct OpenedPage: Sendable {
        /// The versions of the envelopes that opened, in the transport's order.
        var versions: [RecordVersion]
        /// Why each envelope that did not open was refused.
        var refusals: [String]
        /// The envelopes the page held.
        var envelopeCount: Int
        /// What the transport could not read, its cursor after the page, and whether more is there.
        var unreadable: [String]
        var cursor: String
        var more: Bool
    }

    private static func open(_ page: PullPage, with sealer: EnvelopeSealer, limits: RecordLimits) -> OpenedPage {
        var versions: [RecordVersion] = [], refusals: [String] = []
        versions.reserveCapacity(page.envelopes.count)
        // Envelopes this device sealed are applied too: a transport delivers them only when the
        // store may not have them (it was restored from an older backup, and a copy of this
        // device wrote them since), and one it has is a duplicate, which changes nothing.
        for envelope in page.envelopes {
            do {
                versions.append(try sealer.open(envelope, limits: limits))
            } catch {
                refusals.append("envelope \(envelope.header.event) from device \(envelope.header.device): \(error)")
            }
        }
        return OpenedPage(versions: versions, refusals: refusals, envelopeCount: page.envelopes.count,
                          unreadable: page.unreadable, cursor: page.cursor, more: page.more)
    }

    /// The host lost what this device had sent or read: forgets the transport's cursor, progress
    /// and acknowledgements and queues every record of the space for it again (see
    /// `Store.restartTransport`), then wakes the push loop. Only the pull loop calls it, so no
    /// cursor of the old reading is saved after it. False when the store failed (then the
    /// failure is shown and retried like any local one).
    private func startOver(because why: String) async -> Bool {
        let store = self.store, space = self.space, name = info.name
        // A loss the push loop asked to start over for before now is one this start-over
        // covers (every record queued again, the host read from its beginning): when both
        // loops met the same loss, the transport starts over once, not twice.
        let requested = startOverRequest.withLock { r -> String? in defer { r = nil }; return r }
        do throws(SyncFailure) {
            try await local("starting \(name) over") { () throws(FerryError) in
                try store.restartTransport(space: space, name: name)
            }
        } catch {
            failed(error, retryIn: .seconds(1), during: .pull)
            startOverRequest.withLock { $0 = $0 ?? requested ?? why }
            return false
        }
        // Blobs it stored may be gone with the rest: ask the host again before skipping one.
        uploadedBlobs.withLock { $0.removeAll() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        healthState.withLock { h in
            h.lastError = "\(TransportFailure.hostLostData(why)): started over (every record is sent again, the host is read from its beginning)"
            h.lastErrorKind = TransportFailure.hostLostData(why).kind
            h.lastErrorAt = now
        }
        log(.warning, "\(name): \(why); started over: every record of space \(space) is queued for it again and it is read from its beginning", fields)
        pushSignal.signal()
        pushRetry.signal()
        return true
    }

    /// Asks the transport for the page after `cursor`, waiting up to `wait` for news; a
    /// `nudge` cancels the wait.
    private func fetch(after cursor: String?, wait: Duration) async throws(SyncFailure) -> PullPage {
        let transport = self.transport, limit = batchEnvelopes
        let task = Task { () async throws -> PullPage in try await transport.pull(after: cursor, limit: limit, wait: wait) }
        currentPull.withLock { $0 = task }
        defer { currentPull.withLock { $0 = nil } }
        return try await Self.page(from: task)
    }

    private static func page<Page: Sendable>(from task: Task<Page, any Error>) async throws(SyncFailure) -> Page {
        switch await withTaskCancellationHandler(operation: { await task.result }, onCancel: { task.cancel() }) {
        case .success(let p): return p
        case .failure(let error as TransportFailure): throw .transport(error)
        case .failure(let error): throw .local("pulling: \(error)")
        }
    }

    /// Applies a page pulled after `cursor`, then saves its cursor; returns the cursor saved.
    private func apply(_ page: OpenedPage, after cursor: String?) async throws(SyncFailure) -> String? {
        // Paused meanwhile: apply nothing, keep the cursor; the page is read again on resume.
        if isPaused() { return cursor }
        for problem in page.unreadable {
            log(.warning, "\(info.name): skipped an unreadable frame: \(problem)", fields)
            healthState.withLock { $0.refused += 1; $0.lastRefusal = problem }
        }
        for why in page.refusals {
            log(.warning, "\(info.name) delivered an envelope that was refused: \(why)", fields)
            healthState.withLock { $0.refused += 1; $0.lastRefusal = why }
        }
        let versions = page.versions
        if !versions.isEmpty {
            let withoutSome = try await fetchAttachments(of: versions)
            let store = self.store, space = self.space, name = info.name, apply = versions
            let results = try await local("applying \(apply.count) remote version(s)") { () throws(FerryError) in
                try store.applyRemote(space: space, apply, origin: .remote(transport: name), payloadsAreWellFormed: true)
            }
            // Only now, with the records applied, are their attachments listed as missing.
            if withoutSome {
                attachmentRequest.withLock { if $0 == .none { $0 = .restart } }
                attachmentRetry.signal()
            }
            for (version, result) in zip(versions, results) {
                if case .rejected(let error) = result {
                    log(.warning, "\(name): refused \(version.entity)/\(version.id): \(error)", fields)
                    healthState.withLock { $0.refused += 1; $0.lastRefusal = "\(version.entity)/\(version.id): \(error)" }
                }
            }
            healthState.withLock { $0.pulled += Int64(versions.count) }
        }
        if page.cursor != cursor, !(cursor == nil && page.cursor.isEmpty) {
            let store = self.store, space = self.space, key = progressKey, value = page.cursor
            try await local("saving the cursor") { () throws(FerryError) in try store.setProgress(space: space, key: key, value: value) }
        }
        return page.cursor
    }

    /// Fetches and opens the attachments `versions` reference that are not here yet, for the
    /// versions that can win the merge: one the store, or a later version in the same page,
    /// already beats needs none (its attachments are looked for later if it ever becomes
    /// current). A blob not on the transport yet stops the page (it is retried, its cursor
    /// unsaved) until `attachmentWait` has passed; every blob the page misses waits that
    /// one time together, not one after another. After it the records are applied without
    /// them, and the missing-attachments loop looks for them again later. Returns whether
    /// some was given up.
    private func fetchAttachments(of versions: [RecordVersion]) async throws(SyncFailure) -> Bool {
        var wanted: [(version: RecordVersion, shas: [String])] = []
        for version in versions where !version.attachments.isEmpty {
            let absent = version.attachments.filter { store.attachmentPath($0) == nil }
            if !absent.isEmpty { wanted.append((version, absent)) }
        }
        if wanted.isEmpty { return false }
        let winners = try await versionsThatCanWin(wanted.map(\.version), among: versions)
        var waitingFor: String?
        var givenUp: [(sha: String, owner: String)] = []
        var overLimitApplied = false
        for (index, (version, shas)) in wanted.enumerated() where winners.contains(index) {
            for sha in shas where store.attachmentPath(sha) == nil {
                // A blob refused (a torn copy a sync tool is still writing, or damaged) is waited
                // for like one not there yet, and then looked for again later.
                switch try await fetchAttachment(sha, of: "\(version.entity)/\(version.id)") {
                case .stored:
                    missingSince.withLock { _ = $0.removeValue(forKey: sha) }
                    continue
                case .overLimit:
                    // Waiting would not change it: the record goes without it now.
                    overLimitApplied = true
                    continue
                case .notThere, .refused:
                    break
                }
                let now = ContinuousClock.now
                let since = missingSince.withLock { m -> ContinuousClock.Instant in
                    if let s = m[sha] { return s }
                    m[sha] = now
                    return now
                }
                if now - since < options.attachmentWait {
                    // Go on: every blob the page misses starts its wait on this pass.
                    if waitingFor == nil { waitingFor = sha }
                    continue
                }
                givenUp.append((sha, "\(version.entity)/\(version.id)"))
            }
        }
        if let waitingFor { throw .waitingForAttachment(waitingFor) }
        // Said once, when the page is applied (not at each retry while another blob is awaited).
        for (sha, owner) in givenUp {
            log(.warning, "\(info.name): attachment \(sha.prefix(12))… of \(owner) did not arrive; "
                + "applying the record without it (it is looked for again later)", fields)
        }
        // Versions that cannot win are applied without their attachments too (as losing
        // versions, which RestoreConflict may bring back): the missing-attachments loop looks.
        return !givenUp.isEmpty || overLimitApplied || winners.count < wanted.count
    }

    /// The indexes of `candidates` that can become current: no later version of the same
    /// record in `page` has a greater stamp, and the store holds none as great.
    private func versionsThatCanWin(_ candidates: [RecordVersion], among page: [RecordVersion]) async throws(SyncFailure) -> Set<Int> {
        // Keys compare ids by their bytes, as the store does: ids equal only as strings are two
        // records.
        var newest: [RecordKey: Stamp] = [:]
        for version in page {
            let key = RecordKey(entity: version.entity, id: version.id)
            if let stamp = newest[key], stamp >= version.hlc { continue }
            newest[key] = version.hlc
        }
        let store = self.store, space = self.space
        let keys = candidates.map { RecordKey(entity: $0.entity, id: $0.id) }
        let stored = try await local("reading the versions here") { () throws(FerryError) -> [Stamp?] in
            try keys.map { key throws(FerryError) in try store.get(space: space, entity: key.entity, id: key.id)?.hlc }
        }
        var winners = Set<Int>()
        for (index, version) in candidates.enumerated() {
            if let newer = newest[keys[index]], newer > version.hlc { continue }
            if let here = stored[index], here >= version.hlc { continue }
            winners.insert(index)
        }
        return winners
    }

    /// The most copies of one blob tried (a folder holds one per device that stored it).
    static let maxBlobCopies = 64

    /// What became of one attempt to fetch an attachment.
    private enum Fetched {
        /// Fetched, verified and stored: the attachment is present.
        case stored
        /// The transport has no blob under its key (yet).
        case notThere
        /// The blob is there but was refused (it does not open to those bytes): logged and
        /// counted as a refusal.
        case refused
        /// The blob is there and whole, but the attachment is over this device's
        /// `MaxAttachmentBytes`: said once, not fetched again while the limit stays.
        case overLimit
    }

    /// Fetches the blob of attachment `sha` (referenced by `owner`, for messages), opens and
    /// verifies it, and stores the attachment.
    private func fetchAttachment(_ sha: String, of owner: String) async throws(SyncFailure) -> Fetched {
        let limit = store.configuration.maxAttachmentBytes
        if overLimit.withLock({ $0[sha] }) == limit { return .overLimit }
        let key = keys.blobKey(sha256: sha)
        let sealed = scratchPath("down")
        let plain = scratchPath("plain")
        defer { unlink(sealed); unlink(plain) }
        // A damaged copy (cut short or altered by a sync tool) does not hide a good one that
        // another device stored.
        var opened = false
        copies: for copy in 0..<Self.maxBlobCopies {
            switch try await openCopy(copy, of: sha, key: key, sealed: sealed, plain: plain) {
            case .absent:
                if copy == 0 { return .notThere }
                break copies
            case .opened:
                opened = true
                break copies
            case .refused(let error):
                if case .tooLarge? = error as? BlobSealError {
                    overLimit.withLock { $0[sha] = limit }
                    let why = "attachment \(sha.prefix(12))… of \(owner) is larger than this device takes "
                        + "(MaxAttachmentBytes=\(limit)); its record is applied without it and it is not fetched again: "
                        + "raise MaxAttachmentBytes in ferryd.conf and restart ferryd to take it"
                    log(.warning, "\(info.name): \(why)", fields)
                    healthState.withLock { $0.refused += 1; $0.lastRefusal = why }
                    return .overLimit
                }
                let why = "attachment \(sha.prefix(12))… of \(owner): \(error)"
                log(.warning, "\(info.name) delivered a blob that was refused: \(why)", fields)
                healthState.withLock { $0.refused += 1; $0.lastRefusal = why }
            }
        }
        guard opened else { return .refused }
        let store = self.store
        _ = try await local("storing attachment \(sha.prefix(12))") { () throws(FerryError) in
            try store.putAttachment(fromFile: plain, expectedSHA256: sha)
        }
        return .stored
    }

    // MARK: Missing attachments

    /// What the missing-attachments loop is asked to do besides waiting.
    private enum AttachmentRequest {
        case none
        /// SyncNow: look now.
        case lookNow
        /// Records were just applied without an attachment: look within `attachmentRetry`.
        case restart
    }

    /// Looks again for the blobs of the attachments the space's records reference but that are
    /// not here (records applied without them once `attachmentWait` passed), and stores those
    /// the transport has now. The first look is `attachmentRetry` after the start or after a
    /// record was applied without one; a look that stores none doubles the wait, up to
    /// `attachmentRetryMax` (also the wait while none is missing); one that stores some starts
    /// it over, and one that fails doubles it too. `SyncNow` looks at once. Never a busy loop: a
    /// look is a store query per 100 missing attachments and one `getBlob` for each.
    private func missingAttachmentsLoop() async {
        var delay = options.attachmentRetry
        var next = ContinuousClock.now + delay
        while !Task.isCancelled {
            await attachmentRetry.wait(timeout: max(next - ContinuousClock.now, .zero))
            if Task.isCancelled { break }
            let now = ContinuousClock.now
            let request = attachmentRequest.withLock { r -> AttachmentRequest in defer { r = .none }; return r }
            if request == .restart {
                delay = options.attachmentRetry
                next = min(next, now + delay)
            }
            if request != .lookNow && now < next { continue }
            if isPaused() {
                next = now + options.attachmentRetry
                continue
            }
            let found = await lookForMissingAttachments()
            if found.stored > 0 { attachmentsArrived() }
            delay = found.stored > 0 ? options.attachmentRetry
                : found.missing == 0 && found.complete ? options.attachmentRetryMax
                : min(delay * 2, options.attachmentRetryMax)
            next = ContinuousClock.now + delay
        }
    }

    /// One look for missing attachments: how many were missing, how many of them were stored,
    /// and whether the look went through them all. A failure (the transport unreachable, the
    /// store failing) ends it early; the sync loops report such failures, so it is only logged.
    private func lookForMissingAttachments() async -> (missing: Int, stored: Int, complete: Bool) {
        let store = self.store, space = self.space
        var missing = 0, stored = 0
        var after: String?
        while !Task.isCancelled && !isPaused() {
            let page: [String]
            do {
                let from = after
                page = try await local("listing missing attachments") { () throws(FerryError) in
                    try store.missingAttachments(space: space, after: from)
                }
            } catch {
                log(.debug, "\(info.name): cannot look for missing attachments: \(error)", fields)
                return (missing, stored, false)
            }
            guard let last = page.last else { return (missing, stored, true) }
            missing += page.count
            for sha in page {
                if Task.isCancelled || isPaused() { return (missing, stored, false) }
                if let path = store.attachmentPath(sha) {
                    // The bytes are here but not recorded (a crash between the two): check them
                    // against their name and record them.
                    do {
                        _ = try await local("recording attachment \(sha.prefix(12))") { () throws(FerryError) in
                            try store.putAttachment(fromFile: path, expectedSHA256: sha)
                        }
                        stored += 1
                        missingSince.withLock { _ = $0.removeValue(forKey: sha) }
                    } catch {
                        log(.warning, "\(info.name): attachment \(sha.prefix(12))… is here but cannot be recorded: \(error)", fields)
                    }
                    continue
                }
                do throws(SyncFailure) {
                    if try await fetchAttachment(sha, of: "space \(space)") == .stored {
                        stored += 1
                        missingSince.withLock { _ = $0.removeValue(forKey: sha) }
                        log(.info, "\(info.name): attachment \(sha.prefix(12))… arrived late and is stored", fields)
                    }
                } catch {
                    log(.debug, "\(info.name): looking for missing attachment \(sha.prefix(12))… failed: \(error)", fields)
                    return (missing, stored, false)
                }
            }
            after = last
        }
        return (missing, stored, false)
    }

    // MARK: Helpers

    /// The most envelopes in one push or pull page: the transport's batch, within the options'.
    private var batchEnvelopes: Int { max(1, min(options.batchEnvelopes, transport.batchLimit.envelopes)) }
    /// The most envelope bytes in one push.
    private var batchBytes: Int { max(1, min(options.batchBytes, transport.batchLimit.bytes)) }

    private func local<T: Sendable>(_ what: String, _ body: @escaping @Sendable () throws(FerryError) -> T) async throws(SyncFailure) -> T {
        do { return try await Blocking.run(body) } catch { throw .local("\(what): \(error)") }
    }

    private func scratchPath(_ kind: String) -> String {
        options.scratchDirectory + "/\(kind)-\(UInt64.random(in: 0...UInt64.max))"
    }

    /// What the loops are doing, for the transport's state: `pushing` while a push round
    /// runs, else `pulling` while pages are applied or a backlog is read, else `idle`.
    private let activity = Mutex((pushing: false, pulling: false))

    private func setActivity(pushing: Bool? = nil, pulling: Bool? = nil) {
        let now = activity.withLock { a in
            if let pushing { a.pushing = pushing }
            if let pulling { a.pulling = pulling }
            return a
        }
        setState(now.pushing ? "pushing" : now.pulling ? "pulling" : "idle")
    }

    private func setState(_ state: String) {
        healthState.withLock { h in
            // A loop that works again does not hide the other one's backoff.
            h.state = state == "idle" && !h.failing.isEmpty ? "backoff" : state
        }
    }

    /// A round of `loop` succeeded: its failure, if any, is put right (the other loop's stays).
    private func succeeded(_ loop: Loop) {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        healthState.withLock { h in
            h.lastSuccessAt = now
            h.failing[loop.name] = nil
            h.retryAt = h.failing.values.map(\.retryAt).min()
            if h.failing.isEmpty, h.state == "backoff" || h.state == "failed" { h.state = "idle" }
        }
        let save = lastSuccessSaved.withLock { saved in
            guard now - saved >= 60_000 else { return false }
            saved = now
            return true
        }
        if save { Task { await saveLastSuccess(now) } }
    }

    /// `loop`'s failure, if any, no longer stands, though the host was not reached.
    private func cleared(_ loop: Loop) {
        healthState.withLock { h in
            h.failing[loop.name] = nil
            h.retryAt = h.failing.values.map(\.retryAt).min()
            if h.failing.isEmpty, h.state == "backoff" || h.state == "failed" { h.state = "idle" }
        }
    }

    private func failed(_ failure: SyncFailure, retryIn delay: Duration, during loop: Loop) {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let retryAt = now + Int64(delay.components.seconds * 1000) + Int64(delay.components.attoseconds / 1_000_000_000_000_000)
        let first = healthState.withLock { h -> Bool in
            let repeated = h.lastError == failure.description
            h.state = "backoff"
            h.lastError = failure.description
            h.lastErrorKind = Self.kind(failure)
            h.lastErrorAt = now
            h.failing[loop.name] = (failure.description, retryAt)
            h.retryAt = h.failing.values.map(\.retryAt).min()
            return !repeated
        }
        if case .waitingForAttachment = failure {
            log(.debug, "\(info.name) \(loop.name): \(failure)", fields)
        } else {
            log(first ? .warning : .debug, "\(info.name) \(loop.name) failed: \(failure); retrying in \(delay)", fields)
        }
    }

    private enum Loop {
        case push, pull
        var name: String { self == .push ? "push" : "pull" }
    }

    /// A loop reached the host: the other one, if it is backing off because it could not,
    /// tries again now.
    private func reachedHost(by loop: Loop) {
        let other = unreachable.withLock { u -> Bool in
            switch loop {
            case .push: defer { u.pull = false }; return u.pull
            case .pull: defer { u.push = false }; return u.push
            }
        }
        if other { (loop == .push ? pullRetry : pushRetry).signal() }
    }

    private static func isUnreachable(_ failure: SyncFailure) -> Bool {
        if case .transport(.unavailable) = failure { return true }
        return false
    }

    private static func kind(_ failure: SyncFailure) -> String {
        switch failure {
        case .transport(let f): f.kind
        case .local: "local"
        case .waitingForAttachment: "waiting"
        }
    }
}
