import FerryCrypto
import FerryModel

/// An owner's keys: the 32-byte root key and everything derived from it.
///
/// Every key that seals or names data is a `crypto_kdf_derive_from_key` subkey of the root key in
/// the context `ferry-v1` (see docs/protocol.md "Envelopes and keys"), so the root key alone (or
/// its recovery phrase) restores the same owner id, stream ids, blob keys and the ability to
/// open everything. The derived keys stay inside this module and are wiped when the last copy of
/// these keys goes away. `description`, `debugDescription` and the mirror show only the owner id.
public struct OwnerKeys: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The size of a root key.
    public static let rootKeyBytes = 32
    /// The KDF context of every subkey.
    static let context = "ferry-v1"

    /// The KDF subkey ids. Never reuse or renumber one: they name keys of stored data.
    enum Subkey: UInt64 {
        /// Its first 16 bytes are the owner id.
        case ownerID = 1
        /// Seals envelope bodies (XChaCha20-Poly1305).
        case data = 2
        /// Keys the BLAKE2b of stream ids and event ids.
        case hash = 3
        /// Keys the BLAKE2b that names blobs (blob keys).
        case blobName = 4
        /// Seals attachment blobs (secretstream).
        case blobSeal = 5
    }

    /// The root key. Whoever holds it can read and write all of the owner's data.
    public let rootKey: [UInt8]
    /// The owner's public id: the first 16 bytes of KDF subkey 1.
    public let owner: OwnerID

    let dataKey: SecretKey
    let hashKey: SecretKey
    let blobNameKey: SecretKey
    let blobSealKey: SecretKey

    /// Keys from a root key, e.g. one read back from storage or a recovery phrase.
    /// - Throws: `OwnerKeyError.wrongLength` unless `rootKey` is 32 bytes.
    public init(rootKey: [UInt8]) throws(OwnerKeyError) {
        guard rootKey.count == Self.rootKeyBytes else { throw .wrongLength(actual: rootKey.count) }
        self.rootKey = rootKey
        let root = SecretKey(bytes: rootKey)
        func derive(_ subkey: Subkey) -> SecretKey {
            KeyDerivation.derive(from: root, id: subkey.rawValue, context: Self.context, length: 32)
        }
        owner = ID128(bytes: derive(.ownerID).bytes)
        dataKey = derive(.data)
        hashKey = derive(.hash)
        blobNameKey = derive(.blobName)
        blobSealKey = derive(.blobSeal)
    }

    /// A new owner with a random root key.
    public static func generate() -> OwnerKeys {
        // 32 random bytes are always a valid root key.
        try! OwnerKeys(rootKey: SecureRandom.bytes(rootKeyBytes))
    }

    /// The pseudonymous id of the record `(entity, id)`: the first 16 bytes of the keyed
    /// BLAKE2b-256 (hash subkey) of `0x01 | u32 len | entity | u32 len | id` (UTF-8, big-endian
    /// lengths). Deterministic per owner; unlinkable to the record without the keys.
    public func streamID(entity: String, id: String) -> StreamID {
        var message: [UInt8] = []
        message.reserveCapacity(9 + entity.utf8.count + id.utf8.count)
        message.append(0x01)
        Self.appendLengthPrefixed(entity, to: &message)
        Self.appendLengthPrefixed(id, to: &message)
        let (high, low) = KeyedHash.prefix128(of: message, key: hashKey)
        return ID128(high: high, low: low)
    }

    /// The id of the version of `stream` stamped `stamp`: the first 16 bytes of the keyed
    /// BLAKE2b-256 (hash subkey) of `0x02 | stream 16 | millis i64 | counter u16 | node u64`
    /// (big-endian, the stamp as in the envelope header). Sealing the same version twice gives
    /// the same event id, so hosts deduplicate it.
    public func eventID(stream: StreamID, stamp: Stamp) -> EventID {
        var message: [UInt8] = [0x02]
        message.reserveCapacity(35)
        stream.append(to: &message)
        BigEndian.append(UInt64(bitPattern: stamp.millis), to: &message)
        message.append(UInt8(stamp.counter >> 8)); message.append(UInt8(stamp.counter & 0xFF))
        BigEndian.append(stamp.node.value, to: &message)
        let (high, low) = KeyedHash.prefix128(of: message, key: hashKey)
        return ID128(high: high, low: low)
    }

    /// Where the sealed blob of the attachment with SHA-256 `sha256` is stored: 64 lowercase hex
    /// digits of the keyed BLAKE2b-256 (blob-name subkey) of the ASCII of `sha256` lowercased,
    /// so a host cannot tell which known file an owner holds.
    public func blobKey(sha256: String) -> BlobKey {
        let message = sha256.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }
        return Hex.encode(KeyedHash.hash(message, key: blobNameKey, length: 32))
    }

    public var description: String { "OwnerKeys(owner: \(owner))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["owner": owner], displayStyle: .struct) }

    private static func appendLengthPrefixed(_ text: String, to out: inout [UInt8]) {
        BigEndian.append(UInt32(truncatingIfNeeded: text.utf8.count), to: &out)
        out.append(contentsOf: text.utf8)
    }
}
