import FerryRelay
import FerrySync
import Foundation

/// `ferry-relay admin ...`: owners, tokens and quotas, straight on the storage (the state
/// directory's SQLite file, or the PostgreSQL database).
enum AdminCommand {
    /// Admin cannot do what it was asked (exit status 1, the message printed).
    struct AdminFailure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// - Parameter file: the configuration file read, if any.
    static func run(_ arguments: [String], configuration: RelayConfiguration, file: String?) throws {
        guard let command = arguments.first else { throw UsageError(message: "admin needs a command") }
        var rest = Array(arguments.dropFirst())
        // A SQLite database that is not there yet: with no configuration file, admin would make
        // one at the default place, which is not the running relay's (its tokens refused there).
        let newDatabase = configuration.storage == .sqlite && !FileManager.default.fileExists(atPath: configuration.databasePath)
        if newDatabase && file == nil {
            throw AdminFailure(message: "there is no relay database at \(configuration.databasePath) (the default StateDirectory=), and no "
                + "configuration file (/etc/ferry-relay/ferry-relay.conf is not there): pass the --config FILE the relay serves with")
        }
        let storage = try RelayBackend.openStorage(configuration)
        if newDatabase {
            FileHandle.standardError.write(Data(("ferry-relay: made a new relay database at \(configuration.databasePath), the StateDirectory= "
                + "in effect with \(file!); a relay serving with this configuration uses it\n").utf8))
        }
        let now = RelayService.systemMillis()
        /// Fails with "not found" (exit 3) for an owner the relay does not have.
        func requireOwner(_ owner: OwnerID) throws {
            guard try storage.usage(owner) != nil else {
                throw NotFoundError(message: "no owner \(owner) on this relay; create it with 'ferry-relay admin create-owner --owner \(owner)'")
            }
        }
        switch command {
        case "create-owner":
            let ownerText = try option("--owner", &rest)
            let quota = try option("--quota", &rest, required: false).map { try bytes($0) }
            let device = try option("--device", &rest, required: false) ?? "admin"
            guard rest.isEmpty else { throw UsageError(message: "unexpected arguments: \(rest.joined(separator: " "))") }
            let owner = try ownerID(ownerText)
            guard DeviceName.isValidName(device) else { throw UsageError(message: "--device: 1 to 64 bytes, no control characters") }
            let existed = try storage.usage(owner) != nil
            try storage.createOwner(owner, quotaBytes: quota, now: now)
            if existed {
                // Another token for an owner the relay has: its quota stays as it is.
                FileHandle.standardError.write(Data(("ferry-relay: owner \(owner) exists already: this adds a token for it"
                    + (quota != nil ? "; its quota is unchanged (change it with 'ferry-relay admin set-quota \(owner) BYTES')" : "") + "\n").utf8))
            }
            let token = AccessToken()
            let id = TokenID.make()
            try storage.addToken(NewToken(id: id, hash: token.hash, owner: owner, role: .owner, device: device), now: now)
            print("owner: \(owner)")
            print("token id: \(id)")
            print("token: \(token.text)")
            print("(the token is shown only now; keep it secret)")
        case "tokens":
            guard rest.count == 1 else { throw UsageError(message: "tokens takes an owner id") }
            let owner = try ownerID(rest[0])
            try requireOwner(owner)
            for t in try storage.tokens(of: owner) {
                let last = t.lastUsedAt.map { iso($0) } ?? "never"
                print("\(t.id)\t\(t.role.rawValue)\tcreated \(iso(t.createdAt))\tlast used \(last)\t\(t.device)")
            }
        case "revoke":
            guard rest.count == 2 else { throw UsageError(message: "revoke takes an owner id and a token id") }
            let owner = try ownerID(rest[0])
            guard TokenID.isValid(rest[1]) else { throw UsageError(message: "a token id is 16 lowercase hex digits") }
            guard try storage.revokeToken(rest[1], owner: owner, now: now) else {
                try requireOwner(owner)
                throw NotFoundError(message: "no live token \(rest[1]) on owner \(owner); 'ferry-relay admin tokens \(owner)' lists them")
            }
            print("revoked \(rest[1])")
        case "set-quota":
            guard rest.count == 2 else { throw UsageError(message: "set-quota takes an owner id and a number of bytes (or default)") }
            let owner = try ownerID(rest[0])
            let quota = rest[1] == "default" ? nil : try bytes(rest[1])
            try requireOwner(owner)
            try storage.setQuota(owner, quotaBytes: quota)
            print("quota of \(owner): \(quota.map(String.init) ?? "default (\(configuration.defaultQuotaBytes))")")
        default:
            throw UsageError(message: "unknown admin command \(command)")
        }
    }

    static func option(_ name: String, _ args: inout [String], required: Bool = true) throws -> String? {
        guard let i = args.firstIndex(of: name) else {
            if required { throw UsageError(message: "\(name) is required") }
            return nil
        }
        guard i + 1 < args.count else { throw UsageError(message: "\(name) needs a value") }
        let value = args[i + 1]
        args.removeSubrange(i...(i + 1))
        return value
    }

    static func option(_ name: String, _ args: inout [String]) throws -> String {
        try option(name, &args, required: true)!
    }

    static func ownerID(_ text: String) throws -> OwnerID {
        guard text.utf8.count == 32, text == text.lowercased(), let id = OwnerID(hex: text) else {
            throw UsageError(message: "an owner id is 32 lowercase hex digits")
        }
        return id
    }

    static func bytes(_ text: String) throws -> Int64 {
        guard let n = Int64(text), n >= 0 else { throw UsageError(message: "expected a number of bytes, got \(text)") }
        return n
    }

    static func iso(_ millis: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }
}
