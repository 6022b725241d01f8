import FerrySync
import Synchronization

/// An in-memory log shared by several `MemoryTransport`s: the engine's unit tests use it in
/// place of a folder or a relay. It keeps every pushed envelope once per event id, in order.
final class MemoryLog: Sendable {
    struct State {
        var envelopes: [Envelope] = []
        var events: Set<EventID> = []
        var blobs: [BlobKey: [UInt8]] = [:]
        /// When set, every call fails with it.
        var failure: TransportFailure?
        /// When set, every pull fails with it.
        var pullFailure: TransportFailure?
        /// When set, every push fails with it.
        var pushFailure: TransportFailure?
        var pushes = 0
        /// When set, a push whose envelopes add up to more bytes fails with `.tooLarge` and
        /// stores none of them, as ferry-relay refuses a body over its `MaxBodyBytes`.
        var maxPushBytes: Int?
        /// Pushes refused as too large.
        var tooLarge = 0
        /// When set, a blob of more bytes is refused with `.tooLarge`, as ferry-relay refuses
        /// one over its `MaxBlobBytes`.
        var maxBlobBytes: Int?
        /// When set, blobs put are kept but not shown (`hasBlob` and `getBlob` answer that none
        /// is there) until it is cleared: as a synced folder's blob files that the sync tool
        /// copies over after the segments that reference them.
        var blobsHidden = false
        /// Blobs `deleteBlob` answers `.inUse` for, as ferry-relay does for one stored or looked
        /// for lately; and the keys removed, in order.
        var blobsInUse: Set<BlobKey> = []
        var deletedBlobs: [BlobKey] = []
        /// The Retry-After of an `.inUse` answer, and how many removals were asked for.
        var inUseRetryAfter: Duration?
        var deleteAttempts = 0
        /// Whether its transports say blobs can vanish (as a synced folder's can).
        var blobsCanVanish = false
        /// Pushes the transports of this log allow at once, how long each takes, and the most
        /// seen on their way together.
        var window = 1
        var pushDelay: Duration = .zero
        /// How long each pull that finds envelopes takes.
        var pullDelay: Duration = .zero
        var pushing = 0
        var mostPushing = 0
        /// Bumped when a pull shows the log lost envelopes; cursors of an earlier epoch are then
        /// refused, as ferry-relay refuses every cursor it handed out before it found it lost data.
        var epoch = 0
        /// When set, the next push finds the log lost envelopes (as a folder transport finds
        /// its own files gone): the epoch is bumped, the push fails with `.hostLostData` of this
        /// message, and pulls with a cursor of an earlier epoch are refused with it too.
        var lossOnNextPush: String?
        var lossMessage: String?
        /// While true, pulls wait before they look at anything, cancelled or not; `pullsWaiting`
        /// counts those waiting.
        var pullGate = false
        var pullsWaiting = 0
        /// Blobs handed out by `getBlob`.
        var blobReads = 0
    }

    let state = Mutex(State())

    var count: Int { state.withLock { $0.envelopes.count } }
    func fail(with failure: TransportFailure?) { state.withLock { $0.failure = failure } }
    func failPulls(with failure: TransportFailure?) { state.withLock { $0.pullFailure = failure } }
    func failPushes(with failure: TransportFailure?) { state.withLock { $0.pushFailure = failure } }
    /// The host goes back to an older copy of itself: only the first `count` envelopes stay.
    func restore(keepingFirst count: Int) {
        state.withLock { s in
            s.envelopes = Array(s.envelopes.prefix(count))
            s.events = Set(s.envelopes.map(\.header.event))
        }
    }
    /// Records the log holds a version of (their pseudonymous stream ids).
    var streams: Set<StreamID> { state.withLock { Set($0.envelopes.map(\.header.stream)) } }
}

/// A transport over a `MemoryLog`; its cursor is the index of the next envelope.
final class MemoryTransport: Transport {
    let name: String
    let log: MemoryLog

    init(name: String, log: MemoryLog) {
        self.name = name
        self.log = log
    }

    private func check() throws(TransportFailure) {
        if let failure = log.state.withLock({ $0.failure }) { throw failure }
    }

    var pushesInFlight: Int { log.state.withLock { $0.window } }
    var blobsCanVanish: Bool { log.state.withLock { $0.blobsCanVanish } }

    func push(_ batch: [Envelope]) async throws(TransportFailure) -> [PushOutcome] {
        try check()
        if let failure = log.state.withLock({ $0.pushFailure }) { throw failure }
        if let loss = log.state.withLock({ s -> String? in
            guard let loss = s.lossOnNextPush else { return nil }
            s.lossOnNextPush = nil
            s.lossMessage = loss
            s.epoch += 1
            return loss
        }) { throw .hostLostData(loss) }
        let bytes = batch.reduce(0) { $0 + $1.encoded.count }
        if let refusal = log.state.withLock({ s -> String? in
            guard let limit = s.maxPushBytes, bytes > limit else { return nil }
            s.tooLarge += 1
            return "the body is \(bytes) bytes; the limit is \(limit)"
        }) { throw .tooLarge(refusal) }
        let delay = log.state.withLock { s -> Duration in
            s.pushing += 1
            s.mostPushing = max(s.mostPushing, s.pushing)
            return s.pushDelay
        }
        if delay > .zero { try? await Task.sleep(for: delay) }
        return log.state.withLock { s in
            s.pushing -= 1
            s.pushes += 1
            return batch.map { e in
                guard s.events.insert(e.header.event).inserted else { return .duplicate }
                s.envelopes.append(e)
                return .accepted
            }
        }
    }

    func pull(after cursor: String?, limit: Int, wait: Duration) async throws(TransportFailure) -> PullPage {
        if log.state.withLock({ s -> Bool in if s.pullGate { s.pullsWaiting += 1 }; return s.pullGate }) {
            while log.state.withLock({ $0.pullGate }) { usleep(2000) }
            log.state.withLock { $0.pullsWaiting -= 1 }
        }
        try check()
        if let failure = log.state.withLock({ $0.pullFailure }) { throw failure }
        // The cursor is "INDEX" in epoch 0, then "EPOCH:INDEX".
        let parts = cursor.map { $0.split(separator: ":").compactMap { Int($0) } } ?? [0]
        let (cursorEpoch, start) = parts.count == 2 ? (parts[0], parts[1]) : (0, parts.first ?? 0)
        // As a relay restored from an older backup answers: a cursor past the log's end, and from
        // then on every cursor handed out before, is refused.
        let refusal = log.state.withLock { s -> String? in
            if cursor != nil && cursorEpoch < s.epoch { return s.lossMessage ?? "cursor \(cursor!) is from before the log lost envelopes" }
            if start > s.envelopes.count {
                s.epoch += 1
                return "cursor \(start) is past the end of the log (\(s.envelopes.count))"
            }
            return nil
        }
        if let refusal { throw .hostLostData(refusal) }
        func text(_ index: Int, _ epoch: Int) -> String { epoch == 0 ? String(index) : "\(epoch):\(index)" }
        var page = log.state.withLock { s -> PullPage in
            let slice = Array(s.envelopes.dropFirst(start).prefix(limit))
            return PullPage(envelopes: slice, cursor: text(start + slice.count, s.epoch), more: start + slice.count < s.envelopes.count)
        }
        let pullDelay = log.state.withLock { $0.pullDelay }
        if !page.envelopes.isEmpty, pullDelay > .zero { try? await Task.sleep(for: pullDelay) }
        if page.envelopes.isEmpty, wait > .zero {
            try? await Task.sleep(for: min(wait, .milliseconds(20)))
            page.cursor = text(start, log.state.withLock { $0.epoch })
        }
        return page
    }

    func putBlob(key: BlobKey, from path: String) async throws(TransportFailure) {
        try check()
        guard let bytes = FileManager.default.contents(atPath: path) else { throw .unavailable("cannot read \(path)") }
        if let limit = log.state.withLock({ $0.maxBlobBytes }), bytes.count > limit {
            throw .tooLarge("the blob is \(bytes.count) bytes; the limit is \(limit)")
        }
        log.state.withLock { $0.blobs[key] = Array(bytes) }
    }

    func hasBlob(key: BlobKey) async throws(TransportFailure) -> Bool {
        try check()
        return log.state.withLock { !$0.blobsHidden && $0.blobs[key] != nil }
    }

    func deleteBlob(key: BlobKey) async throws(TransportFailure) -> BlobDeletion {
        try check()
        return log.state.withLock { s in
            s.deleteAttempts += 1
            if s.blobsInUse.contains(key) { return .inUse(retryAfter: s.inUseRetryAfter) }
            s.blobs[key] = nil
            s.deletedBlobs.append(key)
            return .deleted
        }
    }

    func getBlob(key: BlobKey, to path: String, copy: Int) async throws(TransportFailure) -> Bool {
        try check()
        guard copy == 0 else { return false }
        guard let bytes = log.state.withLock({ s -> [UInt8]? in
            guard !s.blobsHidden, let bytes = s.blobs[key] else { return nil }
            s.blobReads += 1
            return bytes
        }) else { return false }
        return FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    func status() async -> TransportStatus { TransportStatus() }
    func close() async {}
}

import Foundation
