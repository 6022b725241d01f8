import FerryPostgres
import FerrySystemd
import FerryINI
import Foundation

/// ferry-relay's settings: defaults, then the config file. Every key is documented in
/// `etc/ferry-relay.conf`.
public struct RelayConfiguration: Sendable, Equatable {
    /// Where the relay keeps its state.
    public enum StorageBackend: String, Sendable, CaseIterable {
        /// relay.db and blobs/ in the state directory: one relay process.
        case sqlite
        /// A PostgreSQL database, blobs included, that several relay processes may share.
        case postgresql
    }

    /// Log levels, as syslog priorities.
    public typealias LogLevel = FerrySystemd.LogLevel

    // [Relay]
    public var listenHost = "127.0.0.1"
    public var listenPort = 8470
    public var stateDirectory: String
    public var storage = StorageBackend.sqlite
    /// SQLite's page cache for relay.db (Storage=sqlite), in MiB: the pages of the event
    /// indexes that pushes touch at random stay in memory instead of being read again.
    public var cacheMiB = 64
    public var maxWaitSeconds = 30
    public var defaultQuotaBytes: Int64 = 1 << 30
    public var tombstoneRetentionDays = 90.0
    public var maxBodyBytes = 8 << 20
    /// A 1 GiB attachment plus its sealing overhead fits.
    public var maxBlobBytes: Int64 = (1 << 30) + (16 << 20)
    public var connectionTimeoutSeconds = 30
    public var maxConnections = 4096
    public var threads = 2
    public var pairingCodeLifetimeSeconds = 600
    /// How long after a device stored a blob or asked whether it is there (PUT, HEAD) a
    /// request to remove it is refused as `blob_in_use`: that device may be about to push a
    /// record referencing it.
    public var blobDeleteGraceSeconds = 3600

    /// Warnings about settings that work but put data at risk, for `check-config` and the log
    /// at start.
    public var warnings: [String] {
        var out: [String] = []
        if blobDeleteGraceSeconds < Self.safeBlobDeleteGraceSeconds {
            out.append("BlobDeleteGraceSeconds=\(blobDeleteGraceSeconds) is under \(Self.safeBlobDeleteGraceSeconds): a device takes a blob it "
                + "found or stored to be there for 10 minutes, so another device may remove a blob that a record pushed "
                + "meanwhile references; use \(Self.safeBlobDeleteGraceSeconds) or more "
                + "(3600 by default) outside tests")
        }
        return out
    }

    /// The least `BlobDeleteGraceSeconds` that outlasts a device's trust in a blob it found (10
    /// minutes), with a margin.
    public static let safeBlobDeleteGraceSeconds = 900
    /// Peer addresses of reverse proxies whose `X-Forwarded-For` names the client (for the
    /// pairing rate limit and logs); empty: the peer address is the client.
    public var trustedProxies: Set<String> = []
    public var logLevel: LogLevel = .info
    // [PostgreSQL]
    /// A libpq connection string or URI (`host=... port=... dbname=... user=...`); it may hold
    /// a password, so nothing logs it.
    public var postgresConnection: String?
    /// Connections each relay process keeps (plus one that listens for other relays' pushes).
    public var postgresPoolSize = 4
    /// How long one statement may wait for the database before the request fails as the
    /// storage being unreachable (503) and the session is reconnected.
    public var postgresTimeoutSeconds = 30
    // [TLS]
    public var tlsCertificate: String?
    public var tlsKey: String?

    /// The limits of the wire API that the configuration does not change.
    public static let maxEventsPerPush = 2000
    public static let maxPullLimit = 1000
    public static let defaultPullLimit = 400
    /// A pull page stops adding events beyond this many bytes (at least one event is sent).
    public static let maxPageBytes = 8 << 20

    /// Defaults; the state directory is `$STATE_DIRECTORY` (set by systemd's
    /// `StateDirectory=`) or /var/lib/ferry-relay.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let fromSystemd = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
        stateDirectory = fromSystemd ?? "/var/lib/ferry-relay"
    }

    /// The SQLite file in the state directory.
    public var databasePath: String { stateDirectory + "/relay.db" }
    /// Where blob files live (SQLite).
    public var blobDirectory: String { stateDirectory + "/blobs" }
    /// Where uploads wait before they go into the database (PostgreSQL).
    public var blobSpoolDirectory: String { stateDirectory + "/blob-spool" }

    /// Why a configuration was refused: the file, line and key, and what is allowed.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Applies the file at `path` over the defaults.
    /// - Throws: `Problem` naming the line and key for anything unknown or out of range.
    public mutating func load(file path: String) throws(Problem) {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            let why = FileManager.default.fileExists(atPath: path) ? error.localizedDescription
                : "there is no such file (etc/ferry-relay.conf in the source tree is a documented one to copy)"
            throw Problem(description: "cannot read the configuration file \(path): \(why)")
        }
        try apply(text: text, file: path)
    }

    /// Applies config text over the current values.
    public mutating func apply(text: String, file: String = "config") throws(Problem) {
        let entries: [INIParser.Entry]
        do { entries = try INIParser.parse(text) } catch {
            throw Problem(description: "\(file): \(error)")
        }
        for e in entries {
            func fail(_ why: String) -> Problem { Problem(description: "\(file):\(e.line): [\(e.section)] \(e.key)=: \(why)") }
            func int(_ range: ClosedRange<Int64>) throws(Problem) -> Int64 {
                guard let v = Int64(e.value), range.contains(v) else {
                    throw fail("expected a whole number from \(range.lowerBound) to \(range.upperBound)")
                }
                return v
            }
            switch (e.section, e.key) {
            case ("Relay", "Listen"):
                guard let (host, port) = RelayConfiguration.parseListen(e.value) else {
                    throw fail("expected ADDRESS:PORT, such as 127.0.0.1:8470 or [::1]:8470 (port 0 picks a free one)")
                }
                listenHost = host; listenPort = port
            case ("Relay", "StateDirectory"):
                guard e.value.hasPrefix("/") else { throw fail("expected an absolute path") }
                stateDirectory = e.value
            case ("Relay", "Storage"):
                guard let backend = StorageBackend(rawValue: e.value) else { throw fail("expected sqlite or postgresql") }
                storage = backend
            case ("Relay", "MaxWaitSeconds"): maxWaitSeconds = Int(try int(0...3600))
            case ("Relay", "CacheMiB"): cacheMiB = Int(try int(2...65536))
            case ("Relay", "DefaultQuotaBytes"): defaultQuotaBytes = try int(0...Int64.max / 2)
            case ("Relay", "TombstoneRetentionDays"):
                guard let v = Double(e.value), v.isFinite, v >= 0, v <= 36500 else {
                    throw fail("expected a number of days from 0 to 36500 (fractions allowed)")
                }
                tombstoneRetentionDays = v
            case ("Relay", "MaxBodyBytes"): maxBodyBytes = Int(try int(1024...(256 << 20)))
            case ("Relay", "MaxBlobBytes"): maxBlobBytes = try int(0...(1 << 40))
            case ("Relay", "ConnectionTimeoutSeconds"): connectionTimeoutSeconds = Int(try int(1...3600))
            case ("Relay", "MaxConnections"): maxConnections = Int(try int(16...1_000_000))
            case ("Relay", "Threads"): threads = Int(try int(1...64))
            case ("Relay", "PairingCodeLifetimeSeconds"): pairingCodeLifetimeSeconds = Int(try int(1...86400))
            case ("Relay", "BlobDeleteGraceSeconds"): blobDeleteGraceSeconds = Int(try int(0...30 * 86400))
            case ("Relay", "TrustedProxies"):
                let addresses = e.value.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
                guard addresses.count <= 64, addresses.allSatisfy(HTTPRequestHead.isAddress) else {
                    throw fail("expected the IP addresses of reverse proxies, separated by spaces (such as 127.0.0.1 ::1)")
                }
                trustedProxies = Set(addresses.map(HTTPRequestHead.normalized))
            case ("Relay", "LogLevel"):
                guard let level = LogLevel(name: e.value) else { throw fail("expected debug, info, notice, warning or error") }
                logLevel = level
            case ("PostgreSQL", "Connection"):
                // libpq's own message names the bad keyword or quote; the value is never echoed
                // (it may hold a password).
                if let problem = PostgresConnection.validate(conninfo: e.value) { throw fail("not a libpq connection string or URI: \(problem)") }
                guard !e.value.isEmpty else { throw fail("expected a libpq connection string, such as host=127.0.0.1 port=5432 dbname=ferry user=ferry") }
                postgresConnection = e.value
            case ("PostgreSQL", "PoolSize"): postgresPoolSize = Int(try int(1...256))
            case ("PostgreSQL", "TimeoutSeconds"): postgresTimeoutSeconds = Int(try int(1...3600))
            case ("TLS", "Certificate"):
                guard e.value.isEmpty || e.value.hasPrefix("/") else { throw fail("expected an absolute path") }
                tlsCertificate = e.value.isEmpty ? nil : e.value
            case ("TLS", "Key"):
                guard e.value.isEmpty || e.value.hasPrefix("/") else { throw fail("expected an absolute path") }
                tlsKey = e.value.isEmpty ? nil : e.value
            default:
                throw fail("unknown key (see etc/ferry-relay.conf for every key)")
            }
        }
        if storage == .postgresql, postgresConnection == nil {
            throw Problem(description: "\(file): [Relay] Storage=postgresql needs [PostgreSQL] Connection= (a libpq connection string, such as host=127.0.0.1 port=5432 dbname=ferry user=ferry)")
        }
        if (tlsCertificate == nil) != (tlsKey == nil) {
            throw Problem(description: "\(file): [TLS] needs both Certificate= and Key=, or neither")
        }
    }

    /// `HOST:PORT` or `[IPV6]:PORT`.
    static func parseListen(_ text: String) -> (String, Int)? {
        let host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let p = Int(port), (0...65535).contains(p) else { return nil }
        return (String(host), p)
    }
}
