import Glibc
import Synchronization

/// The cancellation of one blocking HTTP request, told across threads: `cancel()` (from a Swift
/// task's cancellation handler, on any thread) sets a flag and makes `waitFD` readable, so the
/// request's thread, blocked in poll(2) on its socket and `waitFD`, wakes at once.
///
/// One per request, so a cancel that comes after the request ended touches nothing shared (a
/// pooled connection never sees it). The descriptors are a non-blocking, close-on-exec socket
/// pair: one call makes both, and the Glibc module has no eventfd or pipe2.
final class HTTP1Cancellation: Sendable {
    private struct Ends {
        var wake: Int32
        var wait: Int32
        var closed = false
    }

    private let ends: Mutex<Ends>
    private let flag = Atomic<Bool>(false)
    /// Readable once `cancel()` was called; poll it beside the socket.
    let waitFD: Int32

    /// - Throws: `HTTP1ClientError.system` when no socket pair can be made (out of descriptors).
    init() throws(HTTP1ClientError) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw .system(call: "socketpair", errno: errno) }
        waitFD = fds[0]
        ends = Mutex(Ends(wake: fds[1], wait: fds[0]))
    }

    deinit { close() }

    /// Whether `cancel()` was called.
    var isCancelled: Bool { flag.load(ordering: .acquiring) }

    /// Marks the request cancelled and wakes its thread. Never blocks; calls after the first,
    /// and after `close()`, only keep the flag.
    func cancel() {
        guard !flag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        ends.withLock { ends in
            guard !ends.closed else { return }
            var byte: UInt8 = 1
            _ = Glibc.send(ends.wake, &byte, 1, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        }
    }

    /// Closes the descriptors (the request is over). Idempotent.
    func close() {
        ends.withLock { ends in
            guard !ends.closed else { return }
            ends.closed = true
            _ = Glibc.close(ends.wake)
            _ = Glibc.close(ends.wait)
        }
    }
}
