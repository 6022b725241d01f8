import Glibc

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then closed), for
/// servers that tests and benchmarks start; 0 if none could be had.
public enum LoopbackPort {
    public static func free() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in
                bind(fd, a, length) == 0 && getsockname(fd, a, &length) == 0
            }
        }
        return ok ? Int(UInt16(bigEndian: address.sin_port)) : 0
    }
}
