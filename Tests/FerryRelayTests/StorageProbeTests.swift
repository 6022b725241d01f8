import FerrySync
import FerryTestSupport
import Foundation
import Testing
@testable import FerryRelay

/// `/readyz` and `/metrics` ask the storage with a deadline (`StorageProbe`): a database that
/// stalls (a stopped PostgreSQL) gets them a prompt "no answer", not a request that hangs for as
/// long as it lasts; one question at a time waits for it.
@Suite struct StorageProbeTests {
    /// A storage whose event count waits until `release`, the rest as a real SQLite one.
    final class StallingStorage: RelayStorage {
        let inner: SQLiteRelayStorage
        let gate = DispatchSemaphore(value: 0)
        init(_ dir: TempDir) throws { inner = try SQLiteRelayStorage(path: dir.path + "/relay.db", synchronous: "NORMAL") }
        func release() { gate.signal() }

        func totalEvents() throws(RelayStorageError) -> Int64 {
            gate.wait()
            gate.signal()   // stays open once released
            return try inner.totalEvents()
        }
        func createOwner(_ owner: OwnerID, quotaBytes: Int64?, now: Int64) throws(RelayStorageError) { try inner.createOwner(owner, quotaBytes: quotaBytes, now: now) }
        func setQuota(_ owner: OwnerID, quotaBytes: Int64?) throws(RelayStorageError) { try inner.setQuota(owner, quotaBytes: quotaBytes) }
        func usage(_ owner: OwnerID) throws(RelayStorageError) -> OwnerUsage? { try inner.usage(owner) }
        func deleteOwnerData(_ owner: OwnerID) throws(RelayStorageError) -> [String] { try inner.deleteOwnerData(owner) }
        func addToken(_ token: NewToken, now: Int64) throws(RelayStorageError) { try inner.addToken(token, now: now) }
        func authenticate(tokenHash: [UInt8], now: Int64) throws(RelayStorageError) -> Authenticated? { try inner.authenticate(tokenHash: tokenHash, now: now) }
        func tokens(of owner: OwnerID) throws(RelayStorageError) -> [TokenInfo] { try inner.tokens(of: owner) }
        func revokeToken(_ id: String, owner: OwnerID, now: Int64) throws(RelayStorageError) -> Bool { try inner.revokeToken(id, owner: owner, now: now) }
        func addPairingCode(hash: [UInt8], owner: OwnerID, expiresAt: Int64, now: Int64) throws(RelayStorageError) {
            try inner.addPairingCode(hash: hash, owner: owner, expiresAt: expiresAt, now: now)
        }
        func redeemPairingCode(hash: [UInt8], token: NewToken, now: Int64) throws(RelayStorageError) -> OwnerID? {
            try inner.redeemPairingCode(hash: hash, token: token, now: now)
        }
        func push(_ owner: OwnerID, events: [IncomingEvent], quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> [FerryRelay.PushOutcome] {
            try inner.push(owner, events: events, quotaBytes: defaultQuota, now: now)
        }
        func pull(_ owner: OwnerID, after cursor: Cursor, limit: Int, maxBytes: Int) throws(RelayStorageError) -> EventPage {
            try inner.pull(owner, after: cursor, limit: limit, maxBytes: maxBytes)
        }
        func dropTombstones(storedBefore: Int64) throws(RelayStorageError) -> Int { try inner.dropTombstones(storedBefore: storedBefore) }
        func blobSize(_ owner: OwnerID, key: String, touching now: Int64?) throws(RelayStorageError) -> Int64? {
            try inner.blobSize(owner, key: key, touching: now)
        }
        func deleteBlob(_ owner: OwnerID, key: String, usedSince: Int64) throws(RelayStorageError) -> RelayBlobDeletion {
            try inner.deleteBlob(owner, key: key, usedSince: usedSince)
        }
        func addBlob(_ owner: OwnerID, key: String, size: Int64, quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> Bool {
            try inner.addBlob(owner, key: key, size: size, quotaBytes: defaultQuota, now: now)
        }
    }

    @Test func aStallingStorageGetsAPromptNoAnswerAndOneQuestionAtATime() async throws {
        let storage = try StallingStorage(TempDir("probe"))
        let probe = StorageProbe(storage: storage, timeout: .milliseconds(300))
        var t0 = ContinuousClock.now
        guard case .failure(.noAnswer) = probe.totalEvents() else { Issue.record("the stalled storage answered"); return }
        #expect(ContinuousClock.now - t0 < .seconds(2))
        // The question before still waits: the next fails at once, without a thread of its own.
        t0 = ContinuousClock.now
        guard case .failure(.noAnswer) = probe.totalEvents() else { Issue.record("a second question was asked"); return }
        #expect(ContinuousClock.now - t0 < .milliseconds(100))
        storage.release()
        #expect(try await eventually(.seconds(10)) { (try? probe.totalEvents().get()) == 0 })
    }
}
