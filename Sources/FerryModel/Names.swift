/// Validation of the names Ferry accepts: entity kinds, space and transport names, record ids.
public enum Names {
    /// `[a-z][a-z0-9_.-]{0,63}`: entity kinds, space names, transport names.
    public static func isValidName(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { b in
            guard b.count >= 1, b.count <= 64 else { return false }
            guard b[0] >= 97 && b[0] <= 122 else { return false }
            for c in b.dropFirst() {
                switch c {
                case 97...122, 48...57, 95, 46, 45: continue
                default: return false
                }
            }
            return true
        }
    }

    /// The longest id, in Unicode code points.
    public static let maxIDLength = 128

    /// Checks a record id: 1 to 128 Unicode code points, no control characters. Returns why it
    /// is invalid, or nil when it is valid. (Code points, not user-perceived characters, so that
    /// every implementation counts the same.)
    public static func idProblem(_ id: String) -> String? {
        if id.isEmpty { return "an id must not be empty" }
        if id.unicodeScalars.count > maxIDLength {
            return "an id has at most \(maxIDLength) characters (Unicode code points)"
        }
        if id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "an id must not contain control characters"
        }
        return nil
    }

    /// True for a lowercase hex SHA-256 (64 characters 0-9a-f).
    public static func isSHA256Hex(_ s: String) -> Bool {
        isLowercaseHex(s, count: 64)
    }

    /// True for exactly `count` characters 0-9a-f.
    public static func isLowercaseHex(_ s: String, count: Int) -> Bool {
        var s = s
        return s.withUTF8 { b in
            b.count == count && b.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        }
    }
}
