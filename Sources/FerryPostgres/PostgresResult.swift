import CPostgres

/// The rows of one finished command, read in binary form. Owns the `PGresult` and clears it when
/// released.
///
/// `@unchecked Sendable`: immutable after creation; libpq results are plain memory.
public final class PostgresResult: @unchecked Sendable {
    let handle: OpaquePointer

    init(handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    /// Rows returned.
    public var count: Int { Int(PQntuples(handle)) }
    /// Rows a command changed (INSERT, UPDATE, DELETE), or 0.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    public func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) != 0 }

    /// The raw binary value.
    public func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        if isNull(row, column) { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return [] }
        return value.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// An integer column (int2, int4 or int8; bool as 0/1); 0 for NULL.
    public func int64(_ row: Int, _ column: Int) -> Int64 {
        guard let b = bytes(row, column) else { return 0 }
        var v: UInt64 = 0
        for byte in b { v = v << 8 | UInt64(byte) }
        switch b.count {
        case 2: return Int64(Int16(truncatingIfNeeded: v))
        case 4: return Int64(Int32(truncatingIfNeeded: v))
        default: return Int64(bitPattern: v)
        }
    }

    public func optionalInt64(_ row: Int, _ column: Int) -> Int64? { isNull(row, column) ? nil : int64(row, column) }

    public func bool(_ row: Int, _ column: Int) -> Bool { int64(row, column) != 0 }

    public func text(_ row: Int, _ column: Int) -> String? { bytes(row, column).map { String(decoding: $0, as: UTF8.self) } }
}
