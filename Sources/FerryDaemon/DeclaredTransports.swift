import FerryModel
import FerryStore

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

    /// The store's configuration of a declared transport.
    /// - Throws: why it cannot be used (a folder that does not exist, a URL that is not one).
    static func configuration(of t: DaemonConfiguration.DeclaredTransport) throws(TransportConfiguration.Problem) -> String {
        if t.kind == "relay", let token = t.token {
            return TransportConfiguration.relay(url: try TransportConfiguration.relayURL(t.location), token: token)
        }
        return try TransportConfiguration.make(kind: t.kind, location: t.location)
    }

    static func apply(_ declared: [DaemonConfiguration.DeclaredTransport], to store: Store, logger: Logger) {
        let previous = Set(((try? store.setting(setting)) ?? nil)?.split(separator: "\n").map(String.init) ?? [])
        var now = Set<String>()
        for t in declared {
            let config: String
            do {
                config = try configuration(of: t)
            } catch {
                logger.error("ferryd.conf: [Transport \(t.name)] is not used: \(error.message)", ["transport": t.name])
                continue
            }
            do {
                let existing = try store.transports(space: t.space).first { $0.name == t.name }
                if existing?.kind != t.kind || existing?.config != config {
                    let startOver = existing.map { !TransportConfiguration.samePlace($0, kind: t.kind, config: config) } ?? true
                    try store.addTransport(space: t.space, name: t.name, kind: t.kind, config: config, startOver: startOver)
                    logger.info("ferryd.conf: transport \(t.name) (\(t.kind)) of space \(t.space) configured", ["transport": t.name, "space": t.space])
                }
                now.insert(t.space + "\u{1}" + t.name)
            } catch {
                logger.error("ferryd.conf: [Transport \(t.name)] is not used: \(error)", ["transport": t.name])
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
