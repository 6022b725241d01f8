/// A query parameter, always sent in binary form with its type, so the server never guesses.
public enum PostgresValue: Sendable, Equatable {
    case null
    case int(Int64)
    case bool(Bool)
    case text(String)
    case bytes([UInt8])
    /// One-dimensional arrays (`bigint[]`, `boolean[]`, `bytea[]`) with no NULL element, sent in
    /// PostgreSQL's binary array form: the server reads them without parsing text.
    case int8Array([Int64])
    case boolArray([Bool])
    case byteaArray([[UInt8]])

    /// An optional integer: `.null` for nil.
    public static func optionalInt(_ value: Int64?) -> PostgresValue { value.map { .int($0) } ?? .null }

    /// The type OID libpq is told (int8, bool, text, bytea and their arrays; 0 lets the server
    /// infer a NULL).
    var typeOID: UInt32 {
        switch self {
        case .null: 0
        case .int: Self.int8OID
        case .bool: Self.boolOID
        case .text: 25
        case .bytes: Self.byteaOID
        case .int8Array: 1016
        case .boolArray: 1000
        case .byteaArray: 1001
        }
    }

    private static let int8OID: UInt32 = 20, boolOID: UInt32 = 16, byteaOID: UInt32 = 17

    /// The binary wire form (nil for NULL).
    var binary: [UInt8]? {
        switch self {
        case .null: return nil
        case .int(let v): return Self.int8Bytes(v)
        case .bool(let b): return [b ? 1 : 0]
        case .text(let s): return Array(s.utf8)
        case .bytes(let b): return b
        case .int8Array(let values): return Self.array(of: Self.int8OID, values.map(Self.int8Bytes))
        case .boolArray(let values): return Self.array(of: Self.boolOID, values.map { [$0 ? 1 : 0] })
        case .byteaArray(let values): return Self.array(of: Self.byteaOID, values)
        }
    }

    private static func int8Bytes(_ v: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> UInt64(56 - 8 * $0)) }
    }

    /// PostgreSQL's binary array form (`array_send`), one dimension, no NULL: the number of
    /// dimensions, a has-NULL flag, the element type; the length and lower bound (1) of the
    /// dimension; each element as its length and its bytes. An empty array has no dimension.
    static func array(of elementOID: UInt32, _ elements: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + $1.count })
        func append(_ v: UInt32) { for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) } }
        append(elements.isEmpty ? 0 : 1)
        append(0)
        append(elementOID)
        if !elements.isEmpty {
            append(UInt32(elements.count))
            append(1)
        }
        for element in elements {
            append(UInt32(element.count))
            out += element
        }
        return out
    }
}
