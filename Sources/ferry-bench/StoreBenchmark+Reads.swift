import FerryModel
import FerryStore

extension StoreBenchmark {
    /// Random point lookups of existing "item" ids (a seeded order), `Store.get` against the
    /// baseline's prepared SELECT of the same columns. Ids are made in chunks outside the timing.
    func measureGet(_ store: Store, _ baseline: BaselineDatabase) throws -> Comparison {
        let count = min(options.records, options.getLimit)
        var result = Comparison(unit: "lookups", count: count, storeNanos: 0, baselineNanos: 0)
        var random = SplitMix64(seed: SplitMix64.mix(options.seed ^ 0x6E7))
        let chunk = 5000
        var done = 0
        while done < count {
            let n = min(chunk, count - done)
            let ids = (0..<n).map { _ in generator.id(.items, Int(random.next() % UInt64(options.records))) }
            var found = 0
            var bytes = 0
            try Monotonic.time(into: &result.storeNanos) {
                for id in ids {
                    if let record = try store.get(entity: StoreBenchmark.entity, id: id) {
                        found += 1
                        bytes += record.payload?.utf8.count ?? 0
                    }
                }
            }
            var baselineFound = 0
            var baselineBytes = 0
            try Monotonic.time(into: &result.baselineNanos) {
                for id in ids {
                    if let row = try baseline.get(entity: StoreBenchmark.entity, id: id) {
                        baselineFound += 1
                        baselineBytes += row.payload?.utf8.count ?? 0
                    }
                }
            }
            guard found == n, baselineFound == n, bytes == baselineBytes else {
                throw BenchError("get: found \(found) (store) and \(baselineFound) (baseline) of \(n) ids, payload bytes \(bytes) vs \(baselineBytes)")
            }
            done += n
        }
        return result
    }

    /// Every "item" record by pages of `options.listPage`, `Store.list` following `next`, against
    /// keyset pages on the baseline (`id > ? ORDER BY id LIMIT ?`).
    func measureList(_ store: Store, _ baseline: BaselineDatabase) throws -> Comparison {
        var result = Comparison(unit: "records", count: options.records, storeNanos: 0, baselineNanos: 0)
        let limit = options.listPage
        var listed = 0
        try Monotonic.time(into: &result.storeNanos) {
            var after: String?
            repeat {
                let page = try store.list(entity: StoreBenchmark.entity, after: after, limit: limit)
                listed += page.records.count
                after = page.next
            } while after != nil
        }
        var baselineListed = 0
        try Monotonic.time(into: &result.baselineNanos) {
            var after = ""
            while true {
                let rows = try baseline.page(entity: StoreBenchmark.entity, after: after, limit: limit)
                baselineListed += rows.count
                guard rows.count == limit, let last = rows.last else { break }
                after = last.id
            }
        }
        guard listed == options.records, baselineListed == options.records else {
            throw BenchError("list: listed \(listed) (store) and \(baselineListed) (baseline) of \(options.records) records")
        }
        return result
    }
}
