import FerryModel
import FerryStore
import FerrySystemd
import FerrySync
import FerryINI
import Foundation

/// ferryd's settings: built from defaults, the config file and the command line, in that order.
/// Every key is documented in `etc/ferryd.conf`.
public struct DaemonConfiguration: Sendable, Equatable {
    public typealias LogLevel = FerrySystemd.LogLevel

    // [Daemon]
    public var stateDirectory: String
    public var socketPath: String
    public var logLevel: LogLevel = .info
    // [Store]
    public var durability: StoreConfiguration.Durability = .full
    public var immutableEntities: Set<String> = []
    public var maxPayloadBytes: Int = 1 << 20
    /// The highest `MaxPayloadBytes`: a record this large, with the most attachments and the
    /// longest entity and id, still seals into one envelope (`Envelope.maxBodyBytes`, 4 MiB),
    /// so a record that can be written can always be synced.
    public static let maxPayloadLimit = (4 << 20) - (64 << 10)
    public var maxBatch: Int = 10_000
    public var conflictHistory: Int = 10
    public var maxDriftSeconds: Int = 300
    public var maxAttachmentBytes: Int = 1 << 30
    public var attachmentGraceSeconds: Int = 3600
    // [API]
    public var watchBufferBytes: Int = 4 << 20
    public var slowWatcherGraceSeconds: Double = 5
    public var maxConnections: Int = 4096
    public var busyPollMicroseconds: Int = 200
    // [Sync]
    public var pollIntervalSeconds: Int = 30
    public var debounceMilliseconds: Int = 10
    public var attachmentWaitSeconds: Int = 120
    public var relayTimeoutSeconds: Int = 60
    /// nil: `infinity`, blobs are never removed from transports.
    public var blobRetentionSeconds: Int? = 7 * 86_400
    // [Transport NAME] sections, in file order.
    public var transports: [DeclaredTransport] = []

    /// A transport declared in the config file (`[Transport NAME]`).
    public struct DeclaredTransport: Sendable, Hashable {
        public var name: String
        public var space: String = "private"
        public var kind: String = ""
        public var location: String = ""
        /// For a relay: the token its operator or a pairing gave.
        public var token: String?
        /// Where it was declared, for messages.
        public var line: Int
        /// The line of its `[Transport NAME]` header.
        public var sectionLine: Int = 0
        /// The line of its `Token=`, for messages about it.
        public var tokenLine: Int = 0
    }

    /// Defaults from the XDG base directories of `environment`.
    public init(environment: [String: String]) {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let state = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/state"
        stateDirectory = state + "/ferry"
        let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/run/user/\(getuid())"
        socketPath = runtime + "/ferry/ferryd.sock"
    }

    /// The default config file path for `environment`.
    public static func defaultConfigPath(environment: [String: String]) -> String {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        return config + "/ferry/ferryd.conf"
    }

    /// A configuration problem, with the file and line.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var file: String
        public var line: Int
        public var message: String
        public var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
    }

    /// The text of the config file at `path`: nil when there is none there and `required` is
    /// false (the built-in defaults hold); otherwise what keeps it from being read, in the
    /// user's terms (missing, a directory, not readable, too large).
    public static func readFile(_ path: String, required: Bool) throws(Problem) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let code = errno
            if code == ENOENT && !required { return nil }
            throw Problem(file: path, line: 0, message: code == ENOENT
                ? "there is no config file here: check the path given with --config"
                : "cannot reach the config file (\(String(cString: strerror(code)))): check the path and its directories' permissions")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw Problem(file: path, line: 0, message: "this is \(status.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"), not a config file")
        }
        guard status.st_size <= INIParser.maxBytes else {
            throw Problem(file: path, line: 0, message: "the file is \(status.st_size) bytes; a config file holds at most \(INIParser.maxBytes)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem(file: path, line: 0, message: "cannot read the config file (\(String(cString: strerror(EACCES)))): make it readable by the user ferryd runs as")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Applies the settings of a config file's text.
    /// - Throws: `Problem` for unknown sections or keys and for values out of range, naming the
    ///   line and what is allowed.
    public mutating func apply(configText text: String, file: String) throws(Problem) {
        let entries: [INIParser.Entry]
        do { entries = try INIParser.parse(text) } catch {
            throw Problem(file: file, line: error.line, message: error.message)
        }
        for entry in entries {
            if entry.section.hasPrefix("Transport ") {
                try applyTransport(entry, file: file)
            } else {
                try apply(entry, file: file)
            }
        }
        for t in transports {
            // What a section lacks is reported at its header, what a key gets wrong at the key.
            if t.kind.isEmpty { throw Problem(file: file, line: t.sectionLine, message: "[Transport \(t.name)] needs Kind= (folder or relay)") }
            if t.location.isEmpty {
                throw Problem(file: file, line: t.sectionLine, message: "[Transport \(t.name)] needs Location= (the folder's absolute path, or the relay's URL)")
            }
            if t.kind == "relay" && t.token == nil {
                throw Problem(file: file, line: t.sectionLine, message: "[Transport \(t.name)] of kind relay needs Token= (from the relay's operator; "
                    + "or add it with 'ferryctl transport add NAME relay URL --code CODE' instead)")
            }
            if t.kind != "relay" && t.token != nil {
                throw Problem(file: file, line: t.tokenLine, message: "[Transport \(t.name)]: Token= is for a relay; a \(t.kind) transport takes none")
            }
        }
    }

    private mutating func applyTransport(_ e: INIParser.Entry, file: String) throws(Problem) {
        func problem(_ message: String) -> Problem { Problem(file: file, line: e.line, message: message) }
        let name = String(e.section.dropFirst("Transport ".count)).trimmingCharacters(in: .whitespaces)
        guard Names.isValidName(name) else {
            throw problem("[Transport NAME]: the name is [a-z][a-z0-9_.-]{0,63}, not \"\(name.prefix(64))\"")
        }
        var index = transports.firstIndex { $0.name == name && $0.line >= 0 }
        if let found = index, transports[found].sectionLine != e.sectionLine {
            // A second section would silently replace the first's values.
            throw Problem(file: file, line: e.sectionLine, message: "[Transport \(name)] appears twice (lines \(transports[found].sectionLine) and \(e.sectionLine)): "
                + "declare each transport in one section, under names of its own")
        }
        if index == nil {
            transports.append(DeclaredTransport(name: name, line: e.line, sectionLine: e.sectionLine))
            index = transports.count - 1
        }
        switch e.key {
        case "Kind":
            guard TransportConfiguration.kinds.contains(e.value) else {
                throw problem("Kind= is \(TransportConfiguration.kinds.joined(separator: " or ")), not \"\(e.value.prefix(40))\"")
            }
            transports[index!].kind = e.value
        case "Location":
            guard e.value.hasPrefix("/") || e.value.hasPrefix("http://") || e.value.hasPrefix("https://") else {
                throw problem("Location= must be an absolute path (a folder) or a URL (a relay)")
            }
            transports[index!].location = e.value
        case "Space":
            guard Names.isValidName(e.value) else { throw problem("Space= is a space name ([a-z][a-z0-9_.-]{0,63})") }
            transports[index!].space = e.value
        case "Token":
            // A relay token is fr1_ and 43 base64url characters (ferry-relay's AccessToken).
            let body = e.value.utf8.dropFirst(4)
            guard e.value.hasPrefix("fr1_"), body.count == 43,
                  body.allSatisfy({ (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95 }) else {
                throw problem("Token= is not a relay token (fr1_ and 43 more letters, digits, - or _): copy it again, whole, from what "
                    + "'ferry-relay admin create-owner' printed, or add the transport with 'ferryctl transport add NAME relay URL --code CODE'")
            }
            transports[index!].token = e.value
            transports[index!].tokenLine = e.line
        default:
            throw problem("unknown key \(e.key.prefix(64))= in [Transport \(name)]; known keys: Kind, Location, Space, Token")
        }
    }

    private mutating func apply(_ e: INIParser.Entry, file: String) throws(Problem) {
        func problem(_ message: String) -> Problem { Problem(file: file, line: e.line, message: message) }
        func int(_ range: ClosedRange<Int>) throws(Problem) -> Int {
            guard let v = Int(e.value), range.contains(v) else {
                throw problem("\(e.key)= must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(e.value.prefix(64))\"")
            }
            return v
        }
        func path() throws(Problem) -> String {
            guard e.value.hasPrefix("/") else { throw problem("\(e.key)= must be an absolute path") }
            return e.value
        }
        switch (e.section, e.key) {
        case ("Daemon", "StateDirectory"): stateDirectory = try path()
        case ("Daemon", "Socket"): socketPath = try path()
        case ("Daemon", "LogLevel"):
            guard let level = LogLevel(name: e.value) else {
                throw problem("LogLevel= is one of debug, info, notice, warning, error")
            }
            logLevel = level
        case ("Store", "Durability"):
            guard let d = StoreConfiguration.Durability(rawValue: e.value.lowercased()) else {
                throw problem("Durability= is full or normal")
            }
            durability = d
        case ("Store", "ImmutableEntities"):
            let names = e.value.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
            for name in names where !Names.isValidName(name) {
                throw problem("ImmutableEntities= lists entity names ([a-z][a-z0-9_.-]{0,63}); \"\(name.prefix(64))\" is not one")
            }
            immutableEntities = Set(names)
        case ("Store", "MaxPayloadBytes"): maxPayloadBytes = try int(2 ... Self.maxPayloadLimit)
        case ("Store", "MaxBatch"): maxBatch = try int(1 ... 100_000)
        case ("Store", "ConflictHistory"): conflictHistory = try int(0 ... 1000)
        case ("Store", "MaxDriftSeconds"): maxDriftSeconds = try int(1 ... 86_400)
        case ("Store", "MaxAttachmentBytes"): maxAttachmentBytes = try int(1 ... 1 << 40)
        case ("Store", "AttachmentGraceSeconds"): attachmentGraceSeconds = try int(0 ... 30 * 86_400)
        case ("API", "WatchBufferBytes"): watchBufferBytes = try int(64 << 10 ... 1 << 30)
        case ("API", "SlowWatcherGraceSeconds"):
            guard let v = Double(e.value), v >= 0.1, v <= 600 else { throw problem("SlowWatcherGraceSeconds= is from 0.1 to 600") }
            slowWatcherGraceSeconds = v
        case ("API", "MaxConnections"): maxConnections = try int(1 ... 65_536)
        case ("API", "BusyPollMicroseconds"): busyPollMicroseconds = try int(0 ... 1000)
        case ("Sync", "PollIntervalSeconds"): pollIntervalSeconds = try int(1 ... 86_400)
        case ("Sync", "DebounceMilliseconds"): debounceMilliseconds = try int(0 ... 10_000)
        case ("Sync", "AttachmentWaitSeconds"): attachmentWaitSeconds = try int(0 ... 86_400)
        case ("Sync", "RelayTimeoutSeconds"): relayTimeoutSeconds = try int(2 ... 3600)
        case ("Sync", "BlobRetentionSeconds"):
            if e.value == "infinity" {
                blobRetentionSeconds = nil
            } else if let v = Int(e.value), (0 ... 3650 * 86_400).contains(v) {
                blobRetentionSeconds = v
            } else {
                throw problem("BlobRetentionSeconds= is a whole number of seconds from 0 to \(3650 * 86_400), or infinity to keep every blob, not \"\(e.value.prefix(64))\"")
            }
        default:
            let known = DaemonConfiguration.knownKeys[e.section]
            if known == nil {
                throw problem("unknown section [\(e.section.prefix(64))]; sections are \(DaemonConfiguration.knownKeys.keys.sorted().map { "[\($0)]" }.joined(separator: ", "))")
            }
            throw problem("unknown key \(e.key.prefix(64))= in [\(e.section)]; known keys: \(known!.joined(separator: ", "))")
        }
    }

    static let knownKeys: [String: [String]] = [
        "Daemon": ["StateDirectory", "Socket", "LogLevel"],
        "Store": ["Durability", "ImmutableEntities", "MaxPayloadBytes", "MaxBatch", "ConflictHistory", "MaxDriftSeconds",
                  "MaxAttachmentBytes", "AttachmentGraceSeconds"],
        "API": ["WatchBufferBytes", "SlowWatcherGraceSeconds", "MaxConnections", "BusyPollMicroseconds"],
        "Sync": ["PollIntervalSeconds", "DebounceMilliseconds", "AttachmentWaitSeconds", "RelayTimeoutSeconds",
                 "BlobRetentionSeconds"],
        "Transport NAME": ["Kind", "Location", "Space", "Token"],
    ]

    /// The sync engine's options these settings describe.
    public var syncOptions: SyncOptions {
        var o = SyncOptions(scratchDirectory: stateDirectory + "/tmp")
        o.pollInterval = .seconds(pollIntervalSeconds)
        o.debounce = .milliseconds(debounceMilliseconds)
        o.attachmentWait = .seconds(attachmentWaitSeconds)
        o.blobRetention = blobRetentionSeconds.map { .seconds($0) }
        return o
    }

    /// The store configuration these settings describe.
    public var storeConfiguration: StoreConfiguration {
        var c = StoreConfiguration(directory: stateDirectory)
        c.durability = durability
        c.immutableEntities = immutableEntities
        c.limits = RecordLimits(maxPayloadBytes: maxPayloadBytes)
        c.maxBatch = maxBatch
        c.conflictHistory = conflictHistory
        c.maxDriftMillis = Int64(maxDriftSeconds) * 1000
        c.maxAttachmentBytes = maxAttachmentBytes
        c.attachmentGraceSeconds = Int64(attachmentGraceSeconds)
        return c
    }

    public static func == (a: DaemonConfiguration, b: DaemonConfiguration) -> Bool {
        a.stateDirectory == b.stateDirectory && a.socketPath == b.socketPath && a.logLevel == b.logLevel
            && a.durability == b.durability && a.immutableEntities == b.immutableEntities
            && a.maxPayloadBytes == b.maxPayloadBytes && a.maxBatch == b.maxBatch && a.conflictHistory == b.conflictHistory
            && a.maxDriftSeconds == b.maxDriftSeconds && a.maxAttachmentBytes == b.maxAttachmentBytes
            && a.attachmentGraceSeconds == b.attachmentGraceSeconds && a.watchBufferBytes == b.watchBufferBytes
            && a.slowWatcherGraceSeconds == b.slowWatcherGraceSeconds && a.maxConnections == b.maxConnections
            && a.busyPollMicroseconds == b.busyPollMicroseconds
            && a.pollIntervalSeconds == b.pollIntervalSeconds && a.debounceMilliseconds == b.debounceMilliseconds
            && a.attachmentWaitSeconds == b.attachmentWaitSeconds && a.relayTimeoutSeconds == b.relayTimeoutSeconds
            && a.blobRetentionSeconds == b.blobRetentionSeconds
            && a.transports == b.transports
    }
}
