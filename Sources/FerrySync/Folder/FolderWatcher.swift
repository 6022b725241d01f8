import Dispatch
import Glibc
import Synchronization

/// Wakes waiting pulls when something changes in the watched directories, through inotify.
///
/// Directories are added as a scan finds them (the owner directory, then each device directory,
/// new ones included), each before it is listed, so that nothing that changes after a listing
/// goes unnoticed until the poll. When inotify is unavailable (`inotify_init1` fails: a limit reached, a
/// sandbox) `isAvailable` is false and waiters wake only at their timeout, so pulls poll.
///
/// In this device's own directory only what a pull reads or what tells of lost files wakes
/// waiters: a conflict copy appearing or changing, a segment or snapshot deleted or moved away,
/// the directory itself going. The device's own writes there (temporary files renamed into
/// segments and snapshots) wake nobody: a device pushing steadily would otherwise wake its own
/// pull loop, which would list the folder, once per push.
final class FolderWatcher: Sendable {
    private struct State {
        var fd: Int32 = -1
        var failed = false
        var closed = false
        var source: DispatchSourceRead?
        /// Bumped on every batch of inotify events that can matter to a pull.
        var generation: UInt64 = 0
        /// Bumped when something in the own directory may have removed a file this device
        /// wrote (see `ownFilesToken`).
        var lossGeneration: UInt64 = 0
        var watches: [Int32: String] = [:]
        var watched: Set<String> = []
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Where events are read into: made at the first read, then kept (used under the lock).
        var readBuffer: [UInt8] = []
        var cancelled: Set<UInt64> = []
        var nextWaiter: UInt64 = 0
    }

    /// The events watched; `IN_ONLYDIR`: a path that is not a directory is not watched.
    private static let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM
                                     | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "ferry.folder-transport.watch")
    /// This device's own directory (see the type's description); nil: every event wakes.
    private let ownDirectory: String?

    init(ownDirectory: String? = nil) {
        self.ownDirectory = ownDirectory
    }

    /// The current event generation: pass it to `wait(since:timeout:)` after scanning, so a
    /// change during the scan wakes the wait at once.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Whether inotify works here (false: pulls poll).
    var isAvailable: Bool { state.withLock { !$0.failed } }

    /// Watches directory `path` (idempotent; a failure leaves the poll interval to notice changes).
    func watch(_ path: String) {
        state.withLock { s in
            guard !s.closed, !s.watched.contains(path) else { return }
            if s.fd < 0 && !s.failed { start(&s) }
            guard s.fd >= 0 else { return }
            let wd = inotify_add_watch(s.fd, path, Self.mask)
            if wd >= 0 {
                s.watches[wd] = path
                s.watched.insert(path)
            }
        }
    }

    /// A value that stays the same exactly as long as nothing happened in the own directory
    /// that may have removed a file this device wrote (a segment or snapshot deleted or moved
    /// away, the directory removed or moved, events lost to an overflowing queue); nil when
    /// that cannot be known (inotify unavailable, the own directory not watched). Events
    /// already queued by the kernel are read first, so a deletion that finished before this
    /// call changes the value it returns.
    func ownFilesToken() -> UInt64? {
        guard let ownDirectory else { return nil }
        let (token, waiters) = state.withLock { s -> (UInt64?, [CheckedContinuation<Void, Never>]) in
            guard s.fd >= 0, !s.closed else { return (nil, []) }
            let waiters = drainLocked(&s)
            return (s.watched.contains(ownDirectory) ? s.lossGeneration : nil, waiters)
        }
        for w in waiters { w.resume() }
        return token
    }

    /// Returns when an event arrives after `generation`, after `timeout`, or when the task is
    /// cancelled, whichever comes first.
    func wait(since generation: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            if isAvailable { group.addTask { await self.waitForEvent(since: generation) } }
            await group.next()
            group.cancelAll()
        }
    }

    /// Stops watching and wakes every waiter.
    func close() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.closed = true
            s.source?.cancel()  // its cancel handler closes the descriptor
            s.source = nil
            s.fd = -1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume() }
    }

    private func waitForEvent(since generation: UInt64) async {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.closed || s.generation != generation || s.cancelled.remove(id) != nil { return true }
                    s.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if let w = s.waiters.removeValue(forKey: id) { return w }
                s.cancelled.insert(id)
                return nil
            }
            waiter?.resume()
        }
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    private func start(_ s: inout State) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { s.failed = true; return }
        s.fd = fd
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.drain(fd) }
        source.setCancelHandler { Glibc.close(fd) }
        source.resume()
        s.source = source
    }

    /// Reads every pending event; forgets watches the kernel dropped (the directory was removed,
    /// so a later scan re-adds it); wakes the waiters when an event can matter to a pull.
    private func drain(_ fd: Int32) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard s.fd == fd else { return [] }
            return drainLocked(&s)
        }
        for w in waiters { w.resume() }
    }

    /// `drain` under the lock (so that `ownFilesToken` sees every event read before it
    /// returns); the waiters to resume once the lock is released.
    private func drainLocked(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        if s.readBuffer.isEmpty { s.readBuffer = [UInt8](repeating: 0, count: 64 * 1024) }
        var buffer = s.readBuffer
        s.readBuffer = []  // held uniquely while read into; put back below
        defer { s.readBuffer = buffer }
        var wake = false, lost = false
        var dropped: [Int32] = []
        let fd = s.fd
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { break }
            var i = 0
            let headerSize = MemoryLayout<inotify_event>.size
            while i + headerSize <= n {
                let (wd, mask, len) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                    let e = raw.loadUnaligned(fromByteOffset: i, as: inotify_event.self)
                    return (e.wd, e.mask, Int(e.len))
                }
                let nameStart = i + headerSize
                i = nameStart + len
                if mask & UInt32(IN_IGNORED) != 0 { dropped.append(wd) }
                guard let ownDirectory, wd >= 0, let path = s.watches[wd], path == ownDirectory,
                      mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) == 0, i <= n else {
                    // Anywhere else, an overflow, or the own directory itself going: wakes.
                    wake = true
                    if wd < 0 || s.watches[wd] == ownDirectory { lost = true }
                    continue
                }
                let name = buffer[nameStart..<i].withUnsafeBufferPointer { bytes in
                    String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                }
                switch FolderFileName(name) {
                case .conflictCopy:
                    wake = true
                case .segment, .snapshot:
                    if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
                        wake = true
                        lost = true
                    }
                case .ignored:
                    break
                }
            }
        }
        for wd in dropped {
            if let path = s.watches.removeValue(forKey: wd) { s.watched.remove(path) }
        }
        if lost { s.lossGeneration += 1 }
        guard wake else { return [] }
        s.generation += 1
        defer { s.waiters = [:] }
        return Array(s.waiters.values)
    }
}
