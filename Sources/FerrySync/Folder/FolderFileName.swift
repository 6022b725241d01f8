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

    public init(_ name: String) {
        let utf8 = Array(name.utf8.prefix(Self.maxNameBytes + 1))
        guard utf8.count <= Self.maxNameBytes, utf8.first != UInt8(ascii: ".") else { self = .ignored; return }
        // Partial downloads, compared ASCII-case-insensitively, bytewise (a directory listing
        // is parsed on every pull: no locale-aware string search here).
        let lower = utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }
        if Self.partialSuffixBytes.contains(where: { lower.count >= $0.count && lower[(lower.count - $0.count)...].elementsEqual($0) })
            || zip(lower, lower.dropFirst()).contains(where: { $0 == UInt8(ascii: ".") && $1 == UInt8(ascii: "~") }) {
            self = .ignored
            return
        }
        for (prefix, suffix, isSegment) in [("seg-", ".fseg", true), ("snap-", ".fsnap", false)] {
            let p = Array(prefix.utf8), s = Array(suffix.utf8)
            guard utf8.starts(with: p), utf8.count >= p.count + 16,
                  let seq = Self.hex16(utf8[p.count..<(p.count + 16)]) else { continue }
            if utf8.count == p.count + 16 + s.count && utf8[(p.count + 16)...].elementsEqual(s) {
                self = isSegment ? .segment(seq: seq) : .snapshot(seq: seq)
            } else {
                self = .conflictCopy
            }
            return
        }
        self = .ignored
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
