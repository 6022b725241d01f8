import CSQLite
import Glibc

/// A VFS over SQLite's default one ("unix"), or over "unix-excl" (`exclusiveName`, for
/// process-exclusive connections: `Database(path:mode:coalesceLogWrites:processExclusive:)`),
/// that writes a transaction's write-ahead-log frames
/// to the file in one `pwrite`, instead of two per page (SQLite writes each frame's 24-byte
/// header, then its page). A one-row commit that touches four pages makes one system call
/// instead of eight; on a VM that is 8 µs of the 12 a commit's writes took.
///
/// What it promises, so that nothing SQLite or another connection relies on changes:
/// - Every frame of a committed transaction is in the file (the page cache, like any
///   `pwrite`) before SQLite's write of the commit frame returns, so before SQLite publishes
///   the commit in the shared wal-index and before `COMMIT` returns: readers on other
///   connections, the checkpointer and a process killed with `kill -9` right after see exactly
///   what they would without it.
/// - Only contiguous writes are held, at most `capacity` bytes; any other operation on the log
///   (read, sync, truncate, size, file control, close) writes what is held first, so the
///   file's contents are never older than SQLite believes. A failed write of held bytes is
///   reported by the call that caused it: SQLite then fails that statement or commit, as it
///   would have on a failed `pwrite`.
/// - Commits are found from the log's documented format (sqlite.org/fileformat2.html, "WAL
///   file format"): the page size in the log's header, and a frame header's second field,
///   non-zero only for a commit frame. When the page size cannot be learned, the file is
///   written through, unbuffered.
/// - Files other than write-ahead logs are the default VFS's own, untouched.
///
/// Opt-in per connection (`Database(path:mode:coalesceLogWrites:)`): the store's and the
/// relay's write connections use it; baselines that measure plain SQLite do not.
public enum CoalescingVFS {
    /// The registered name, or nil when SQLite has no default VFS to wrap (then connections
    /// that ask for this one use the default).
    public static let name: String? = register(over: nil, as: "ferry-coalescing-log")

    /// The same over "unix-excl", the VFS that keeps other processes out; nil when SQLite has
    /// none (then process-exclusive connections are plain ones, `name` and the default).
    public static let exclusiveName: String? = register(over: "unix-excl", as: "ferry-coalescing-log-excl")

    /// The most log bytes held before they are written: 29 frames of 4 KiB pages, or one of
    /// 64 KiB. The default VFS writes less than 128 KiB per call (its `seekAndWrite` masks the
    /// length with 0x1ffff, so a longer write would fail as SQLITE_FULL).
    static let capacity = 120 << 10

    // The sqlite3_file this VFS hands SQLite for a log: its own header (pMethods), then a
    // pointer to the `LogBuffer`, then the default VFS's file. Other files are the default
    // VFS's file itself, at offset 0.
    private static let bufferOffset = 8
    private static let baseFileOffset = 16

    /// The log's frames in the file: a 32-byte header, then frames of a 24-byte header and a page.
    private static let logHeaderSize = 32
    private static let frameHeaderSize = 24

    /// What is held for one open log, and what was learned of it. Used only by the connection
    /// that opened the file (SQLite never shares a file object between threads at once).
    final class LogBuffer {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: CoalescingVFS.capacity, alignment: 16)
        /// The file offset of `bytes[0]`, and how many bytes are held.
        var start: Int64 = 0
        var count = 0
        /// From the log's header; 0 while unknown.
        var pageSize = 0
        /// Where the commit frame being written ends; -1: none is being written.
        var commitEnd: Int64 = -1
        /// The page size could not be learned: everything is written through.
        var writeThrough = false
        /// Writes that reached the file (held bytes and writes passed through), for tests.
        var writes = 0

        deinit { bytes.deallocate() }
    }

    private static func baseFile(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<sqlite3_file> {
        (UnsafeMutableRawPointer(file) + baseFileOffset).assumingMemoryBound(to: sqlite3_file.self)
    }

    private static func buffer(_ file: UnsafeMutablePointer<sqlite3_file>) -> LogBuffer {
        let pointer = UnsafeMutableRawPointer(file).load(fromByteOffset: bufferOffset, as: UnsafeMutableRawPointer.self)
        return Unmanaged<LogBuffer>.fromOpaque(pointer).takeUnretainedValue()
    }

    private static func methods(_ file: UnsafeMutablePointer<sqlite3_file>) -> sqlite3_io_methods {
        file.pointee.pMethods.pointee
    }

    /// Writes what `file` holds.
    private static func flush(_ file: UnsafeMutablePointer<sqlite3_file>) -> Int32 {
        let b = buffer(file)
        guard b.count > 0 else { return SQLITE_OK }
        let base = baseFile(file)
        let rc = methods(base).xWrite(base, b.bytes, Int32(b.count), b.start)
        b.count = 0
        b.writes += 1
        return rc
    }

    /// A big-endian 32-bit field.
    private static func field(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(p.load(fromByteOffset: offset, as: UInt8.self)) << 24 | UInt32(p.load(fromByteOffset: offset + 1, as: UInt8.self)) << 16
            | UInt32(p.load(fromByteOffset: offset + 2, as: UInt8.self)) << 8 | UInt32(p.load(fromByteOffset: offset + 3, as: UInt8.self))
    }

    /// The page size a log header gives (its magic checked), or 0.
    static func pageSize(logHeader p: UnsafeRawPointer) -> Int {
        let magic = field(p, 0)
        guard magic == 0x377f_0682 || magic == 0x377f_0683 else { return 0 }
        // A power of two from 512 to 65536, written as it is (unlike the database header's
        // 1 for 65536), as SQLite's own recovery of a log checks it.
        let size = Int(field(p, 8))
        guard size >= 512, size <= 65536, size & (size - 1) == 0 else { return 0 }
        return size
    }

    /// Learns the page size from the log's header in the file (a log this connection did not
    /// start). Anything held is written first.
    private static func learnPageSize(_ file: UnsafeMutablePointer<sqlite3_file>, _ b: LogBuffer) -> Int32 {
        let rc = flush(file)
        guard rc == SQLITE_OK else { return rc }
        let base = baseFile(file)
        var header = [UInt8](repeating: 0, count: logHeaderSize)
        let read = header.withUnsafeMutableBytes { methods(base).xRead(base, $0.baseAddress, Int32(logHeaderSize), 0) }
        b.pageSize = read == SQLITE_OK ? header.withUnsafeBytes { pageSize(logHeader: $0.baseAddress!) } : 0
        if b.pageSize == 0 { b.writeThrough = true }
        return SQLITE_OK
    }

    private static let write: @convention(c) (UnsafeMutablePointer<sqlite3_file>?, UnsafeRawPointer?, Int32, sqlite3_int64) -> Int32 = { file, data, amount, offset in
        guard let file, let data else { return SQLITE_IOERR }
        let b = buffer(file)
        let base = baseFile(file)
        let n = Int(amount)
        if b.count > 0 && offset != b.start + Int64(b.count) {
            let rc = flush(file)
            guard rc == SQLITE_OK else { return rc }
        }
        if offset == 0 && n >= logHeaderSize {
            b.pageSize = pageSize(logHeader: data)
            b.writeThrough = b.pageSize == 0
        } else if b.pageSize == 0 && !b.writeThrough && offset >= Int64(logHeaderSize) {
            let rc = learnPageSize(file, b)
            guard rc == SQLITE_OK else { return rc }
        }
        if b.writeThrough {
            let rc = flush(file)
            guard rc == SQLITE_OK else { return rc }
            b.writes += 1
            return methods(base).xWrite(base, data, amount, offset)
        }
        // A frame starting here: a commit frame ends the transaction.
        let frameSize = Int64(frameHeaderSize + b.pageSize)
        if offset >= Int64(logHeaderSize), (offset - Int64(logHeaderSize)) % frameSize == 0, n >= 8, field(data, 4) != 0 {
            b.commitEnd = offset + frameSize
        }
        if n > capacity - b.count {
            let rc = flush(file)
            guard rc == SQLITE_OK else { return rc }
        }
        if n > capacity {
            b.writes += 1
            let rc = methods(base).xWrite(base, data, amount, offset)
            if b.commitEnd >= 0 && offset + Int64(n) >= b.commitEnd { b.commitEnd = -1 }
            return rc
        }
        if b.count == 0 { b.start = offset }
        (b.bytes + b.count).copyMemory(from: data, byteCount: n)
        b.count += n
        if b.commitEnd >= 0 && b.start + Int64(b.count) >= b.commitEnd {
            b.commitEnd = -1
            return flush(file)
        }
        return SQLITE_OK
    }

    /// Writes what `file` holds, then calls `body` with the default VFS's file and its methods.
    private static func afterFlush(_ file: UnsafeMutablePointer<sqlite3_file>?,
                                   _ body: (UnsafeMutablePointer<sqlite3_file>, sqlite3_io_methods) -> Int32) -> Int32 {
        guard let file else { return SQLITE_IOERR }
        let rc = flush(file)
        guard rc == SQLITE_OK else { return rc }
        let base = baseFile(file)
        return body(base, methods(base))
    }

    /// Calls `body` with the default VFS's file and its methods.
    private static func passOn(_ file: UnsafeMutablePointer<sqlite3_file>?,
                               _ body: (UnsafeMutablePointer<sqlite3_file>, sqlite3_io_methods) -> Int32) -> Int32 {
        guard let file else { return SQLITE_IOERR }
        let base = baseFile(file)
        return body(base, methods(base))
    }

    /// The log's methods: writes held by `write`, everything else the default VFS's, after
    /// what is held is written where the call could see or depend on the file.
    nonisolated(unsafe) private static let logMethods: UnsafeMutablePointer<sqlite3_io_methods> = {
        let m = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        var methods = sqlite3_io_methods()
        methods.iVersion = 3
        methods.xClose = { file in
            guard let file else { return SQLITE_OK }
            let flushed = flush(file)
            let base = baseFile(file)
            let closed = base.pointee.pMethods.map { $0.pointee.xClose(base) } ?? SQLITE_OK
            let pointer = UnsafeMutableRawPointer(file).load(fromByteOffset: bufferOffset, as: UnsafeMutableRawPointer.self)
            Unmanaged<LogBuffer>.fromOpaque(pointer).release()
            return flushed != SQLITE_OK ? flushed : closed
        }
        methods.xRead = { file, data, amount, offset in afterFlush(file) { $1.xRead($0, data, amount, offset) } }
        methods.xWrite = write
        methods.xTruncate = { file, size in afterFlush(file) { $1.xTruncate($0, size) } }
        methods.xSync = { file, flags in afterFlush(file) { $1.xSync($0, flags) } }
        methods.xFileSize = { file, size in afterFlush(file) { $1.xFileSize($0, size) } }
        methods.xLock = { file, level in passOn(file) { $1.xLock($0, level) } }
        methods.xUnlock = { file, level in passOn(file) { $1.xUnlock($0, level) } }
        methods.xCheckReservedLock = { file, result in passOn(file) { $1.xCheckReservedLock($0, result) } }
        methods.xFileControl = { file, op, argument in afterFlush(file) { $1.xFileControl($0, op, argument) } }
        methods.xSectorSize = { file in passOn(file) { $1.xSectorSize($0) } }
        methods.xDeviceCharacteristics = { file in passOn(file) { $1.xDeviceCharacteristics($0) } }
        // SQLite maps shared memory and pages through the database file, never the log; these
        // pass on all the same.
        methods.xShmMap = { file, page, size, extend, pointer in passOn(file) { $1.xShmMap?($0, page, size, extend, pointer) ?? SQLITE_IOERR } }
        methods.xShmLock = { file, offset, n, flags in passOn(file) { $1.xShmLock?($0, offset, n, flags) ?? SQLITE_IOERR } }
        methods.xShmBarrier = { file in _ = passOn(file) { $1.xShmBarrier?($0); return SQLITE_OK } }
        methods.xShmUnmap = { file, delete in passOn(file) { $1.xShmUnmap?($0, delete) ?? SQLITE_OK } }
        methods.xFetch = { file, offset, amount, pointer in
            // No memory-mapped reads of the log: SQLite then reads it with xRead.
            pointer?.pointee = nil
            return SQLITE_OK
        }
        methods.xUnfetch = { _, _, _ in SQLITE_OK }
        m.initialize(to: methods)
        return m
    }()

    /// The writes to `file`'s log that reached the file so far, or nil when its log is not
    /// one of this VFS's (or it has none yet).
    static func logWrites(_ file: UnsafeMutablePointer<sqlite3_file>) -> Int? {
        guard file.pointee.pMethods == UnsafePointer(logMethods) else { return nil }
        return buffer(file).writes
    }

    /// Registers this VFS over `base` (nil: the default) under `name`.
    private static func register(over baseName: String?, as name: String) -> String? {
        guard let base = sqlite3_vfs_find(baseName) else { return nil }
        let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
        var v = base.pointee
        // Versions 1 and 2 only: the system-call overrides of version 3 are the default VFS's
        // business, and SQLite calls them on it directly.
        v.iVersion = min(base.pointee.iVersion, 2)
        v.szOsFile = Int32(baseFileOffset) + ((base.pointee.szOsFile + 7) & ~7)
        v.pNext = nil
        v.zName = UnsafePointer(strdup(name))
        v.pAppData = UnsafeMutableRawPointer(base)
        // The methods below pass the default VFS on, as its own methods expect; the rest
        // (randomness, time, sleep, dynamic loading, errors) are its own, copied, and ignore
        // which VFS they are called through.
        v.xOpen = { vfs, path, file, flags, outFlags in
            guard let vfs, let file, let base = vfs.pointee.pAppData?.assumingMemoryBound(to: sqlite3_vfs.self) else { return SQLITE_CANTOPEN }
            guard flags & SQLITE_OPEN_WAL != 0 && flags & SQLITE_OPEN_READWRITE != 0 else {
                // Not a log: the default VFS's file, as it is.
                return base.pointee.xOpen(base, path, file, flags, outFlags)
            }
            let inner = CoalescingVFS.baseFile(file)
            inner.pointee.pMethods = nil
            let rc = base.pointee.xOpen(base, path, inner, flags, outFlags)
            guard rc == SQLITE_OK else {
                if let m = inner.pointee.pMethods { _ = m.pointee.xClose(inner) }
                file.pointee.pMethods = nil
                return rc
            }
            UnsafeMutableRawPointer(file).storeBytes(of: Unmanaged.passRetained(LogBuffer()).toOpaque(), toByteOffset: CoalescingVFS.bufferOffset,
                                                     as: UnsafeMutableRawPointer.self)
            file.pointee.pMethods = UnsafePointer(CoalescingVFS.logMethods)
            return SQLITE_OK
        }
        v.xDelete = { vfs, path, syncDirectory in
            guard let base = vfs?.pointee.pAppData?.assumingMemoryBound(to: sqlite3_vfs.self) else { return SQLITE_IOERR }
            return base.pointee.xDelete(base, path, syncDirectory)
        }
        v.xAccess = { vfs, path, flags, result in
            guard let base = vfs?.pointee.pAppData?.assumingMemoryBound(to: sqlite3_vfs.self) else { return SQLITE_IOERR }
            return base.pointee.xAccess(base, path, flags, result)
        }
        v.xFullPathname = { vfs, path, size, out in
            guard let base = vfs?.pointee.pAppData?.assumingMemoryBound(to: sqlite3_vfs.self) else { return SQLITE_CANTOPEN }
            return base.pointee.xFullPathname(base, path, size, out)
        }
        vfs.initialize(to: v)
        guard sqlite3_vfs_register(vfs, 0) == SQLITE_OK else { return nil }
        return name
    }
}
