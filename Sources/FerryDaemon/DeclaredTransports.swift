import FerryModel
import FerryStore
import Foundation

/// Makes the transports declared in ferryd.conf (`[Transport NAME]`) exist in the store. A
/// transport the file declared before and no longer does is removed; transports added with
/// `ferryctl transport add` are left alone.
enum DeclaredTransports {
    static let setting = "config-transports"

    /// Whether the config file declared transport `name` of `space` when it was last applied
    /// (so a reload brings it back if it is removed any other way).
    static func isDeclared(space: String, name: String, in store: Store) throws(FerryError) -> Bool {
        let declared = try store.setting(setting)?.split(separator: "\n").map(String.init) ?? []
        return declared.contains(space + "\u{1}" + name)
    }

    /// The store's configuration of a declared transport. A folder that does not exist yet is
    /// taken (`missingFolder` says so): the transport waits for it, unavailable, as one added
    /// with ferryctl does when its folder goes away.
    /// - Throws: why it cannot be used (a relative path, a URL that is not one).
    static func configuration(of t: DaemonConfiguration.DeclaredTransport) throws(TransportConfiguration.Problem) -> String {
        if t.kind == "relay", let token = t.token {
            return TransportConfiguration.relay(url: try TransportConfiguration.relayURL(t.location), token: token)
        }
        return try TransportConfiguration.make(kind: t.kind, location: t.location, mustExist: false)
    }

    /// For a declared folder transport whose directory is not there: what to tell the user.
    static func missingFolder(_ t: DaemonConfiguration.DeclaredTransport) -> String? {
        guard t.kind == "folder" else { return nil }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: t.location, isDirectory: &isDirectory), isDirectory.boolValue { return nil }
        return "\(t.location) is not an existing directory (yet): the transport waits for it, unavailable until it is there; "
            + "create it, mount it or start the sync tool that provides it"
    }

    /// Makes the store's transports what the file declares. A section that cannot be used as
    /// written (a bad URL, another transport of the space at the same place) is logged; a
    /// transport it declared before keeps its previous configuration then, instead of being
    /// removed.
    static func apply(_ declared: [DaemonConfiguration.DeclaredTransport], to store: Store, logger: Logger) {
        let previous = Set(((try? store.setting(setting)) ?? nil)?.split(separator: "\n").map(String.init) ?? [])
        let declaredNow = Set(declared.map { $0.space + "\u{1}" + $0.name })
        var now = Set<String>()
        for t in declared {
            let key = t.space + "\u{1}" + t.name
            // Kept as it was when declared before and still there.
            func keep(_ why: String) {
                let existing = (try? store.transports(space: t.space))?.contains { $0.name == t.name } ?? false
                if previous.contains(key) && existing {
                    now.insert(key)
                    logger.error("ferryd.conf: [Transport \(t.name)] is not used as written: \(why); transport \(t.name) keeps its previous "
                        + "configuration until the section is fixed and ferryd reloaded", ["transport": t.name])
                } else {
                    logger.error("ferryd.conf: [Transport \(t.name)] is not used: \(why)", ["transport": t.name])
                }
            }
            let config: String
            do {
                config = try configuration(of: t)
            } catch {
                keep(error.message)
                continue
            }
            if let missing = missingFolder(t) { logger.warning("ferryd.conf: [Transport \(t.name)]: \(missing)", ["transport": t.name]) }
            do {
                let transports = try store.transports(space: t.space)
                // Two transports of one space at one place would write the same files as one
                // device; one the file stops declaring now does not count (a renamed section).
                if let twin = transports.first(where: { other in
                    other.name != t.name && !(previous.contains(t.space + "\u{1}" + other.name) && !declaredNow.contains(t.space + "\u{1}" + other.name))
                        && TransportConfiguration.samePlace(other, kind: t.kind, config: config)
                }) {
                    keep("transport \(twin.name) of space \(t.space) already syncs through \(TransportConfiguration.location(of: twin) ?? "that place")")
                    continue
                }
                let existing = transports.first { $0.name == t.name }
                if existing != nil && !previous.contains(key) {
                    logger.notice("ferryd.conf: [Transport \(t.name)] now declares transport \(t.name) of space \(t.space), which was added "
                        + "with ferryctl: from now on the file decides, and removing the section removes the transport", ["transport": t.name])
                }
                if existing?.kind != t.kind || existing?.config != config {
                    let startOver = existing.map { !TransportConfiguration.samePlace($0, kind: t.kind, config: config) } ?? true
                    try store.addTransport(space: t.space, name: t.name, kind: t.kind, config: config, startOver: startOver)
                    logger.info("ferryd.conf: transport \(t.name) (\(t.kind)) of space \(t.space) configured", ["transport": t.name, "space": t.space])
                }
                now.insert(key)
            } catch {
                keep("\(error)")
            }
        }
        for gone in previous.subtracting(now) {
            let parts = gone.split(separator: "\u{1}").map(String.init)
            guard parts.count == 2 else { continue }
            do {
                try store.removeTransport(space: parts[0], name: parts[1])
                logger.info("ferryd.conf no longer declares transport \(parts[1]) of space \(parts[0]): removed", ["transport": parts[1]])
            } catch {
                logger.warning("could not remove transport \(parts[1]) of space \(parts[0]): \(error)")
            }
        }
        try? store.setSetting(setting, now.isEmpty ? nil : now.sorted().joined(separator: "\n"))
    }
}
