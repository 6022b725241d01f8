import FerryModel
import FerryStore

extension StoreBenchmark {
    /// N records through `Store.putMany`, `options.batch` per call; each batch then goes into the
    /// baseline with the stamps and sequence numbers the store gave it, in one transaction.
    func measurePutMany(_ store: Store, _ baseline: BaselineDatabase) throws -> Comparison {
        var result = Comparison(unit: "records", count: options.records, storeNanos: 0, baselineNanos: 0)
        var index = 0
        while index < options.records {
            let end = min(index + options.batch, options.records)
            let requests = (index..<end).map {
                PutRequest(entity: StoreBenchmark.entity, id: generator.id(.items, $0), payload: generator.payload(.items, $0))
            }
            let records = try Monotonic.time(into: &result.storeNanos) { try store.putMany(requests) }
            guard records.count == requests.count else {
                throw BenchError("put_many: putMany returned \(records.count) records for \(requests.count) requests")
            }
            let rows = records.map(BaselineDatabase.Row.init)
            try Monotonic.time(into: &result.baselineNanos) { try baseline.insert(rows) }
            index = end
        }
        return result
    }

    /// Single `Store.put` calls, one transaction (one commit) each, against single-row baseline
    /// transactions.
    func measurePutSingle(_ store: Store, _ baseline: BaselineDatabase) throws -> Comparison {
        let count = min(options.records, options.singleLimit)
        var result = Comparison(unit: "records", count: count, storeNanos: 0, baselineNanos: 0)
        for index in 0..<count {
            let id = generator.id(.singles, index)
            let payload = generator.payload(.singles, index)
            let record = try Monotonic.time(into: &result.storeNanos) {
                try store.put(entity: StoreBenchmark.singleEntity, id: id, payload: payload)
            }
            let rows = [BaselineDatabase.Row(record)]
            try Monotonic.time(into: &result.baselineNanos) { try baseline.insert(rows) }
        }
        return result
    }

    /// N new versions made by another device (its own node id and clock), applied with
    /// `Store.applyRemote` in batches of `options.applyBatch`, against baseline inserts of the
    /// same rows in batches of the same size.
    func measureApplyRemote(_ store: Store, _ baseline: BaselineDatabase) throws -> Comparison {
        var result = Comparison(unit: "records", count: options.records, storeNanos: 0, baselineNanos: 0)
        let remoteNode = NodeID(SplitMix64.mix(options.seed ^ 0x0DE7_1CE0))
        var clock = HybridClock(node: remoteNode, wallClock: store.configuration.wallClock)
        let origin = ChangeOrigin.remote(transport: "bench")
        var index = 0
        while index < options.records {
            let end = min(index + options.applyBatch, options.records)
            let versions = (index..<end).map {
                RecordVersion(entity: StoreBenchmark.entity, id: generator.id(.remote, $0), hlc: clock.now(),
                              deleted: false, payload: generator.payload(.remote, $0))
            }
            let outcomes = try Monotonic.time(into: &result.storeNanos) { try store.applyRemote(versions, origin: origin) }
            var rows: [BaselineDatabase.Row] = []
            rows.reserveCapacity(versions.count)
            for (version, outcome) in zip(versions, outcomes) {
                guard case .applied(let seq) = outcome else {
                    throw BenchError("apply_remote: \(version.entity)/\(version.id) was not applied: \(outcome)")
                }
                rows.append(BaselineDatabase.Row(entity: version.entity, id: version.id, hlc: version.hlc.text,
                                                 deleted: false, payload: version.payload, attachments: nil, seq: seq))
            }
            try Monotonic.time(into: &result.baselineNanos) { try baseline.insert(rows) }
            index = end
        }
        return result
    }
}
