/// A query parameter, always sent in binary form with its type, so the server never guesses.
public enum PostgresValue: Sendable, Equatable {
    case null
    case int(Int64)
    case bool(Bool)
    case text(String)
    case bytes([UInt8])

    /// An optional integer: `.null` for nil.
    public static func optionalInt(_ value: Int64?) -> PostgresValue { value.map { .int($0) } ?? .null }

    /// The type OID libpq is told (int8, bool, text, bytea; 0 lets the server infer a NULL).
    var typeOID: UInt32 {
        switch self {
        case .null: 0
        case .int: 20
        case .bool: 16
        case .text: 25
        case .bytes: 17
        }
    }

    /// The binary wire form (nil for NULL).
    var binary: [UInt8]? {
        switch self {
        case .null: return nil
        case .int(let v): return (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> UInt64(56 - 8 * $0)) }
        case .bool(let b): return [b ? 1 : 0]
        case .text(let s): return Array(s.utf8)
        case .bytes(let b): return b
        }
    }
}
