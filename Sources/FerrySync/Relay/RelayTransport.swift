import FerryJSON
import FerryModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// The relay transport: `ferry-relay`'s HTTP API (docs/relay.openapi.yaml) for one owner.
/// Pushes batches of sealed envelopes, pulls pages after an opaque cursor with long-polling
/// (a push from another device answers a waiting pull at once), and moves sealed blobs.
/// Every interruption is retried by the engine from the stored cursor.
public final class RelayTransport: Transport {
    public let name: String
    public let base: URL
    public let owner: OwnerID
    /// This device: once the first catch-up after start has read them (a store restored from
    /// an older backup gets back what a copy of this device pushed since), its own events are
    /// left out of pulls (`OwnEventReading`). Nil: every event is pulled.
    public let device: NodeID?
    private let ownEvents = Mutex(OwnEventReading())
    private let http: RelayHTTP
    private let session: RelaySession
    /// Blob transfers: a large blob's last bytes can sit in the kernel's send buffer for
    /// minutes on a slow link, with no progress to see, so they get a longer timeout.
    private let blobSession: RelaySession
    /// The same, with the blob timeout. An `http://` relay's blobs go through its own HTTP/1.1
    /// client (`blobHTTP.client`), streamed from and to files: FoundationNetworking's file
    /// transfers trap (and end ferryd) when a connection breaks at the wrong moment, an upload
    /// mid-body ("'try!' ... libcurl.Easy Code=43") or a download inside the response head
    /// ("Transfer completed, but there's no response"). `https://` stays on URLSession, which has
    /// the TLS, run in ferryd's https helper process so that such a trap ends the helper only
    /// (`RelaySession`, `SessionHelper`).
    private let blobHTTP: RelayHTTP
    /// The longest long-poll asked for (the relay caps it to its own maximum), below the
    /// request timeout.
    public let maxWait: Duration
    /// How long a request may go without progress before it is given up.
    public let requestTimeout: Duration
    /// The most envelopes sent in one request: the batch limit, halved after a push timed out
    /// (on a slow link the body sits in the send buffer and no progress shows until the relay
    /// answers), doubled again after a push that answered quickly.
    private let pushChunk = Mutex(RelayTransport.maxEventsPerPush)
    private let lastProblem = Mutex<String?>(nil)

    /// The most events ferry-relay takes in one push.
    static let maxEventsPerPush = 2000
    /// How long a request may go without progress before it is given up, by default
    /// (`RelayTimeoutSeconds` in ferryd.conf).
    public static let defaultTimeout: Duration = .seconds(60)

    public init(name: String, url: URL, owner: OwnerID, token: String, device: NodeID? = nil, maxWait: Duration = .seconds(25),
                requestTimeout: Duration = RelayTransport.defaultTimeout) {
        self.name = name
        self.device = device
        self.base = url
        self.owner = owner
        self.requestTimeout = max(requestTimeout, .seconds(2))
        self.maxWait = min(maxWait, self.requestTimeout / 2)
        session = RelayHTTP.makeSession(timeout: self.requestTimeout)
        blobSession = RelayHTTP.makeSession(timeout: max(self.requestTimeout, .seconds(600)))
        http = RelayHTTP(base: url, token: token, session: session)
        blobHTTP = RelayHTTP(base: url, token: token, session: blobSession)
    }

    /// The largest blob downloaded (its file's size, not memory): far above any relay's limit.
    static let maxBlobBytes = 1 << 40

    private var ownerPath: String { "v1/owners/\(owner)" }

    /// Two pushes at once: one is stored while the next is on its way (a relay stores pushes
    /// that arrive together in one transaction). Its sessions allow 4 connections, so a
    /// waiting pull and blob transfers still have room (the HTTP/1.1 client of an `http://`
    /// relay opens a connection per request in flight and keeps up to 4 idle).
    public var pushesInFlight: Int { 2 }

    /// Another device removes a blob nothing references from its view (`deleteBlob`), and a
    /// device may pass a record on to the relay before it has the attachment's bytes: the
    /// engine's check puts back the blobs of what it sent whose bytes are here. Each check's
    /// HEAD also counts as a use on the relay, which keeps a blob some device references from
    /// being removed (`BlobDeleteGraceSeconds`).
    public var blobsCanVanish: Bool { true }

    /// A check asks the relay about every blob the device references (a HEAD each), so it runs
    /// every sixth blob-check interval (hourly by default), besides at SyncNow and when
    /// attachments arrive through another transport.
    public var blobCheckFactor: Int { 6 }

    /// The relay takes 2,000 events per push in a body of at most its MaxBodyBytes (8 MiB by
    /// default); 4 MiB of envelopes are about 5.4 MiB in base64. Per push a relay commits (and
    /// syncs) once, so larger pushes move records faster. An older relay that takes fewer
    /// answers 413, and the engine pushes such a batch again in halves.
    public var batchLimit: SyncLimits.Batch { SyncLimits.Batch(envelopes: Self.maxEventsPerPush, bytes: 4 << 20) }

    /// Pushes `batch`: in one request, or in several when pushes timed out before (see
    /// `pushChunk`). A push that times out is sent again in halves, down to one envelope, which
    /// then fails as `.unavailable`. A body over the relay's `MaxBodyBytes` throws `.tooLarge`
    /// (nothing of it is stored), with the advice for a single envelope that does not fit.
    public func push(_ batch: [Envelope]) async throws(TransportFailure) -> [PushOutcome] {
        var outcomes: [PushOutcome] = []
        outcomes.reserveCapacity(batch.count)
        var start = 0
        while start < batch.count {
            let chunk = pushChunk.withLock { $0 }
            let part = Array(batch[start..<min(start + chunk, batch.count)])
            let began = ContinuousClock.now
            if let done = try await pushOnce(part) {
                outcomes += done
                start += part.count
                // Quick enough to try twice as many next time.
                if ContinuousClock.now - began < requestTimeout / 4 {
                    pushChunk.withLock { $0 = min($0 * 2, Self.maxEventsPerPush) }
                }
                continue
            }
            guard part.count > 1 else { throw noteProblem(.unavailable(http.timedOut("pushing 1 envelope"))) }
            let smaller = max(1, part.count / 2)
            pushChunk.withLock { $0 = smaller }
            _ = noteProblem(.unavailable(http.timedOut("pushing \(part.count) envelopes") + "; sending \(smaller) per push now"))
        }
        return outcomes
    }

    /// Pushes `batch` in one request; nil when it timed out.
    private func pushOnce(_ batch: [Envelope]) async throws(TransportFailure) -> [PushOutcome]? {
        var body = Array(#"{"events":["#.utf8)
        for (i, envelope) in batch.enumerated() {
            if i > 0 { body.append(UInt8(ascii: ",")) }
            body.append(UInt8(ascii: "\""))
            Base64.appendEncoded(envelope.encoded, to: &body)
            body.append(UInt8(ascii: "\""))
        }
        body.append(contentsOf: "]}".utf8)
        var request = http.request("POST", ownerPath + "/events")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body)
        let answer: RelayHTTP.Reply?
        do {
            answer = try await note { () async throws(TransportFailure) in
                try await http.sendUnlessTimedOut(request, what: "pushing \(batch.count) envelope(s)")
            }
        } catch {
            guard case .tooLarge(let why) = error else { throw error }
            throw .tooLarge(why + "; ask the relay's operator to raise MaxBodyBytes in ferry-relay.conf, or make the record smaller")
        }
        guard let reply = answer else { return nil }
        guard reply.status == 200, let parsed = try? JSONParser.parse([UInt8](reply.body)),
              case .array(let results)? = parsed["results"], results.count == batch.count else {
            throw .unavailable("pushing: the relay's answer is not a result per envelope (HTTP \(reply.status))")
        }
        return results.map { r in
            switch r["status"]?.stringValue {
            case "accepted": .accepted
            case "duplicate": .duplicate
            default: .rejected(r["reason"]?.stringValue ?? "refused by the relay")
            }
        }
    }

    public func pull(after cursor: String?, limit: Int, wait: Duration) async throws(TransportFailure) -> PullPage {
        let seconds = Int(min(wait, maxWait).components.seconds)
        var query: [(String, String)] = [("limit", String(min(max(limit, 1), 1000))), ("wait", String(max(seconds, 0)))]
        if let cursor, !cursor.isEmpty { query.append(("after", cursor)) }
        let leavesOutOwn = device != nil && ownEvents.withLock { $0.mayLeaveOut(after: cursor) }
        if leavesOutOwn, let device { query.append(("skipDevice", device.description)) }
        let request = http.request("GET", ownerPath + "/events", query: query)
        let reply: RelayHTTP.Reply
        do {
            reply = try await note { () async throws(TransportFailure) in try await http.send(request, what: "pulling") }
        } catch {
            // Cancelled (SyncNow, or the engine stopping): an empty page where we were.
            if Task.isCancelled { return PullPage(envelopes: [], cursor: cursor ?? "", more: false) }
            throw error
        }
        if reply.status == 404 { throw .rejected("pulling: the relay does not know owner \(owner); ask its operator to create it") }
        guard let parsed = try? JSONParser.parse([UInt8](reply.body)), case .array(let items)? = parsed["events"],
              let next = parsed["cursor"]?.stringValue else {
            throw .unavailable("pulling: the relay's answer is not a page of events")
        }
        var envelopes: [Envelope] = []
        var unreadable: [String] = []
        for item in items {
            guard let text = item.stringValue, let bytes = Base64.decode(text.utf8) else {
                unreadable.append("an event that is not base64")
                continue
            }
            do { envelopes.append(try Envelope.decode(bytes)) } catch { unreadable.append("an event: \(error)") }
        }
        let more = parsed["more"]?.boolValue ?? false
        if !leavesOutOwn { ownEvents.withLock { $0.answered(cursor: next, more: more) } }
        return PullPage(envelopes: envelopes, unreadable: unreadable, cursor: next, more: more)
    }

    public func putBlob(key: BlobKey, from path: String) async throws(TransportFailure) {
        try Self.check(key)
        var request = http.request("PUT", ownerPath + "/blobs/" + key)
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let status: Int, body: Data
        if let client = blobHTTP.client {
            let response: HTTP1Response
            do {
                response = try await client.transfer(RelayHTTP.http1(request), bodyFrom: path, maxBodyBytes: RelayHTTP.maxReplyBytes)
            } catch {
                throw .unavailable(http.unreachable("uploading blob \(key.prefix(12))…", error))
            }
            (status, body) = (response.status, Data(response.body))
        } else {
            let reply: (Data, URLResponse)
            do {
                reply = try await blobSession.upload(request, fromFile: URL(fileURLWithPath: path))
            } catch {
                throw .unavailable(http.unreachable("uploading blob \(key.prefix(12))…", error))
            }
            guard let response = reply.1 as? HTTPURLResponse else { throw .unavailable("uploading a blob: not an HTTP reply") }
            (status, body) = (response.statusCode, reply.0)
        }
        if !(200..<300).contains(status) {
            let failure = RelayHTTP.failure(.init(status: status, body: body, headers: [:]), what: "uploading a blob", base: base)
            if case .tooLarge(let why) = failure {
                throw .tooLarge(why + "; ask the relay's operator to raise MaxBlobBytes in ferry-relay.conf, or attach a smaller file")
            }
            throw failure
        }
    }

    public func hasBlob(key: BlobKey) async throws(TransportFailure) -> Bool {
        try Self.check(key)
        let reply = try await note { () async throws(TransportFailure) in
            try await http.send(http.request("HEAD", ownerPath + "/blobs/" + key), what: "looking for a blob")
        }
        return reply.status == 200
    }

    /// `DELETE /v1/owners/{owner}/blobs/{key}`: 204 removed (404: not there) is `.deleted`; 409
    /// `blob_in_use` (a device stored it or looked for it within the relay's
    /// `BlobDeleteGraceSeconds`) is `.inUse`.
    public func deleteBlob(key: BlobKey) async throws(TransportFailure) -> BlobDeletion {
        try Self.check(key)
        let reply = try await note { () async throws(TransportFailure) in
            try await http.send(http.request("DELETE", ownerPath + "/blobs/" + key), what: "removing a blob", passing: [409])
        }
        guard reply.status == 409 else { return .deleted }
        if reply.errorBody?["error"]?.stringValue == "blob_in_use" { return .inUse(retryAfter: reply.retryAfter) }
        throw RelayHTTP.failure(reply, what: "removing a blob", base: base)
    }

    /// The relay holds one copy of a blob.
    public func getBlob(key: BlobKey, to path: String, copy: Int) async throws(TransportFailure) -> Bool {
        try Self.check(key)
        guard copy == 0 else { return false }
        let request = http.request("GET", ownerPath + "/blobs/" + key)
        let downloaded = URL(fileURLWithPath: path + ".download")
        defer { try? FileManager.default.removeItem(at: downloaded) }
        let status: Int, body: Data
        if let client = blobHTTP.client {
            let response: HTTP1Response
            do {
                response = try await client.transfer(RelayHTTP.http1(request), bodyTo: downloaded.path, maxBodyBytes: Self.maxBlobBytes)
            } catch {
                throw .unavailable(http.unreachable("downloading blob \(key.prefix(12))…", error))
            }
            (status, body) = (response.status, Data(response.body))
        } else {
            let result: URLResponse
            do { result = try await blobSession.download(request, to: downloaded) } catch {
                throw .unavailable(http.unreachable("downloading blob \(key.prefix(12))…", error))
            }
            guard let response = result as? HTTPURLResponse else { throw .unavailable("downloading a blob: not an HTTP reply") }
            (status, body) = (response.statusCode, Data())
        }
        if status == 404 { return false }
        guard status == 200 else {
            throw RelayHTTP.failure(.init(status: status, body: body, headers: [:]), what: "downloading a blob", base: base)
        }
        unlink(path)
        do { try FileManager.default.moveItem(at: downloaded, to: URL(fileURLWithPath: path)) } catch {
            throw .unavailable("storing a downloaded blob at \(path): \(error.localizedDescription)")
        }
        return true
    }

    public func status() async -> TransportStatus {
        if let problem = lastProblem.withLock({ $0 }) {
            return TransportStatus(state: "unavailable", message: problem, details: ["url": base.absoluteString])
        }
        return TransportStatus(details: ["url": base.absoluteString])
    }

    public func close() async {
        http.close()
        blobHTTP.close()
        session.invalidate()
        blobSession.invalidate()
    }

    /// Keeps the last failure for `status()`, cleared by the next success. A request refused
    /// as too large clears it too: the relay answered, and the engine deals with the request.
    private func note<T: Sendable>(_ body: () async throws(TransportFailure) -> T) async throws(TransportFailure) -> T {
        do {
            let value = try await body()
            lastProblem.withLock { $0 = nil }
            return value
        } catch {
            if case .tooLarge = error {
                lastProblem.withLock { $0 = nil }
            } else if !Task.isCancelled {
                lastProblem.withLock { $0 = error.description }
            }
            throw error
        }
    }

    /// Keeps `failure` as the last problem for `status()`, and returns it.
    private func noteProblem(_ failure: TransportFailure) -> TransportFailure {
        lastProblem.withLock { $0 = failure.description }
        return failure
    }

    private static func check(_ key: BlobKey) throws(TransportFailure) {
        guard Names.isLowercaseHex(key, count: 64) else {
            throw .rejected("a blob key is 64 lowercase hex digits")
        }
    }
}
