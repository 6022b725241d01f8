import FerryStore

/// The command line of `ferry-bench store`.
struct BenchOptions {
    static let usage = """
        usage: ferry-bench store --records N [--durability full|normal] [--batch 1000] [--dir DIR] [--ids uuid4|uuid7]

          --records N        records written by put_many and by apply_remote (required, >= 1)
          --durability D     full (the product default) or normal
          --batch B          records per Store.putMany call and per baseline transaction (1...10000)
          --dir DIR          where the scratch directory is made (default /tmp); it is removed at the end
          --ids K            uuid4 (random, the default) or uuid7 (increasing): where inserts land in the key index
        Prints one key=value line per figure.
        """

    var records = 0
    var durability: StoreConfiguration.Durability = .full
    var batch = 1000
    var parent = "/tmp"
    var ids: RecordGenerator.IDKind = .uuid4
    /// The sync engine's batch size for remote versions.
    var applyBatch = 400
    /// Single puts: at most this many (one fsync each with full durability).
    var singleLimit = 10_000
    /// Point lookups: at most this many.
    var getLimit = 200_000
    var listPage = 1000
    var seed: UInt64 = 0xFE44_7B3E_4C21_0001
    var cacheKiB = StoreConfiguration(directory: "").cacheKiB

    /// Parses the arguments after the program name.
    /// - Throws: `BenchError` (usage) for anything it does not understand.
    init(arguments: [String]) throws {
        var rest = arguments[...]
        guard rest.popFirst() == "store" else { throw BenchError("expected the subcommand `store`", isUsage: true) }
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw BenchError("\(flag) needs a value", isUsage: true) }
            return v
        }
        func number(_ flag: String, _ range: ClosedRange<Int>) throws -> Int {
            let text = try value(flag)
            guard let n = Int(text.replacingOccurrences(of: "_", with: "")), range.contains(n) else {
                throw BenchError("\(flag) \(text): expected a whole number in \(range.lowerBound)...\(range.upperBound)", isUsage: true)
            }
            return n
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--records": records = try number(flag, 1...100_000_000)
            case "--batch": batch = try number(flag, 1...10_000)
            case "--dir": parent = try value(flag)
            case "--durability":
                let text = try value(flag)
                guard let d = StoreConfiguration.Durability(rawValue: text) else {
                    throw BenchError("--durability \(text): expected full or normal", isUsage: true)
                }
                durability = d
            case "--ids":
                let text = try value(flag)
                guard let kind = RecordGenerator.IDKind(rawValue: text) else {
                    throw BenchError("--ids \(text): expected uuid4 or uuid7", isUsage: true)
                }
                ids = kind
            case "-h", "--help": throw BenchError("", isUsage: true)
            default: throw BenchError("unknown option \(flag)", isUsage: true)
            }
        }
        if records == 0 { throw BenchError("--records N is required", isUsage: true) }
    }
}
