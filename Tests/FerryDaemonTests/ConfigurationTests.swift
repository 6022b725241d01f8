import FerryINI
import FerryJSON
import FerryModel
import Foundation
import Testing
@testable import FerryDaemon
@testable import FerryStore
@testable import FerrySync

@Suite struct INIParserTests {
    let sample = """
    # comment
    ; another
    [Daemon]
    LogLevel = debug
    Socket=/tmp/x.sock

    [Store]
    ImmutableEntities=stock.movement \\
      ledger
    Durability=normal\r
    """

    @Test func parsesSectionsKeysContinuationsAndCRLF() throws {
        let entries = try INIParser.parse(sample)
        #expect(entries.map(\.key) == ["LogLevel", "Socket", "ImmutableEntities", "Durability"])
        #expect(entries[0].value == "debug" && entries[0].section == "Daemon" && entries[0].line == 4)
        #expect(entries[2].value == "stock.movement ledger")
        #expect(entries[3].value == "normal")
    }

    /// Windows line endings throughout and a UTF-8 byte order mark (as editors write them) read
    /// as the same file; each entry knows its section's header line.
    @Test func crlfThroughoutAndAByteOrderMarkReadTheSame() throws {
        let unix = "# c\n[Daemon]\nLogLevel=debug\n\n[Store]\nDurability=normal\n[Daemon]\nSocket=/s\n"
        let windows = "\u{FEFF}" + unix.replacingOccurrences(of: "\n", with: "\r\n")
        let entries = try INIParser.parse(windows)
        #expect(entries == (try INIParser.parse(unix)))
        #expect(entries.map(\.key) == ["LogLevel", "Durability", "Socket"] && entries.map(\.line) == [3, 6, 8])
        #expect(entries.map(\.sectionLine) == [2, 5, 7])
    }

    /// The parser never crashes and reports a line for any prefix of a valid file.
    @Test func everyPrefixParsesOrFailsWithALine() {
        let bytes = Array(sample.utf8)
        for cut in 0...bytes.count {
            let text = String(decoding: bytes[..<cut], as: UTF8.self)
            do { _ = try INIParser.parse(text) } catch { #expect(error.line >= 1) }
        }
    }

    @Test(arguments: ["Key=Value", "[Daemon]\nno equals sign", "[Daemon\nA=b", "[Daemon]\n=v", "[Daemon]\nbad key=v"])
    func rejectsMalformedLines(_ text: String) {
        #expect(throws: INIParser.Failure.self) { try INIParser.parse(text) }
    }

    @Test func rejectsHugeFiles() {
        let text = String(repeating: "#", count: INIParser.maxBytes + 1)
        #expect(throws: INIParser.Failure.self) { try INIParser.parse(text) }
    }
}

@Suite struct DaemonConfigurationTests {
    let env = ["HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000"]

    @Test func xdgDefaults() {
        let c = DaemonConfiguration(environment: env)
        #expect(c.stateDirectory == "/home/u/.local/state/ferry")
        #expect(c.socketPath == "/run/user/1000/ferry/ferryd.sock")
        #expect(c.durability == .full && c.logLevel == .info)
        let custom = DaemonConfiguration(environment: env.merging(["XDG_STATE_HOME": "/s", "XDG_RUNTIME_DIR": "relative"]) { $1 })
        #expect(custom.stateDirectory == "/s/ferry")
        #expect(custom.socketPath.hasPrefix("/run/user/"))   // a relative XDG value is ignored, as the spec says
        #expect(DaemonConfiguration.defaultConfigPath(environment: env) == "/home/u/.config/ferry/ferryd.conf")
    }

    /// `--check-config` prints every key of every section, and what it prints reads back as
    /// the same configuration; a relay token is only said to be set.
    @Test func effectiveSettingsShowEveryKeyAndReadBack() throws {
        var c = DaemonConfiguration(environment: env)
        try c.apply(configText: """
        [Store]
        ImmutableEntities=ledger stock.movement
        [API]
        SlowWatcherGraceSeconds=0.5
        [Transport shared]
        Kind=folder
        Location=/srv/sync
        Space=team
        """, file: "ferryd.conf")
        let text = c.effectiveSettings
        for (section, keys) in DaemonConfiguration.knownKeys where section != "Transport NAME" {
            #expect(text.contains("[\(section)]\n"), "[\(section)] missing: \(text)")
            for key in keys { #expect(text.contains("\n\(key)="), "\(key)= missing: \(text)") }
        }
        #expect(text.contains("[Transport shared]\nKind=folder\nLocation=/srv/sync\nSpace=team\n"), "\(text)")
        var again = DaemonConfiguration(environment: [:])
        try again.apply(configText: text, file: "printed")
        #expect(again.transports.map { [$0.name, $0.kind, $0.location, $0.space] } == c.transports.map { [$0.name, $0.kind, $0.location, $0.space] })
        again.transports = c.transports   // they differ only in the line each was declared on
        #expect(again == c, "\(text)")

        var withToken = c
        withToken.transports[0].token = "fr1_secret-token"
        #expect(!withToken.effectiveSettings.contains("fr1_secret"))
        #expect(withToken.effectiveSettings.contains("Token=(set; not shown)"))
    }

    @Test func appliesEveryKey() throws {
        var c = DaemonConfiguration(environment: env)
        try c.apply(configText: """
        [Daemon]
        StateDirectory=/var/lib/x
        Socket=/run/x.sock
        LogLevel=warning
        [Store]
        Durability=normal
        ImmutableEntities=stock.movement, ledger
        MaxPayloadBytes=2048
        MaxBatch=50
        ConflictHistory=3
        MaxDriftSeconds=60
        MaxAttachmentBytes=100
        AttachmentGraceSeconds=5
        [API]
        WatchBufferBytes=65536
        SlowWatcherGraceSeconds=0.5
        MaxConnections=10
        BusyPollMicroseconds=0
        """, file: "test.conf")
        #expect(c.stateDirectory == "/var/lib/x" && c.socketPath == "/run/x.sock" && c.logLevel == .warning)
        #expect(c.durability == .normal && c.immutableEntities == ["stock.movement", "ledger"])
        #expect(c.maxPayloadBytes == 2048 && c.maxBatch == 50 && c.conflictHistory == 3 && c.maxDriftSeconds == 60)
        #expect(c.maxAttachmentBytes == 100 && c.attachmentGraceSeconds == 5)
        #expect(c.watchBufferBytes == 65536 && c.slowWatcherGraceSeconds == 0.5 && c.maxConnections == 10)
        #expect(c.busyPollMicroseconds == 0)
        let store = c.storeConfiguration
        #expect(store.durability == .normal && store.limits.maxPayloadBytes == 2048 && store.maxDriftMillis == 60_000)
    }

    /// The shipped example config is valid and documents every key the daemon knows.
    @Test func shippedExampleDocumentsEveryKey() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("etc/ferryd.conf"), encoding: .utf8)
        var c = DaemonConfiguration(environment: env)
        try c.apply(configText: text, file: "etc/ferryd.conf")
        for (section, keys) in DaemonConfiguration.knownKeys {
            #expect(text.contains("[\(section)]"))
            for key in keys { #expect(text.contains("#\(key)="), "etc/ferryd.conf does not document \(key)=") }
        }
        // Uncommented, the defaults it shows are valid too.
        let uncommented = text.split(separator: "\n").map { line in
            line.hasPrefix("#") && line.contains("=") && !line.contains(" ") ? String(line.dropFirst()) : String(line)
        }.filter { !$0.hasSuffix("=") }.joined(separator: "\n")
        var d = DaemonConfiguration(environment: env)
        try d.apply(configText: uncommented, file: "uncommented")
        #expect(d == DaemonConfiguration(environment: env))
    }

    @Test(arguments: [
        ("[Daemon]\nLogLevel=loud", "LogLevel"),
        ("[Daemon]\nStateDirectory=relative/path", "absolute"),
        ("[Store]\nDurability=sometimes", "full or normal"),
        ("[Store]\nMaxBatch=0", "from 1"),
        ("[Store]\nMaxBatch=many", "whole number"),
        ("[Store]\nImmutableEntities=Bad!", "entity names"),
        ("[Store]\nColour=blue", "unknown key"),
        ("[Nope]\nA=b", "unknown section"),
    ])
    func rejectsBadValuesWithTheLine(_ text: String, _ expected: String) {
        var c = DaemonConfiguration(environment: env)
        let error = #expect(throws: DaemonConfiguration.Problem.self) { try c.apply(configText: text, file: "f.conf") }
        #expect(error?.line == 2)
        #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
    }
}

@Suite struct CommandLineOptionsTests {
    @Test func parsesFlags() throws {
        let o = try CommandLineOptions.parse(["--config", "/etc/f.conf", "--state-dir=/s", "--socket", "/r/s.sock", "--log-level", "debug", "--check-config"])
        #expect(o.configPath == "/etc/f.conf" && o.stateDirectory == "/s" && o.socketPath == "/r/s.sock")
        #expect(o.logLevel == .debug && o.checkConfig && !o.version)
        #expect(try CommandLineOptions.parse(["--version"]).version)
    }

    @Test(arguments: [["--bogus"], ["--config"], ["--log-level", "loud"], ["--socket", "--version"]])
    func rejectsBadCommandLines(_ args: [String]) {
        #expect(throws: CommandLineOptions.Problem.self) { try CommandLineOptions.parse(args) }
    }
}

@Suite struct TransportConfigurationTests {
    let env = ["HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000"]

    /// A transport added again under its name keeps its progress only while it points at the
    /// same place: same kind and the same relay URL or folder path; a new token is the same place.
    @Test func aTransportIsTheSamePlaceOnlyWithTheSameKindAndLocation() {
        let relay = TransportInfo(space: "private", name: "r", kind: "relay",
                                  config: TransportConfiguration.relay(url: URL(string: "http://a:1")!, token: "t1"))
        #expect(TransportConfiguration.samePlace(relay, kind: "relay",
                                                 config: TransportConfiguration.relay(url: URL(string: "http://a:1")!, token: "t2")))
        #expect(!TransportConfiguration.samePlace(relay, kind: "relay",
                                                  config: TransportConfiguration.relay(url: URL(string: "http://b:1")!, token: "t1")))
        #expect(!TransportConfiguration.samePlace(relay, kind: "folder", config: #"{"path":"/srv/f"}"#))
        let folder = TransportInfo(space: "private", name: "f", kind: "folder", config: #"{"path":"/srv/f"}"#)
        #expect(TransportConfiguration.samePlace(folder, kind: "folder", config: #"{"path":"/srv/f"}"#))
        #expect(!TransportConfiguration.samePlace(folder, kind: "folder", config: #"{"path":"/srv/g"}"#))
    }

    /// A relay's URL is kept in one spelling, so that another spelling of it (a trailing slash,
    /// upper case, the default port) is the same relay and does not start the transport over;
    /// one kept in another spelling before is the same place too. A path prefix stays.
    @Test func aRelayURLHasOneSpelling() throws {
        #expect(try TransportConfiguration.relayURL("HTTP://Relay.Example:80/").absoluteString == "http://relay.example")
        #expect(try TransportConfiguration.relayURL("https://relay.example:443/ferry/").absoluteString == "https://relay.example/ferry")
        #expect(try TransportConfiguration.relayURL("http://127.0.0.1:8470/").absoluteString == "http://127.0.0.1:8470")
        #expect(try TransportConfiguration.relayURL("https://relay.example:8443").absoluteString == "https://relay.example:8443")
        // No user or password: the token is the credential (one in the URL was another relay).
        #expect(throws: TransportConfiguration.Problem.self) { try TransportConfiguration.relayURL("http://user@relay.example") }
        #expect(throws: TransportConfiguration.Problem.self) { try TransportConfiguration.relayURL("http://user:pw@relay.example") }
        let kept = TransportInfo(space: "private", name: "r", kind: "relay", config: #"{"url":"http://127.0.0.1:8470/","token":"t"}"#)
        let again = TransportConfiguration.relay(url: try TransportConfiguration.relayURL("http://127.0.0.1:8470"), token: "t")
        #expect(TransportConfiguration.samePlace(kept, kind: "relay", config: again))
        let elsewhere = TransportConfiguration.relay(url: try TransportConfiguration.relayURL("http://127.0.0.1:8471"), token: "t")
        #expect(!TransportConfiguration.samePlace(kept, kind: "relay", config: elsewhere))
    }

    /// A folder inside the ferry-v1 directory Ferry keeps in a synced folder is refused with
    /// the synced folder to give instead; the synced folder itself is taken.
    @Test func aFolderInsideFerrysOwnDirectoryIsRefusedWithTheOneToGive() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-tc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let owner = root + "/ferry-v1/0123456789abcdef0123456789abcdef"
        try FileManager.default.createDirectory(atPath: owner + "/0123456789abcdef", withIntermediateDirectories: true)
        for inside in [root + "/ferry-v1", root + "/ferry-v1/", owner, owner + "/0123456789abcdef"] {
            let problem = #expect(throws: TransportConfiguration.Problem.self) { try TransportConfiguration.make(kind: "folder", location: inside) }
            #expect(problem?.parameter == "location")
            #expect(problem?.message.hasSuffix("give the synced folder itself: \(root)") == true, "\(String(describing: problem))")
        }
        // A symlink to it is inside it all the same.
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: owner)
        let linked = #expect(throws: TransportConfiguration.Problem.self) { try TransportConfiguration.make(kind: "folder", location: root + "/link") }
        #expect(linked?.message.contains("inside the ferry-v1 directory") == true, "\(String(describing: linked))")
        #expect(try TransportConfiguration.make(kind: "folder", location: root) == JSONWriter.string(.object(["path": .string(root)])))
    }

    @Test func transportSectionsAreRead() throws {
        var c = DaemonConfiguration(environment: env)
        try c.apply(configText: """
            [Sync]
            PollIntervalSeconds=7
            [Transport laptop]
            Kind=folder
            Location=/srv/sync/ferry
            [Transport team-folder]
            Kind=folder
            Location=/srv/team
            Space=team
            """, file: "t.conf")
        #expect(c.pollIntervalSeconds == 7)
        #expect(c.transports.map(\.name) == ["laptop", "team-folder"])
        #expect(c.transports[1].space == "team" && c.transports[0].space == "private")
        #expect(c.syncOptions.pollInterval == .seconds(7))
    }

    @Test(arguments: [
        ("[Transport Bad!]\nKind=folder", "the name is"),
        ("[Transport t]\nKind=folder", "needs Location="),
        ("[Transport t]\nLocation=/x", "needs Kind="),
        ("[Transport t]\nKind=folder\nLocation=relative", "absolute"),
        ("[Transport t]\nColour=blue", "unknown key"),
        ("[Sync]\nPollIntervalSeconds=0", "from 1"),
        ("[Transport t]\nKind=ftp\nLocation=/x", "Kind= is folder or relay"),
        ("[Transport t]\nKind=folder\nLocation=/x\n[Transport t]\nKind=folder\nLocation=/y", "t.conf:4: [Transport t] appears twice (lines 1 and 4)"),
        ("[Transport t]\nKind=relay\nLocation=https://r.example", "t.conf:1: [Transport t] of kind relay needs Token="),
        ("[Sync]\nPollIntervalSeconds=3\n[Transport t]\nKind=folder\nLocation=/x\nToken=fr1_AAAAAAAAAAAAAAAAAAAAb-_9ccccccccccccccccccc", "t.conf:6: [Transport t]: Token= is for a relay"),
        ("[Transport t]\nKind=relay\nLocation=https://r.example\nToken=fr1_wrongwrongwrong", "t.conf:4: Token= is not a relay token"),
        ("[Transport t]\nKind=relay\nLocation=https://r.example\nToken=fr1_AAAAAAAAAAAAAAAAAAAAb-_9cccccccccccccccccc!", "t.conf:4: Token= is not a relay token"),
        ("[Transport t]\nSpace=team\nLocation=/x", "t.conf:1: [Transport t] needs Kind="),
    ])
    func badTransportSectionsSayWhatIsWrong(_ text: String, _ expected: String) {
        var c = DaemonConfiguration(environment: env)
        #expect {
            try c.apply(configText: text, file: "t.conf")
        } throws: { error in
            "\(error)".contains(expected)
        }
    }
}

@Suite struct EngineStateTests {
    func health(_ state: String, failing: [String: String] = [:]) -> TransportHealth {
        var h = TransportHealth()
        h.state = state
        for (loop, text) in failing { h.failing[loop] = (text, 0) }
        return h
    }

    @Test func theEngineStateSummarizesItsTransports() {
        #expect(EngineState.summary([], paused: false) == "idle")
        #expect(EngineState.summary([health("idle")], paused: true) == "paused")
        #expect(EngineState.summary([health("idle"), health("pulling")], paused: false) == "syncing")
        // A push failing while the pull loop shows its own state still counts.
        #expect(EngineState.summary([health("pulling", failing: ["push": "quota: full"])], paused: false) == "backoff")
        #expect(EngineState.summary([health("backoff"), health("failed")], paused: false) == "failed")
        // A push waiting long for its answer is a problem to show, not a failure to back off from.
        var slow = health("pushing")
        slow.slowPush = "m has not answered a push for 12 s; still waiting"
        #expect(slow.problem == "push: m has not answered a push for 12 s; still waiting")
        #expect(EngineState.summary([slow], paused: false) == "syncing")
    }

    @Test func systemdStatusCountsOnlyWhatATransportWaitsFor() {
        #expect(EngineLoop.status(state: "idle", outbox: OutboxCounts(pending: 0, withoutTransport: 0)) == "idle, nothing pending")
        #expect(EngineLoop.status(state: "backoff", outbox: OutboxCounts(pending: 3, withoutTransport: 0)) == "backoff, 3 changes pending")
        #expect(EngineLoop.status(state: "idle", outbox: OutboxCounts(pending: 0, withoutTransport: 1))
            == "idle, nothing pending, 1 change in spaces with no transport")
    }

    /// Counts past the outbox counts' limit read as "more than" the limit; figures are grouped.
    @Test func systemdStatusSaysMoreThanTheLimitPastIt() {
        #expect(EngineLoop.status(state: "syncing", outbox: OutboxCounts(pending: 100_001, withoutTransport: 0))
            == "syncing, more than 100,000 changes pending")
        #expect(EngineLoop.status(state: "idle", outbox: OutboxCounts(pending: 100_000, withoutTransport: 1_234))
            == "idle, 100,000 changes pending, 1,234 changes in spaces with no transport")
        #expect(EngineLoop.status(state: "idle", outbox: OutboxCounts(pending: 0, withoutTransport: 6, limit: 5))
            == "idle, nothing pending, more than 5 changes in spaces with no transport")
        #expect([0, 7, 999, 1_000, 65_536, 1_234_567, -4_321].map(EngineLoop.grouped)
            == ["0", "7", "999", "1,000", "65,536", "1,234,567", "-4,321"])
    }
}

/// The highest `MaxPayloadBytes` still syncs: a record that large, with the most attachments,
/// the longest entity and an id that escapes to the most bytes, seals into one envelope that
/// every device opens; one byte more is a configuration error.
@Suite struct PayloadLimitTests {
    @Test func theLargestPayloadAllowedFitsInOneEnvelope() throws {
        let limits = RecordLimits(maxPayloadBytes: DaemonConfiguration.maxPayloadLimit)
        let text = "{\"t\":\"" + String(repeating: "x", count: DaemonConfiguration.maxPayloadLimit - 8) + "\"}"
        #expect(text.utf8.count == DaemonConfiguration.maxPayloadLimit)
        let attachments = (0..<limits.maxAttachments).map { String(format: "%064x", $0) }
        let version = RecordVersion(entity: "e" + String(repeating: "n", count: 63), id: String(repeating: "\"", count: Names.maxIDLength),
                                    hlc: Stamp(millis: 1, counter: 0, node: NodeID(1)), deleted: false, payload: text,
                                    attachments: attachments)
        try version.validate(limits: limits)
        let keys = OwnerKeys.generate()
        let envelope = EnvelopeSealer(keys: keys, device: NodeID(1)).seal(version)
        #expect(envelope.body.count <= Envelope.maxBodyBytes, "\(envelope.body.count) > \(Envelope.maxBodyBytes)")
        let opened = try EnvelopeSealer(keys: keys, device: NodeID(2)).open(envelope, limits: limits)
        #expect(opened.payload == text && opened.attachments == attachments)

        var config = DaemonConfiguration(environment: [:])
        #expect(throws: DaemonConfiguration.Problem.self) {
            try config.apply(configText: "[Store]\nMaxPayloadBytes=\(DaemonConfiguration.maxPayloadLimit + 1)\n", file: "t.conf")
        }
        try config.apply(configText: "[Store]\nMaxPayloadBytes=\(DaemonConfiguration.maxPayloadLimit)\n", file: "t.conf")
        #expect(config.maxPayloadBytes == DaemonConfiguration.maxPayloadLimit)
    }
}
