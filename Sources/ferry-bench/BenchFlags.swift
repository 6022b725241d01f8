/// The flags of a benchmark subcommand: `--name N` numbers (positive, `_` allowed as in
/// 100_000), bare switches, and `--dir DIR` (read by main). Unknown flags are usage errors.
struct BenchFlags {
    private(set) var numbers: [String: Int] = [:]
    private(set) var switches: Set<String> = []

    init(_ arguments: ArraySlice<String>, numbers allowed: Set<String>, switches allowedSwitches: Set<String> = []) throws {
        var rest = arguments
        while let flag = rest.popFirst() {
            if allowed.contains(flag) {
                guard let text = rest.popFirst(), let n = Int(text.replacingOccurrences(of: "_", with: "")), n > 0 else {
                    throw BenchError("\(flag) needs a positive whole number", isUsage: true)
                }
                numbers[flag] = n
            } else if allowedSwitches.contains(flag) {
                switches.insert(flag)
            } else if flag == "--dir" {
                _ = rest.popFirst()
            } else if flag == "-h" || flag == "--help" {
                throw BenchError("", isUsage: true)
            } else {
                throw BenchError("unknown option \(flag)", isUsage: true)
            }
        }
    }
}
