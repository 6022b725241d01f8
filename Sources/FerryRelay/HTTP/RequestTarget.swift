/// A request target split into path segments and query parameters. Pure and size-capped.
public struct RequestTarget: Sendable, Equatable {
    /// The largest target accepted, in bytes.
    public static let maxBytes = 4096
    /// The most query parameters accepted.
    public static let maxParameters = 16

    /// The path, as sent (not percent-decoded: no route needs an escaped character, and a
    /// decoded `%2F` must never become a separator).
    public var path: String
    /// Query parameters, percent-decoded (`+` is a space).
    public var query: [String: String]

    /// Why a target was refused.
    public enum Failure: Error, Sendable, Equatable {
        case tooLong(Int)
        case notAbsolutePath
        case malformedQuery(String)
    }

    /// Parses `path?query`.
    /// - Throws: `Failure` for a target over `maxBytes`, a path not starting with `/`, a bad
    ///   percent escape, a repeated parameter, or more than `maxParameters`.
    public static func parse(_ target: String) throws(Failure) -> RequestTarget {
        let bytes = Array(target.utf8)
        guard bytes.count <= maxBytes else { throw .tooLong(bytes.count) }
        guard bytes.first == UInt8(ascii: "/") else { throw .notAbsolutePath }
        let q = bytes.firstIndex(of: UInt8(ascii: "?"))
        let path = String(decoding: bytes[..<(q ?? bytes.endIndex)], as: UTF8.self)
        var query: [String: String] = [:]
        if let q {
            var count = 0
            for part in bytes[(q + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
                count += 1
                guard count <= maxParameters else { throw .malformedQuery("more than \(maxParameters) parameters") }
                let eq = part.firstIndex(of: UInt8(ascii: "="))
                guard let name = percentDecode(part[..<(eq ?? part.endIndex)]),
                      let value = percentDecode(eq.map { part[($0 + 1)...] } ?? []) else {
                    throw .malformedQuery("a bad percent escape")
                }
                guard !name.isEmpty else { throw .malformedQuery("a parameter without a name") }
                guard query[name] == nil else { throw .malformedQuery("\(name.prefix(32)) is given twice") }
                query[name] = value
            }
        }
        return RequestTarget(path: path, query: query)
    }

    static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex,
                      let h = hexValue(bytes[i + 1]), let l = hexValue(bytes[i + 2]) else { return nil }
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(b == UInt8(ascii: "+") ? UInt8(ascii: " ") : b)
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }
}
