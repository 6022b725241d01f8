import FerryJSON
import FerryModel
import FerryStore
import FerrySync
import Foundation

/// Turns what a user gives for a transport (a kind and a location) into the configuration the
/// store keeps, and a kept configuration into a running transport: the one place that knows
/// the transport kinds.
enum TransportConfiguration {
    /// A location the kind cannot use.
    struct Problem: Error, Sendable {
        var parameter: String
        var message: String
        /// The relay could not be reached or talked to (not the argument's fault): the add
        /// fails with `RelayFailure`, not `InvalidArgument`.
        var unreachable = false
    }

    static let kinds = ["folder", "relay"]

    /// The configuration text of a new transport. With `mustExist` false, a folder that does not
    /// exist (yet) is taken: the transport is unavailable until it is there (a folder declared in
    /// ferryd.conf on a file system mounted after ferryd starts).
    static func make(kind: String, location: String, mustExist: Bool = true) throws(Problem) -> String {
        switch kind {
        case "folder":
            guard location.hasPrefix("/"), location.utf8.count < 4096, !location.utf8.contains(0) else {
                throw Problem(parameter: "location", message: "a folder transport needs the absolute path of a directory (ferryctl resolves relative ones)")
            }
            // One spelling per directory ("/a/b/", "/a/./b" and "/a/c/../b" are "/a/b"), so two
            // transports can be told to be the same place.
            let location = URL(fileURLWithPath: location).standardizedFileURL.path
            guard location.hasPrefix("/") else {
                throw Problem(parameter: "location", message: "a folder transport needs the absolute path of a directory (ferryctl resolves relative ones)")
            }
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: location, isDirectory: &isDirectory)
            guard (exists && isDirectory.boolValue) || (!exists && !mustExist) else {
                throw Problem(parameter: "location", message: "\(location) is not an existing directory: create it (or start the sync tool that provides it) first")
            }
            // A folder ferryd cannot write is still taken: it reads what the other devices wrote
            // (a receive-only copy), and its status says it is read-only and how to allow it.
            // Ferry's own directories inside a synced folder (PATH/ferry-v1/<owner>/<device>):
            // a transport there would write a second layout below the first, which no device reads.
            // Through symlinks too: a link to a ferry-v1 directory is inside it all the same.
            let parts = URL(fileURLWithPath: location).resolvingSymlinksInPath().path.split(separator: "/")
            if let layout = parts.lastIndex(of: "ferry-v1"), parts.count - layout <= 4 {
                let folder = "/" + parts[..<layout].joined(separator: "/")
                throw Problem(parameter: "location", message: "\(location) is inside the ferry-v1 directory Ferry keeps in a synced folder; "
                    + "give the synced folder itself: \(folder)")
            }
            return JSONWriter.string(.object(["path": .string(location)]))
        case "relay":
            _ = try relayURL(location)
            throw Problem(parameter: "token", message: "a relay transport needs --code CODE (from 'ferryctl relay pair' on a paired device) or --token TOKEN")
        default:
            throw Problem(parameter: "kind", message: "unknown transport kind \"\(kind.prefix(40))\"; known kinds: \(kinds.joined(separator: ", "))")
        }
    }

    /// A relay URL: http or https, a host, nothing after the path; in one spelling per relay
    /// (`canonicalRelayURL`).
    static func relayURL(_ location: String) throws(Problem) -> URL {
        guard location.utf8.count < 2048, let url = URL(string: location), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", url.host != nil, url.query == nil, url.fragment == nil,
              let canonical = canonicalRelayURL(url) else {
            throw Problem(parameter: "location", message: "a relay transport needs the relay's URL, such as https://relay.example.org")
        }
        guard url.user == nil && url.password == nil else {
            throw Problem(parameter: "location", message: "a relay's URL has no user or password (the token is what a device shows "
                + "the relay): give it as https://HOST[:PORT][/PATH]")
        }
        return canonical
    }

    /// `url` as Ferry keeps a relay's URL: scheme and host in lower case, no default port (80
    /// for http, 443 for https), no trailing slash, so that "http://Relay:80/" and
    /// "http://relay" are one relay (a second spelling started the transport over, sending
    /// everything again). A path (a relay behind a reverse proxy's prefix) stays as given.
    static func canonicalRelayURL(_ url: URL) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.scheme = components.scheme?.lowercased()
        components.host = components.host?.lowercased()
        if (components.scheme == "http" && components.port == 80) || (components.scheme == "https" && components.port == 443) {
            components.port = nil
        }
        while components.path.hasSuffix("/") { components.path.removeLast() }
        return components.url
    }

    /// The configuration text of a relay transport with its token.
    static func relay(url: URL, token: String, tokenID: String? = nil) -> String {
        var o: [String: JSONValue] = ["url": .string(url.absoluteString), "token": .string(token)]
        if let tokenID { o["tokenId"] = .string(tokenID) }
        return JSONWriter.string(.object(o))
    }

    /// The relay's id of a relay transport's token, when it was got by pairing.
    static func tokenID(of info: TransportInfo) -> String? {
        guard let value = try? JSONParser.parse(info.config), case .object(let o) = value else { return nil }
        return o["tokenId"]?.stringValue
    }

    /// The token of a relay transport's configuration.
    static func token(of info: TransportInfo) -> String? {
        guard let value = try? JSONParser.parse(info.config), case .object(let o) = value else { return nil }
        return o["token"]?.stringValue
    }

    /// The folder path or URL of a configured transport.
    static func location(of info: TransportInfo) -> String? { location(ofConfig: info.config) }

    private static func location(ofConfig config: String) -> String? {
        guard let value = try? JSONParser.parse(config), case .object(let o) = value else { return nil }
        return o["path"]?.stringValue ?? o["url"]?.stringValue
    }

    /// Whether a new configuration of an existing transport points at the same place (the same
    /// kind and folder or relay URL; a new token is still the same place). When it does not,
    /// the transport starts over: what it had sent and read belongs to the old place.
    /// A folder is the same place through a symbolic link too.
    static func samePlace(_ existing: TransportInfo, kind: String, config: String) -> Bool {
        guard existing.kind == kind, let old = location(of: existing), let new = location(ofConfig: config) else { return false }
        if old == new { return true }
        if kind == "relay" {
            // A relay kept before URLs were made canonical may be spelled another way.
            guard let a = URL(string: old).flatMap(canonicalRelayURL), let b = URL(string: new).flatMap(canonicalRelayURL) else { return false }
            return a == b
        }
        guard kind == "folder" else { return false }
        return URL(fileURLWithPath: old).resolvingSymlinksInPath().path == URL(fileURLWithPath: new).resolvingSymlinksInPath().path
    }

    /// Builds the transport a kept configuration describes. A folder transport keeps what it
    /// remembers about its own files in `store` (progress values of its space); a relay
    /// transport gives up a request after `relayTimeout` without progress.
    static func transport(_ info: TransportInfo, keys: OwnerKeys, device: NodeID, store: Store,
                          relayTimeout: Duration = RelayTransport.defaultTimeout) throws(TransportFailure) -> any Transport {
        switch info.kind {
        case "folder":
            guard let path = location(of: info) else { throw .rejected("the folder transport \(info.name) has no path; add it again") }
            return FolderTransport(name: info.name, path: path, owner: keys.owner, device: device, keeper: folderKeeper(store, space: info.space))
        case "relay":
            guard let location = location(of: info), let url = URL(string: location), let token = token(of: info) else {
                throw .rejected("the relay transport \(info.name) has no URL or token; add it again")
            }
            return RelayTransport(name: info.name, url: url, owner: keys.owner, token: token, device: device, requestTimeout: relayTimeout)
        default:
            throw .rejected("unknown transport kind \"\(info.kind)\" (this ferryd knows \(kinds.joined(separator: ", "))); remove it or update ferryd")
        }
    }

    /// A folder transport's keeper: progress values of `space` (keys `folder-writer:...`, which
    /// starting the transport over or removing it leaves alone).
    static func folderKeeper(_ store: Store, space: String) -> FolderTransport.StateKeeper {
        FolderTransport.StateKeeper(
            load: { key throws(TransportFailure) in
                do { return try store.progress(space: space, key: key) } catch {
                    throw .unavailable("reading what the folder transport remembers (\(key)) failed: \(error)")
                }
            },
            save: { key, value throws(TransportFailure) in
                do { try store.setProgress(space: space, key: key, value: value) } catch {
                    throw .unavailable("saving what the folder transport remembers (\(key)) failed: \(error)")
                }
            })
    }
}
