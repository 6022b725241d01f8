import Glibc

/// An epoll instance: interest registration and waiting, with events identified by a
/// 64-bit token rather than the descriptor, so a stale event for a closed and reused
/// descriptor number can never reach the wrong owner.
///
/// Not thread-safe: it is owned by one event loop and used only on that loop's thread.
final class Epoll {
    /// One readiness report: the token registered with the descriptor and the events.
    struct Event {
        var token: UInt64
        var events: UInt32
    }

    let fd: Int32
    private let capacity: Int
    private let buffer: UnsafeMutableRawPointer

    /// Creates the epoll descriptor (close-on-exec).
    /// - Throws: `SystemCallError` from `epoll_create1`.
    init(capacity: Int = 256) throws(SystemCallError) {
        fd = try Syscall.run("epoll_create1") { LinuxFunctions.epollCreate1(LinuxFunctions.epollCloexec) }
        self.capacity = capacity
        buffer = UnsafeMutableRawPointer.allocate(
            byteCount: capacity * LinuxFunctions.epollEventSize, alignment: 8)
    }

    deinit {
        buffer.deallocate()
        Syscall.close(fd)
    }

    /// Starts watching `descriptor` for `events`, reporting `token`.
    func add(_ descriptor: Int32, events: UInt32, token: UInt64) throws(SystemCallError) {
        try control(LinuxFunctions.epollCtlAdd, "epoll_ctl(ADD)", descriptor, events, token)
    }

    /// Changes the events watched on `descriptor`.
    func modify(_ descriptor: Int32, events: UInt32, token: UInt64) throws(SystemCallError) {
        try control(LinuxFunctions.epollCtlMod, "epoll_ctl(MOD)", descriptor, events, token)
    }

    /// Stops watching `descriptor`. Closing a descriptor also removes it, so callers
    /// that are about to close may skip this.
    func remove(_ descriptor: Int32) throws(SystemCallError) {
        try control(LinuxFunctions.epollCtlDel, "epoll_ctl(DEL)", descriptor, 0, 0)
    }

    /// Waits for events up to `timeoutMilliseconds` (-1: forever).
    /// - Returns: the ready events, possibly none when the timeout expired.
    func wait(timeoutMilliseconds: Int32) throws(SystemCallError) -> [Event] {
        let count = try Syscall.run("epoll_wait") {
            LinuxFunctions.epollWait(fd, buffer, Int32(capacity), timeoutMilliseconds)
        }
        var result: [Event] = []
        result.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            let base = buffer + index * LinuxFunctions.epollEventSize
            let events = base.loadUnaligned(as: UInt32.self)
            let token = (base + LinuxFunctions.epollEventDataOffset).loadUnaligned(as: UInt64.self)
            result.append(Event(token: token, events: events))
        }
        return result
    }

    private func control(
        _ operation: Int32, _ name: String, _ descriptor: Int32, _ events: UInt32, _ token: UInt64
    ) throws(SystemCallError) {
        var raw = [UInt8](repeating: 0, count: LinuxFunctions.epollEventSize)
        raw.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: token, toByteOffset: LinuxFunctions.epollEventDataOffset, as: UInt64.self)
        }
        try Syscall.run("\(name) fd \(descriptor)") {
            raw.withUnsafeMutableBytes { bytes in
                LinuxFunctions.epollCtl(fd, operation, descriptor, bytes.baseAddress)
            }
        }
    }
}
