import FerrySystemd
import Foundation
import Synchronization

/// ferry-relay's log: structured journald entries (MESSAGE, PRIORITY, FERRY_* fields) when stderr
/// is the journal, plain lines on stderr otherwise.
///
/// Never pass tokens, pairing codes or envelope bytes to it: entries name owners, routes and
/// token ids only.
public final class RelayLogger: Sendable {
    public typealias Level = RelayConfiguration.LogLevel

    private let level: Atomic<Int>
    private let useJournal: Bool
    private let lock = Mutex(())

    public init(level: Level, useJournal: Bool = Journal.isStderrJournal) {
        self.level = Atomic(level.rawValue)
        self.useJournal = useJournal
    }

    public func isEnabled(_ level: Level) -> Bool { level.rawValue <= self.level.load(ordering: .relaxed) }

    /// Logs `message` with fields (names without the FERRY_ prefix, e.g. "owner").
    public func log(_ level: Level, _ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        guard isEnabled(level) else { return }
        let text = message()
        if useJournal {
            var journalFields: [String: String] = [:]
            for (k, v) in fields { journalFields["FERRY_" + k.uppercased()] = v }
            if Journal.send(message: text, priority: level.rawValue, identifier: "ferry-relay", fields: journalFields) { return }
        }
        var line = "ferry-relay[\(getpid())]: \(level.name): \(text)"
        for (k, v) in fields.sorted(by: { $0.key < $1.key }) { line += " \(k)=\(v)" }
        line += "\n"
        lock.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    public func debug(_ m: @autoclosure () -> String, _ f: [String: String] = [:]) { log(.debug, m(), f) }
    public func info(_ m: @autoclosure () -> String, _ f: [String: String] = [:]) { log(.info, m(), f) }
    public func notice(_ m: @autoclosure () -> String, _ f: [String: String] = [:]) { log(.notice, m(), f) }
    public func warning(_ m: @autoclosure () -> String, _ f: [String: String] = [:]) { log(.warning, m(), f) }
    public func error(_ m: @autoclosure () -> String, _ f: [String: String] = [:]) { log(.error, m(), f) }
}
