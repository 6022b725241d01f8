import FerryJSON
import FerrySync

extension RelayService {
    /// `POST /v1/owners/{owner}/events`.
    func push(_ owner: OwnerID, body: RequestBody) throws(RelayError) -> HTTPResponse {
        let decoded = try PushRequest.parse(body.bytes, maxBytes: configuration.maxBodyBytes)
        typealias Result = (event: EventID?, status: PushResults.Status, reason: String?)
        var results = [Result](repeating: (nil, .rejected, nil), count: decoded.count)
        var incoming: [IncomingEvent] = []
        var incomingIndex: [Int] = []
        incoming.reserveCapacity(decoded.count)
        incomingIndex.reserveCapacity(decoded.count)
        for (i, bytes) in decoded.enumerated() {
            guard let bytes else {
                results[i] = (nil, .rejected, "not base64 (standard alphabet, padded)")
                continue
            }
            let envelope: Envelope
            do { envelope = try Envelope.decode(bytes) } catch {
                results[i] = (nil, .rejected, "not an envelope: \(error)")
                continue
            }
            guard envelope.header.owner == owner else {
                results[i] = (envelope.header.event, .rejected, "the envelope belongs to owner \(envelope.header.owner), not \(owner)")
                continue
            }
            results[i] = (envelope.header.event, .accepted, nil)
            incoming.append(IncomingEvent(header: envelope.header, bytes: bytes))
            incomingIndex.append(i)
        }
        if !incoming.isEmpty {
            let outcomes: [PushOutcome]
            do {
                outcomes = try storage.push(owner, events: incoming, quotaBytes: configuration.defaultQuotaBytes, now: now())
            } catch {
                throw storageFailure(error, owner: owner)
            }
            var stored = 0
            for (k, outcome) in outcomes.enumerated() {
                let i = incomingIndex[k]
                switch outcome {
                case .stored: stored += 1
                case .superseded: results[i].reason = "superseded by a newer version of its stream"
                case .duplicate: results[i].status = .duplicate
                }
            }
            if stored > 0 { hub.notify(owner) }
            logger.debug("push", ["owner": owner.description, "events": String(decoded.count), "stored": String(stored)])
        }
        var answer = PushResults(capacity: results.count)
        for r in results { answer.add(event: r.event, r.status, reason: r.reason) }
        return answer.response()
    }

    /// `GET /v1/owners/{owner}/events`.
    func pull(_ owner: OwnerID, query: [String: String], waiting: WaitAllowance) throws(RelayError) -> Outcome {
        var params = try PullParameters.parse(query, maxWait: configuration.maxWaitSeconds)
        // Nothing to send: wait for a push, up to the first deadline. A device woken by its own
        // push (left out below) waits on, instead of answering an empty page at each push, and
        // reads on from where its last read ended.
        let deadline: ContinuousClock.Instant
        switch waiting {
        case .asked: deadline = .now + .seconds(params.waitSeconds)
        case .until(let first, let after):
            deadline = first
            if after > params.after { params.after = after }
        case .answerNow: deadline = .now
        }
        let generation = hub.generation(owner)
        let page: EventPage
        do {
            page = try storage.pull(owner, after: params.after, limit: params.limit, maxBytes: RelayConfiguration.maxPageBytes)
        } catch {
            throw storageFailure(error, owner: owner)
        }
        // The device's own events are read (so the cursor moves past them) but not sent back.
        var events = page.events
        if let skip = params.skipDevice {
            events.removeAll { $0.count >= 26 && $0[18..<26].elementsEqual(skip) }
        }
        if events.isEmpty, !page.more, params.waitSeconds > 0, ContinuousClock.now < deadline {
            return .wait(owner: owner, generation: generation, deadline: deadline, after: page.cursor)
        }
        return .respond(EventPageResponse.response(events: events, cursor: page.cursor.description, more: page.more))
    }
}

extension RequestBody {
    /// The in-memory bytes (empty for other bodies).
    var bytes: [UInt8] {
        if case .bytes(let b) = self { return b }
        return []
    }
}
