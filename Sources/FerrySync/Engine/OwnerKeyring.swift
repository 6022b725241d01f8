import FerryCrypto
import FerryModel
import FerryStore
import Synchronization

/// The owner keys of this device's spaces: made on first use, kept in the store's engine state
/// (on this device only), and replaced by `restore` from a recovery phrase. The one owner of
/// key material in ferryd; nothing here is ever logged.
public final class OwnerKeyring: Sendable {
    private let store: Store
    private let cache = Mutex<[String: OwnerKeys]>([:])

    public init(store: Store) {
        self.store = store
    }

    static func settingName(_ space: String) -> String { "owner-key:" + space }

    /// The keys of `space`, made (and the space's owner id set) when it has none yet.
    /// - Throws: `spaceNotFound`, `storage`.
    public func keys(for space: String) throws(FerryError) -> OwnerKeys {
        // Loading and restoring hold the lock throughout, so a load that read the old key
        // cannot overwrite a restore that happened meanwhile.
        try cache.withLock { (cache: inout [String: OwnerKeys]) throws(FerryError) -> OwnerKeys in
            if let keys = cache[space] { return keys }
            guard let info = store.spaces().first(where: { $0.name == space }) else { throw .spaceNotFound(space.clipped(to: 80)) }
            let keys: OwnerKeys
            if let hex = try store.setting(Self.settingName(space)), let bytes = Self.bytes(hex: hex),
               let stored = try? OwnerKeys(rootKey: bytes) {
                keys = stored
            } else {
                keys = OwnerKeys.generate()
                try store.setSetting(Self.settingName(space), Hex.encode(keys.rootKey))
            }
            if info.ownerID != keys.owner.description {
                try store.setOwner(space: space, ownerID: keys.owner.description)
            }
            cache[space] = keys
            return keys
        }
    }

    /// Makes `space` belong to the owner of `keys` (a restored recovery phrase). The caller
    /// requeues the space's records and restarts its transports.
    public func restore(space: String, keys: OwnerKeys) throws(FerryError) {
        try cache.withLock { (cache: inout [String: OwnerKeys]) throws(FerryError) in
            guard store.spaces().contains(where: { $0.name == space }) else { throw .spaceNotFound(space.clipped(to: 80)) }
            try store.setSetting(Self.settingName(space), Hex.encode(keys.rootKey))
            try store.setOwner(space: space, ownerID: keys.owner.description)
            cache[space] = keys
        }
    }

    /// The space whose owner is `owner`, if any.
    public func space(ownedBy owner: OwnerID) throws(FerryError) -> String? {
        for info in store.spaces() {
            if try keys(for: info.name).owner == owner { return info.name }
        }
        return nil
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < utf8.count {
            guard let v = UInt8(String(decoding: utf8[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            out.append(v)
            i += 2
        }
        return out
    }
}
