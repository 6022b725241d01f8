import FerryModel
import Foundation

/// How a `Store` is opened. Every seam that tests replace (clock, randomness) is injected here.
public struct StoreConfiguration: Sendable {
    /// How hard a commit works to survive a power loss.
    public enum Durability: String, Sendable {
        /// `synchronous=FULL`: every acknowledged write survives a crash and a power loss.
        case full
        /// `synchronous=NORMAL`: every acknowledged write survives a process crash (`kill -9`);
        /// the last commits before a power loss or kernel panic may be lost, never corrupted.
        case normal
    }

    /// The directory holding `ferry.db` and `attachments/`. Created (0700) if missing.
    public var directory: String
    public var durability: Durability = .full
    /// Entity kinds whose records keep their first version (ledger entries).
    public var immutableEntities: Set<String> = []
    public var limits: RecordLimits = .default
    /// The most records one batch may hold.
    public var maxBatch: Int = 10_000
    /// Losing versions kept per record.
    public var conflictHistory: Int = 10
    /// The drift guard of the clock, in milliseconds (default 5 minutes).
    public var maxDriftMillis: Int64 = 300_000
    /// The largest attachment accepted, in bytes (default 1 GiB).
    public var maxAttachmentBytes: Int = 1 << 30
    /// An attachment nothing references is kept this long after its last upload, so that an app
    /// can upload it before writing the record that references it.
    public var attachmentGraceSeconds: Int64 = 3600
    /// SQLite page cache per connection, in KiB.
    public var cacheKiB: Int = 16 * 1024

    /// Milliseconds since the epoch.
    public var wallClock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    /// A fresh record id (default: an upper-case UUID v7 from `RecordIDGenerator.shared`).
    public var newID: @Sendable () -> String = { RecordIDGenerator.shared.next() }
    /// A random 64-bit value, used once for the node id of a new store.
    public var random64: @Sendable () -> UInt64 = { UInt64.random(in: 1 ... .max) }
    /// This machine's id (default: `/etc/machine-id`; nil where there is none). A store opened
    /// on another machine than the last time takes a new node id (see `Store.replacedNodeID`).
    public var machineID: @Sendable () -> String? = { StoreConfiguration.systemMachineID() }

    public init(directory: String) {
        self.directory = directory
    }

    var databasePath: String { directory + "/ferry.db" }
    var attachmentsPath: String { directory + "/attachments" }

    /// The contents of `/etc/machine-id` (32 hex digits), or nil.
    public static func systemMachineID() -> String? {
        guard let data = FileManager.default.contents(atPath: "/etc/machine-id"), data.count < 256 else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty || text == "uninitialized" ? nil : text
    }
}
