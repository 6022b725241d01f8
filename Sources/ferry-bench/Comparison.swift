/// A figure measured against its raw-SQLite baseline.
struct Comparison {
    /// What was counted (`records`, `lookups`).
    var unit: String
    var count: Int
    var storeNanos: UInt64
    var baselineNanos: UInt64

    var storeRate: Double { Comparison.rate(count, storeNanos) }
    var baselineRate: Double { Comparison.rate(count, baselineNanos) }
    var ratio: Double { baselineRate > 0 ? storeRate / baselineRate : 0 }

    private static func rate(_ count: Int, _ nanos: UInt64) -> Double {
        nanos == 0 ? 0 : Double(count) / (Double(nanos) / 1e9)
    }

    /// The figure's line: count, rates, ratio, then the seconds each side took.
    func line(_ name: String, extra: [(String, String)] = []) -> ResultLine {
        var line = ResultLine(name)
        line.add(unit, count)
        for (key, value) in extra { line.add(key, value) }
        line.add("\(unit)_per_s", Int(storeRate.rounded()))
        line.add("baseline_per_s", Int(baselineRate.rounded()))
        line.add("ratio_vs_sqlite", ratio, digits: 2)
        line.add("store_s", Double(storeNanos) / 1e9, digits: 3)
        line.add("baseline_s", Double(baselineNanos) / 1e9, digits: 3)
        return line
    }
}
