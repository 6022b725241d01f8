import Foundation

/// One machine-readable output line: a figure's name, then `key=value` fields with no spaces in
/// the values, e.g. `store.put_many records=1000000 records_per_s=31000 ...`.
struct ResultLine {
    let name: String
    private(set) var fields: [(key: String, value: String)] = []

    init(_ name: String) {
        self.name = name
    }

    mutating func add(_ key: String, _ value: String) {
        fields.append((key, value.replacingOccurrences(of: " ", with: "_")))
    }

    mutating func add(_ key: String, _ value: Int) { add(key, String(value)) }

    /// A value with `digits` decimals.
    mutating func add(_ key: String, _ value: Double, digits: Int) {
        add(key, String(format: "%.\(digits)f", value))
    }

    var text: String {
        ([name] + fields.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
    }

    /// Prints the line and flushes, so that a long run shows each figure as it is measured.
    func emit() {
        print(text)
        fflush(nil)  // nil flushes every stream; `stdout` is a global var that Swift 6 rejects
    }
}
