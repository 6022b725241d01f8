import FerryModel
import FerrySQLite
import FerryStore

/// `ferry-bench store`: the core store's throughput against raw SQLite doing the same rows with
/// the same pragmas, in the same run, on the same machine.
///
/// Phases, in order: put_many, put_single, get and list on one store (entity "item" holds the N
/// records; single puts go to "note" so that list covers exactly N), then apply_remote into a
/// second, fresh store. Each store side is paired with its own fresh baseline database. Records
/// are generated one batch at a time, outside the timed sections, so memory stays bounded.
final class StoreBenchmark {
    /// The targets the summary line checks.
    enum Target {
        static let putManyRatio = 0.5
        static let applyRemoteRatio = 0.5
        static let getRatio = 0.5
        static let peakRSSMiB = 150.0
    }

    let options: BenchOptions
    let generator: RecordGenerator
    let scratch: ScratchDirectory
    static let entity = "item"
    static let singleEntity = "note"

    init(options: BenchOptions, scratch: ScratchDirectory) {
        self.options = options
        self.generator = RecordGenerator(seed: options.seed, kind: options.ids)
        self.scratch = scratch
    }

    /// Runs every phase, printing each figure's line as soon as it is measured, then the peak
    /// RSS and the summary. Returns true when every target was met.
    func run() throws -> Bool {
        let started = Monotonic.nanos()
        try configLine().emit()

        var disk = ResultLine("store.disk")
        let putMany, putSingle, get, list: Comparison
        do {
            let directory = try scratch.subdirectory("local")
            let store = try Store(configuration: storeConfiguration(directory))
            let baseline = try BaselineDatabase(path: scratch.path + "/baseline-local.db",
                                                durability: options.durability, cacheKiB: options.cacheKiB)
            putMany = try measurePutMany(store, baseline)
            putMany.line("store.put_many", extra: [("batch", String(options.batch))] + rss()).emit()
            putSingle = try measurePutSingle(store, baseline)
            putSingle.line("store.put_single", extra: rss()).emit()
            get = try measureGet(store, baseline)
            get.line("store.get", extra: [("of_records", String(options.records))] + rss()).emit()
            list = try measureList(store, baseline)
            list.line("store.list", extra: [("page", String(options.listPage))] + rss()).emit()
            disk.add("local_store_mb", Double(ScratchDirectory.treeBytes(directory)) / 1_048_576, digits: 1)
            disk.add("local_baseline_mb", Double(ScratchDirectory.databaseBytes(baseline.db.path)) / 1_048_576, digits: 1)
        }
        // The first store and its baseline are closed here, before the second pair opens.
        let apply: Comparison
        do {
            let directory = try scratch.subdirectory("remote")
            let store = try Store(configuration: storeConfiguration(directory))
            let baseline = try BaselineDatabase(path: scratch.path + "/baseline-remote.db",
                                                durability: options.durability, cacheKiB: options.cacheKiB)
            apply = try measureApplyRemote(store, baseline)
            apply.line("store.apply_remote", extra: [("batch", String(options.applyBatch))] + rss()).emit()
            disk.add("remote_store_mb", Double(ScratchDirectory.treeBytes(directory)) / 1_048_576, digits: 1)
            disk.add("remote_baseline_mb", Double(ScratchDirectory.databaseBytes(baseline.db.path)) / 1_048_576, digits: 1)
        }
        disk.emit()

        let peakMiB = Double(ProcessMemory.peakResidentBytes() ?? 0) / 1_048_576
        var peak = ResultLine("store.peak_rss")
        peak.add("mb", peakMiB, digits: 1)
        peak.add("target_mb", Int(Target.peakRSSMiB))
        peak.add("rss_mb", Double(ProcessMemory.residentBytes() ?? 0) / 1_048_576, digits: 1)
        peak.emit()

        let checks: [(String, Bool)] = [
            ("put_many", putMany.ratio >= Target.putManyRatio),
            ("apply_remote", apply.ratio >= Target.applyRemoteRatio),
            ("get", get.ratio >= Target.getRatio),
            ("peak_rss", peakMiB < Target.peakRSSMiB),
        ]
        let passed = checks.allSatisfy(\.1)
        var summary = ResultLine("store.summary")
        summary.add("result", passed ? "pass" : "fail")
        for (name, ok) in checks { summary.add(name, ok ? "pass" : "fail") }
        summary.add("put_many_ratio", putMany.ratio, digits: 2)
        summary.add("apply_remote_ratio", apply.ratio, digits: 2)
        summary.add("get_ratio", get.ratio, digits: 2)
        summary.add("peak_rss_mb", peakMiB, digits: 1)
        summary.add("list_ratio", list.ratio, digits: 2)
        summary.add("put_single_ratio", putSingle.ratio, digits: 2)
        summary.add("wall_s", Double(Monotonic.nanos() - started) / 1e9, digits: 1)
        summary.emit()
        return passed
    }

    func storeConfiguration(_ directory: String) -> StoreConfiguration {
        var configuration = StoreConfiguration(directory: directory)
        configuration.durability = options.durability
        configuration.cacheKiB = options.cacheKiB
        configuration.maxBatch = max(configuration.maxBatch, options.batch, options.applyBatch)
        return configuration
    }

    private func configLine() throws -> ResultLine {
        let memory = try Database(path: ":memory:")
        var line = ResultLine("store.config")
        line.add("records", options.records)
        line.add("durability", options.durability.rawValue)
        line.add("batch", options.batch)
        line.add("ids", options.ids.rawValue)
        line.add("apply_batch", options.applyBatch)
        line.add("single_puts", min(options.records, options.singleLimit))
        line.add("lookups", min(options.records, options.getLimit))
        line.add("cache_kib", options.cacheKiB)
        let sample = (0..<1000).reduce(0) { $0 + generator.payload(.items, $1).utf8.count }
        line.add("payload_bytes_avg", sample / 1000)
        line.add("sqlite_version", try memory.scalarText("SELECT sqlite_version()") ?? "?")
        line.add("dir", scratch.path)
        return line
    }

    /// The peak RSS so far, for the phase lines (which phase made the process grow).
    private func rss() -> [(String, String)] {
        let mib = Double(ProcessMemory.peakResidentBytes() ?? 0) / 1_048_576
        return [("hwm_mb", String(Int(mib.rounded())))]
    }
}

extension BaselineDatabase.Row {
    /// The row the store wrote for `record`, so that the baseline writes the very same bytes.
    init(_ record: Record) {
        self.init(entity: record.entity, id: record.id, hlc: record.hlc.text, deleted: record.deleted,
                  payload: record.payload, attachments: nil, seq: record.seq)
    }
}
