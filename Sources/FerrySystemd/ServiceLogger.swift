import Foundation
import Synchronization

/// How much a service logs: syslog priorities, so a level is also the entry's journald PRIORITY.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug = 7, info = 6, notice = 5, warning = 4, error = 3

    /// More severe levels compare greater: `.error > .warning`.
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue > b.rawValue }

    /// Parses `debug`, `info`, `notice`, `warning` (or `warn`), `error` (or `err`), in any case.
    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "notice": self = .notice
        case "warning", "warn": self = .warning
        case "error", "err": self = .error
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }
}

/// A service's log (ferryd's, ferry-relay's): structured journald entries (MESSAGE, PRIORITY,
/// SYSLOG_IDENTIFIER and FERRY_* fields) when stderr is the journal, else plain lines on stderr,
/// `IDENTIFIER[PID]: LEVEL: MESSAGE key=value ...`.
///
/// Never pass keys, tokens, pairing codes, payloads or envelope bytes to it: callers name
/// records, owners and tokens by id only. Thread-safe; the level can change at run time.
public final class ServiceLogger: Sendable {
    private let level: Atomic<Int>
    private let useJournal: Bool
    private let identifier: String
    private let lock = Mutex(())

    /// - Parameter identifier: the program name entries carry (`ferryd`, `ferry-relay`).
    public init(level: LogLevel, identifier: String, useJournal: Bool = Journal.isStderrJournal) {
        self.level = Atomic(level.rawValue)
        self.useJournal = useJournal
        self.identifier = identifier
    }

    public func setLevel(_ level: LogLevel) {
        self.level.store(level.rawValue, ordering: .relaxed)
    }

    public func isEnabled(_ level: LogLevel) -> Bool {
        level.rawValue <= self.level.load(ordering: .relaxed)
    }

    /// Logs `message` with extra fields (names without the FERRY_ prefix, e.g. "entity").
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        guard isEnabled(level) else { return }
        let text = message()
        if useJournal {
            var journalFields: [String: String] = [:]
            for (k, v) in fields { journalFields["FERRY_" + k.uppercased()] = v }
            if Journal.send(message: text, priority: level.rawValue, identifier: identifier, fields: journalFields) { return }
        }
        var line = "\(identifier)[\(getpid())]: \(level.name): \(text)"
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
