import Foundation
import Glibc
import Synchronization

/// Turns a relay's host into the addresses to connect to, without letting a lookup that hangs
/// (no network, a DNS server that does not answer) hold a request past its deadline or its
/// cancellation.
///
/// A numeric address (IPv4 or IPv6) is parsed at once, on the calling thread. A name is looked
/// up by getaddrinfo(3), which cannot be interrupted, on a thread of its own: the request waits
/// for it in poll(2) beside its `HTTP1Cancellation`, and when it gives up (`.timedOut`,
/// `.cancelled`) the lookup finishes in the background and its answer is dropped.
enum HTTP1Resolver {
    /// One address getaddrinfo(3) gave, in a form that can cross threads.
    struct Address: Sendable, Equatable {
        var family: Int32
        var socketType: Int32
        var socketProtocol: Int32
        /// The `sockaddr` bytes.
        var bytes: [UInt8]
    }

    /// Looks `host` up for TCP port `port`; with `numericOnly`, only a numeric address is
    /// accepted (and answered at once). The seam tests replace.
    typealias Lookup = @Sendable (_ host: String, _ port: Int, _ numericOnly: Bool) -> Result<[Address], HTTP1ClientError>

    /// getaddrinfo(3), addresses in its order.
    static let system: Lookup = { host, port, numericOnly in
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (numericOnly ? AI_NUMERICHOST : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let list else {
            let detail = rc == EAI_SYSTEM ? HTTP1ClientError.text(errno) : String(cString: gai_strerror(rc))
            return .failure(.unresolvable(host: host, detail: detail))
        }
        defer { freeaddrinfo(list) }
        var out: [Address] = []
        var next: UnsafeMutablePointer<addrinfo>? = list
        while let entry = next {
            next = entry.pointee.ai_next
            guard let address = entry.pointee.ai_addr else { continue }
            let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
            out.append(Address(family: entry.pointee.ai_family, socketType: entry.pointee.ai_socktype,
                               socketProtocol: entry.pointee.ai_protocol, bytes: bytes))
        }
        return out.isEmpty ? .failure(.unresolvable(host: host, detail: "no address")) : .success(out)
    }

    /// The addresses of `host` at `port`.
    /// - Throws: `.unresolvable` (with the resolver's reason), `.timedOut` at `deadline`,
    ///   `.cancelled`, `.system` when no socket pair can be made.
    static func resolve(host: String, port: Int, deadline: ContinuousClock.Instant, cancellation: HTTP1Cancellation,
                        lookup: @escaping Lookup = system) throws(HTTP1ClientError) -> [Address] {
        if case .success(let addresses) = lookup(host, port, true) { return addresses }
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw .system(call: "socketpair", errno: errno) }
        let (waitFD, doneFD) = (fds[0], fds[1])
        defer { _ = Glibc.close(waitFD) }
        let answer = Answer()
        // The lookup's thread owns `doneFD`: it tells through it that `answer` is set, then
        // closes it, whether or not anyone still waits.
        Thread.detachNewThread {
            answer.set(lookup(host, port, false))
            var byte: UInt8 = 1
            _ = Glibc.send(doneFD, &byte, 1, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            _ = Glibc.close(doneFD)
        }
        _ = try HTTP1Connection.wait(waitFD, for: Int16(POLLIN), until: deadline, cancellation: cancellation)
        guard let result = answer.get() else { throw .unresolvable(host: host, detail: "the lookup ended without an answer") }
        return try result.get()
    }

    /// The lookup's answer, set once by its thread.
    private final class Answer: Sendable {
        private let value = Mutex<Result<[Address], HTTP1ClientError>?>(nil)
        func set(_ result: Result<[Address], HTTP1ClientError>) { value.withLock { $0 = result } }
        func get() -> Result<[Address], HTTP1ClientError>? { value.withLock { $0 } }
    }
}
