import FerryCrypto
import FerryJSON
import FerrySync
import Foundation
import Synchronization

/// The relay's request handling without sockets: resolves a request head to an endpoint,
/// authenticates it, says how to collect its body, and answers it. `MicroHTTPDServer` drives it;
/// tests call it directly.
///
/// Its seams come in at init: storage, clock (milliseconds), randomness.
public final class RelayService: Sendable {
    public let configuration: RelayConfiguration
    public let storage: any RelayStorage
    public let hub: LongPollHub
    public let metrics: RelayMetrics
    public let blobs: any BlobStore
    public let logger: RelayLogger
    let now: @Sendable () -> Int64
    let random: @Sendable (Int) -> [UInt8]
    let pairingFailures: FailureRateLimiter
    /// The storage's event count with a deadline, for `/readyz` and `/metrics`.
    let probe: StorageProbe
    /// Keeps a blob's upload and removal in this process from interleaving.
    let blobLocks = BlobLocks()
    /// When the storage was last logged as unreachable: while it is down every request fails
    /// alike, so it is said once a minute, not once per request.
    let unreachableLoggedAt = Mutex<ContinuousClock.Instant?>(nil)
    /// Refused tokens (per address and status) and refused pushes over a quota (per owner) are
    /// logged once a minute each, with a count of the repeats in between.
    let refusalLog: LogThrottle

    public init(configuration: RelayConfiguration, storage: any RelayStorage, blobs: any BlobStore, logger: RelayLogger,
                hub: LongPollHub = LongPollHub(), metrics: RelayMetrics = RelayMetrics(),
                now: @escaping @Sendable () -> Int64 = RelayService.systemMillis,
                random: @escaping @Sendable (Int) -> [UInt8] = { SecureRandom.bytes($0) }) {
        self.configuration = configuration
        self.storage = storage
        self.blobs = blobs
        self.logger = logger
        self.hub = hub
        self.metrics = metrics
        self.now = now
        self.random = random
        pairingFailures = FailureRateLimiter(now: now)
        refusalLog = LogThrottle(now: now)
        probe = StorageProbe(storage: storage)
    }

    /// Wall-clock milliseconds since the epoch.
    public static let systemMillis: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// How the glue collects a body.
    public enum BodyPlan: Sendable, Equatable {
        /// Read and drop whatever comes.
        case discard
        /// Keep up to `limit` bytes in memory; more is a 413.
        case buffer(limit: Int)
        /// Write up to `limit` bytes to a temporary blob file; more is a 413.
        case spool(limit: Int64)
    }

    /// A request that passed routing and authentication.
    public struct Prepared: Sendable {
        public var endpoint: Endpoint
        public var query: [String: String]
        public var head: HTTPRequestHead
        public var tokenID: String?
        public var bodyPlan: BodyPlan
    }

    /// The answer to a request: a response, or a wait for a push (long-poll).
    public enum Outcome: Sendable {
        case respond(HTTPResponse)
        /// Park until a push to `owner` moves it past `generation`, or until `deadline`; then
        /// call `handle` again with `waiting: .until(deadline, after: after)` (or `.answerNow`
        /// when the relay is stopping).
        case wait(owner: OwnerID, generation: UInt64, deadline: ContinuousClock.Instant, after: Cursor)
    }

    /// How long a long-poll may still wait.
    public enum WaitAllowance: Sendable {
        /// A new request: as long as its `wait=` asks.
        case asked
        /// A request woken from its wait: on until the deadline it first had (a push that gave
        /// it nothing to send, such as its own device's, does not end the wait), then it is
        /// answered with what is there. `after` is where its last read ended (past events it
        /// leaves out), so that waking again reads only what came since.
        case until(ContinuousClock.Instant, after: Cursor)
        /// Answer with what is there now (the relay is stopping).
        case answerNow
    }

    /// Routes and authenticates `head`.
    /// - Returns: the prepared request, or the error that answers it (404, 405, 401, 403, 413...).
    public func prepare(_ head: HTTPRequestHead) -> Result<Prepared, RelayError> {
        do throws(RelayError) {
            let target: RequestTarget
            do { target = try RequestTarget.parse(head.target) } catch {
                switch error {
                case .tooLong(let n): throw .uriTooLong(n)
                case .notAbsolutePath: throw .badRequest(code: "bad_request", message: "the request target must be an absolute path")
                case .malformedQuery(let why): throw .badRequest(code: "bad_query", message: "malformed query: \(why)")
                }
            }
            let endpoint = try Router.resolve(method: head.method, path: target.path)
            var tokenID: String?
            if let right = endpoint.right, let owner = endpoint.owner {
                tokenID = try authorize(head, owner: owner, right: right)
            }
            let plan: BodyPlan
            switch endpoint {
            case .pushEvents, .pair:
                plan = .buffer(limit: endpoint == .pair ? 4096 : configuration.maxBodyBytes)
            case .putBlob:
                plan = .spool(limit: configuration.maxBlobBytes)
            default:
                plan = .discard
            }
            if case .buffer = plan, !head.bodyMayBeJSON {
                throw .unsupportedMediaType("the body must be JSON (Content-Type: application/json), not \(head.contentType!.prefix(80))")
            }
            switch plan {
            case .buffer(let limit) where (head.contentLength ?? 0) > limit:
                throw .tooLarge("the body is \(head.contentLength!) bytes; the limit is \(limit)")
            case .spool(let limit) where Int64(head.contentLength ?? 0) > limit:
                throw .tooLarge("the blob is \(head.contentLength!) bytes; the limit is \(limit)")
            default: break
            }
            return .success(Prepared(endpoint: endpoint, query: target.query, head: head, tokenID: tokenID, bodyPlan: plan))
        } catch {
            return .failure(error)
        }
    }

    /// The metrics label of the endpoint `head` addresses, or "unrouted".
    public func routeName(_ head: HTTPRequestHead) -> String {
        guard let target = try? RequestTarget.parse(head.target),
              let endpoint = try? Router.resolve(method: head.method, path: target.path) else { return "unrouted" }
        return endpoint.name
    }

    /// Checks the bearer token's right on `owner`: the one place rights are enforced. A refusal
    /// is logged (`logRefusal`).
    /// - Returns: the token's id.
    func authorize(_ head: HTTPRequestHead, owner: OwnerID, right: Right) throws(RelayError) -> String {
        func refuse(_ error: RelayError, _ why: String, tokenID: String? = nil) -> RelayError {
            logRefusal(error, why: why, head: head, owner: owner, tokenID: tokenID)
            return error
        }
        let header = head.authorization
        guard header != nil else {
            throw refuse(.unauthorized("send Authorization: Bearer <token> (ferry-relay admin create-owner prints one; pairing gives more)"), "no token was sent")
        }
        guard let token = AccessToken(authorization: header) else {
            throw refuse(.unauthorized("the token is malformed or not sent as Authorization: Bearer TOKEN (a relay's tokens are fr1_ and 43 more characters): copy it again from what 'ferry-relay admin create-owner' printed, or pair with a code from 'ferryctl relay pair'"),
                         "the token is malformed")
        }
        let grant: Authenticated?
        do { grant = try storage.authenticate(tokenHash: token.hash, now: now()) } catch {
            throw storageFailure(error)
        }
        guard let grant else { throw refuse(.unauthorized("the token is unknown or revoked"), "the token is unknown or revoked") }
        guard let role = grant.grants[owner] else {
            throw refuse(.forbidden("this token belongs to another owner"), "the token belongs to another owner", tokenID: grant.tokenID)
        }
        guard role.allows(right) else {
            throw refuse(.forbidden("this token's role (\(role.rawValue)) lacks the \(right.rawValue) right"),
                         "the token's role (\(role.rawValue)) lacks the \(right.rawValue) right", tokenID: grant.tokenID)
        }
        return grant.tokenID
    }

    /// Logs a request refused for its token (401, 403): the first from an address with a
    /// status, then once a minute with the count of those in between, so an operator sees a
    /// revoked device that keeps trying (or someone guessing) without a line per request.
    /// Names the address, the owner and the token's id when known, never the token.
    private func logRefusal(_ error: RelayError, why: String, head: HTTPRequestHead, owner: OwnerID, tokenID: String?) {
        let status = error.response.status
        let remote = head.clientAddress(trusting: configuration.trustedProxies)
        guard let unlogged = refusalLog.admit("\(status) \(remote)") else { return }
        var fields = ["remote": remote, "owner": owner.description, "status": String(status)]
        if let tokenID { fields["token_id"] = tokenID }
        let repeats = unlogged > 0 ? " (and \(unlogged) more from this address since the last such line)" : ""
        logger.notice("refused a request for owner \(owner) from \(remote) with \(status): \(why)\(repeats)", fields)
    }

    /// Answers a prepared request with its collected body.
    /// - Parameter waiting: `.until` the first deadline for a long-poll that waited.
    public func handle(_ request: Prepared, body: RequestBody, waiting: WaitAllowance = .asked) -> Outcome {
        do throws(RelayError) {
            switch request.endpoint {
            case .health: return .respond(.text(200, "ok\n"))
            case .ready:
                // Liveness is /healthz; ready means the storage answers a query now (in time).
                switch probe.totalEvents() {
                case .success:
                    return .respond(.text(200, "ready\n"))
                case .failure(let why):
                    logger.warning("not ready: the storage does not answer: \(why)")
                    return .respond(RelayError.storageUnreachable.response)
                }
            case .metrics:
                // Without the stored-events gauge when the storage does not answer in time.
                let events = try? probe.totalEvents().get()
                return .respond(.text(200, metrics.render(eventsStored: events, longPollers: hub.waitingCount),
                                      contentType: "text/plain; version=0.0.4; charset=utf-8"))
            case .pair: return .respond(try pair(body: body, remote: request.head.clientAddress(trusting: configuration.trustedProxies)))
            case .ownerInfo(let owner): return .respond(try ownerInfo(owner))
            case .deleteOwner(let owner): return .respond(try deleteOwner(owner))
            case .pushEvents(let owner): return .respond(try push(owner, body: body))
            case .pullEvents(let owner):
                // A pull woken after a wait asks again whether its token still may read: one
                // revoked while it waited gets 401, not the events that woke it.
                if case .until = waiting, let right = request.endpoint.right {
                    _ = try authorize(request.head, owner: owner, right: right)
                }
                return try pull(owner, query: request.query, waiting: waiting)
            case .putBlob(let owner, let key): return .respond(try putBlob(owner, key: key, body: body))
            case .getBlob(let owner, let key): return .respond(try getBlob(owner, key: key))
            case .headBlob(let owner, let key): return .respond(try getBlob(owner, key: key, touching: true))
            case .deleteBlob(let owner, let key): return .respond(try deleteBlob(owner, key: key))
            case .createPairingCode(let owner): return .respond(try createPairingCode(owner))
            case .listTokens(let owner): return .respond(try listTokens(owner, caller: request.tokenID))
            case .revokeToken(let owner, let id): return .respond(try revokeToken(owner, id: id))
            }
        } catch {
            if case .file(let path, _) = body { unlink(path) }
            return .respond(error.response)
        }
    }

    /// Maps a storage failure to the wire, logging what the wire does not show.
    /// - Parameter owner: whose request failed, named in the log line of a quota reached.
    func storageFailure(_ error: RelayStorageError, owner: OwnerID? = nil) -> RelayError {
        switch error {
        case .unknownOwner: return .missing(what: "the owner")
        case .quotaExceeded(let q, let u, let n):
            // An owner at its quota is refused on every push until it frees room or the
            // operator raises it: said once a minute per owner.
            let who = owner.map { "owner \($0)" } ?? "an owner"
            if let unlogged = refusalLog.admit("quota \(who)") {
                let repeats = unlogged > 0 ? " (and \(unlogged) more since the last such line)" : ""
                logger.notice("refused a push or upload of \(who) with 413: its quota of \(q) bytes would be exceeded (\(u) used, \(n) more needed); raise it with 'ferry-relay admin set-quota \(owner.map(\.description) ?? "OWNER") BYTES'\(repeats)",
                              owner.map { ["owner": $0.description] } ?? [:])
            }
            return .quotaExceeded(quotaBytes: q, usedBytes: u, neededBytes: n)
        case .cursorLost(let owner, let cursor, let why):
            if case .ahead = why {
                logger.warning("a device of owner \(owner) pulled after cursor \(cursor), which \(why): this relay holds less than the device read (restored from an older backup?); every cursor of the owner handed out so far is refused from now on, so each of its devices starts over",
                               ["owner": owner.description, "cursor": cursor.description])
                // Waiting pulls hold cursors refused now: they are answered so.
                hub.notify(owner)
            } else {
                logger.info("a device of owner \(owner) pulled after cursor \(cursor), which \(why); it is told to start over",
                            ["owner": owner.description, "cursor": cursor.description])
            }
            return .lostData(cursor: cursor, why: why)
        case .cursorNeverIssued(let owner, let cursor, let newest):
            logger.info("a client of owner \(owner) pulled after cursor \(cursor), which this relay never handed out (the newest is \(newest)); refused",
                        ["owner": owner.description, "cursor": cursor.description])
            return .badRequest(code: "bad_cursor", message: "after=\(cursor) was never handed out by this relay for this owner "
                + "(the newest cursor is \(newest)): pull after a cursor a previous pull returned, or from the start (no after=)")
        case .database(let context, let message):
            logger.error("storage failed while \(context): \(message)")
            return .storage("\(context): \(message)")
        case .unreachable(let context, let message):
            // Every request fails alike while the database is down: said once a minute, not each time.
            let due = unreachableLoggedAt.withLock { last -> Bool in
                let now = ContinuousClock.now
                if let last, now - last < .seconds(60) { return false }
                last = now
                return true
            }
            if due { logger.error("storage cannot be reached (while \(context)): \(message); requests are answered 503 until it answers") }
            return .storageUnreachable
        }
    }

    /// Drops tombstones older than the retention; returns how many.
    @discardableResult
    public func sweepTombstones() -> Int {
        let cutoff = now() - Int64(configuration.tombstoneRetentionDays * 86_400_000)
        do {
            let n = try storage.dropTombstones(storedBefore: cutoff)
            if n > 0 { logger.info("dropped \(n) tombstone(s) past the retention", ["tombstones": String(n)]) }
            return n
        } catch {
            logger.error("dropping tombstones failed: \(error)")
            return 0
        }
    }
}
