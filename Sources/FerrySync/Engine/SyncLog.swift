/// Where the sync engine reports what it does (ferryd passes its journald logger). Messages
/// never carry keys or payloads: records are named by entity and id at most.
public struct SyncLog: Sendable {
    public enum Level: Sendable { case error, warning, notice, info, debug }

    private let emit: @Sendable (Level, String, [String: String]) -> Void

    public init(_ emit: @escaping @Sendable (Level, String, [String: String]) -> Void) {
        self.emit = emit
    }

    /// Discards everything.
    public static let silent = SyncLog { _, _, _ in }

    public func callAsFunction(_ level: Level, _ message: String, _ fields: [String: String] = [:]) {
        emit(level, message, fields)
    }
}
