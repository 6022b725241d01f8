/// The export bundle's format (docs/protocol.md, "Send and Receive"):
/// a 16-byte file header (`FERRYBND`, format version u8, 7 zero bytes), then frames (`Frame`)
/// whose payload starts with a kind byte:
/// - `0x01` an envelope: `Envelope.encoded` follows;
/// - `0x02` a piece of a sealed attachment blob: owner id (16), blob key (64 ASCII hex), a
///   flags byte (bit 0: the last piece), then at most 1 MiB of the sealed blob. A blob's pieces
///   come in order and before the first envelope that references it;
/// - `0x7F` the end: records u64, blobs u64. A bundle without it is incomplete.
enum BundleFormat {
    static let magic: [UInt8] = Array("FERRYBND".utf8)
    static let version: UInt8 = 1
    static let headerSize = 16
    static let blobPieceBytes = 1 << 20

    static let envelopeKind: UInt8 = 0x01
    static let blobKind: UInt8 = 0x02
    static let endKind: UInt8 = 0x7F

    static var header: [UInt8] { magic + [version] + [UInt8](repeating: 0, count: 7) }
}
