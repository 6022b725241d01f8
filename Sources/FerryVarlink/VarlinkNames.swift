/// The name rules of the Varlink interface definition language.
enum VarlinkNames {
    /// `[A-Za-z]([-]*[A-Za-z0-9])*([.][A-Za-z0-9]([-]*[A-Za-z0-9])*)+`: at least two
    /// dot-separated segments, dashes only inside a segment.
    static func isInterfaceName(_ name: some StringProtocol) -> Bool {
        let segments = Array(name.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count >= 2 else { return false }
        for (index, segment) in segments.enumerated() {
            guard let first = segment.first, let last = segment.last else { return false }
            if index == 0 ? !isLetter(first) : !isAlphanumeric(first) { return false }
            guard isAlphanumeric(last) else { return false }
            guard segment.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "-") }) else { return false }
        }
        return true
    }

    /// `[A-Z][A-Za-z0-9]*`: names of types, methods and errors.
    static func isMemberName(_ name: some StringProtocol) -> Bool {
        guard let first = name.utf8.first, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "Z") else {
            return false
        }
        return name.utf8.allSatisfy(isAlphanumeric)
    }

    /// `[A-Za-z](_?[A-Za-z0-9])*`: field names and enum values.
    static func isFieldName(_ name: some StringProtocol) -> Bool {
        guard let first = name.utf8.first, isLetter(first), Array(name.utf8).last != UInt8(ascii: "_")
        else { return false }
        var previousUnderscore = false
        for byte in name.utf8 {
            if byte == UInt8(ascii: "_") {
                if previousUnderscore { return false }
                previousUnderscore = true
            } else if isAlphanumeric(byte) {
                previousUnderscore = false
            } else {
                return false
            }
        }
        return true
    }

    /// `interface.Member` with a valid interface name and member name.
    static func isQualifiedMemberName(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: ".") else { return false }
        return isInterfaceName(name[..<dot]) && isMemberName(name[name.index(after: dot)...])
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }
}
