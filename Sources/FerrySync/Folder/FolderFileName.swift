/// What a file name in a device directory of a synced folder means to a reader.
///
/// Pure and size-capped. Canonical names are `seg-<16 hex>.fseg` and `snap-<16 hex>.fsnap`
/// (lowercase hex). A name that starts like one of them but is otherwise different is a copy
/// the sync tool made when it saw two versions of one file (Syncthing
/// `seg-….fseg.sync-conflict-20260101-120000-ABCDEFG`, Dropbox `seg-… (1).fseg`, Nextcloud
/// `seg-…-conflict-….fseg`, iCloud `seg-… 2.fseg`): a `conflictCopy`, read as an extra source.
/// Hidden names (a leading dot: our own `.tmp-*` files and the tools' partial downloads) and the
/// tools' partial-download suffixes are `ignored`, as is anything else.
public enum FolderFileName: Sendable, Hashable {
    case segment(seq: UInt64)
    case snapshot(seq: UInt64)
    /// A sync tool's copy of a segment or snapshot.
    case conflictCopy
    /// Not a file the transport reads.
    case ignored

    /// The longest name considered (longer names are `ignored`).
    public static let maxNameBytes = 255

    /// Suffixes sync tools give files still being downloaded.
    static let partialSuffixes = [".tmp", ".part", ".partial", ".!sync", ".crdownload", ".download"]
    private static let partialSuffixBytes = partialSuffixes.map { Array($0.utf8) }
    private static let kinds: [(prefix: [UInt8], suffix: [UInt8], isSegment: Bool)] = [
        (Array("seg-".utf8), Array(".fseg".utf8), true), (Array("snap-".utf8), Array(".fsnap".utf8), false),
    ]

    public init(_ name: String) {
        // A directory listing is parsed on every pull: bytewise, with no copy of the name and
        // no locale-aware string search.
        var name = name
        self = name.withUTF8 { Self.classify($0) }
    }

    private static func classify(_ utf8: UnsafeBufferPointer<UInt8>) -> FolderFileName {
        guard utf8.count <= maxNameBytes, utf8.first != UInt8(ascii: ".") else { return .ignored }
        // Partial downloads, compared ASCII-case-insensitively.
        @inline(__always) func lower(_ c: UInt8) -> UInt8 { (65...90).contains(c) ? c + 32 : c }
        for suffix in partialSuffixBytes where utf8.count >= suffix.count {
            let tail = utf8.count - suffix.count
            if suffix.indices.allSatisfy({ lower(utf8[tail + $0]) == suffix[$0] }) { return .ignored }
        }
        if utf8.count >= 2 {
            for i in 1..<utf8.count where utf8[i] == UInt8(ascii: "~") && utf8[i - 1] == UInt8(ascii: ".") { return .ignored }
        }
        for kind in kinds {
            let p = kind.prefix.count
            guard utf8.count >= p + 16, utf8.starts(with: kind.prefix),
                  let seq = hex16(UnsafeBufferPointer(rebasing: utf8[p..<(p + 16)])) else { continue }
            if utf8.count == p + 16 + kind.suffix.count && utf8[(p + 16)...].elementsEqual(kind.suffix) {
                return kind.isSegment ? .segment(seq: seq) : .snapshot(seq: seq)
            }
            return .conflictCopy
        }
        return .ignored
    }

    /// The canonical segment name for `seq`.
    public static func segmentName(_ seq: UInt64) -> String { "seg-\(hex16(seq)).fseg" }
    /// The canonical snapshot name for a snapshot superseding segments up to `seq`.
    public static func snapshotName(_ seq: UInt64) -> String { "snap-\(hex16(seq)).fsnap" }

    /// 16 lowercase hex digits.
    static func hex16(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// Parses exactly 16 lowercase hex digits.
    static func hex16<C: Collection<UInt8>>(_ digits: C) -> UInt64? {
        guard digits.count == 16 else { return nil }
        var v: UInt64 = 0
        for c in digits {
            switch c {
            case 48...57: v = v << 4 | UInt64(c - 48)
            case 97...102: v = v << 4 | UInt64(c - 87)
            default: return nil
            }
        }
        return v
    }

    /// Whether `name` is a device directory name (16 lowercase hex digits); its node id if so.
    public static func device(_ name: String) -> UInt64? {
        name.utf8.count == 16 ? hex16(name.utf8) : nil
    }

    /// Whether `key` is a valid blob key: exactly 64 lowercase hex digits (so never a path).
    public static func isValidBlobKey(_ key: String) -> Bool {
        key.utf8.count == 64 && key.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
