/// A benchmark run that could not complete: bad arguments, a setup step that failed, or a result
/// that shows the store did not do what was asked (a record not found, a version not applied).
struct BenchError: Error, CustomStringConvertible {
    /// What went wrong, with the phase and the record or call involved.
    let message: String
    /// True for a command-line mistake (exit status 2 and the usage text).
    var isUsage = false

    init(_ message: String, isUsage: Bool = false) {
        self.message = message
        self.isUsage = isUsage
    }

    var description: String { message }
}
