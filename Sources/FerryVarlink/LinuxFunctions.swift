import Glibc

/// The Linux-only C functions this module needs that Swift's `Glibc` module does not
/// import (`sys/epoll.h` and `sys/eventfd.h` are not part of it), bound once by name
/// from the C library already loaded into the process.
///
/// This is the only place that reaches into C outside `Glibc`: a `systemLibrary`
/// module would need a new target in Package.swift, and `dlsym` with `@convention(c)`
/// function types calls the functions with the real C calling convention.
enum LinuxFunctions {
    typealias EpollCreate1 = @convention(c) (Int32) -> Int32
    typealias EpollCtl = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias EpollWait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32
    typealias EventFD = @convention(c) (UInt32, Int32) -> Int32
    typealias SetThreadName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32

    static let epollCreate1: EpollCreate1 = symbol("epoll_create1")
    static let epollCtl: EpollCtl = symbol("epoll_ctl")
    static let epollWait: EpollWait = symbol("epoll_wait")
    static let eventfd: EventFD = symbol("eventfd")
    /// `pthread_setname_np` (glibc declares it only with `_GNU_SOURCE`).
    static let setThreadName: SetThreadName = symbol("pthread_setname_np")

    // Constants from <sys/epoll.h> and <sys/eventfd.h>; they are part of the Linux ABI.
    static let epollIn: UInt32 = 0x001
    static let epollOut: UInt32 = 0x004
    static let epollErr: UInt32 = 0x008
    static let epollHup: UInt32 = 0x010
    static let epollRdHup: UInt32 = 0x2000
    static let epollCtlAdd: Int32 = 1
    static let epollCtlDel: Int32 = 2
    static let epollCtlMod: Int32 = 3
    static let epollCloexec: Int32 = O_CLOEXEC
    static let eventfdCloexec: Int32 = O_CLOEXEC
    static let eventfdNonblock: Int32 = O_NONBLOCK

    /// `struct epoll_event` is `__attribute__((packed))` on x86-64 only (12 bytes,
    /// data at offset 4); elsewhere it has natural alignment (16 bytes, data at 8).
    #if arch(x86_64)
    static let epollEventSize = 12
    static let epollEventDataOffset = 4
    #else
    static let epollEventSize = 16
    static let epollEventDataOffset = 8
    #endif

    private static func symbol<F>(_ name: String) -> F {
        guard let handle = dlopen(nil, RTLD_NOW), let pointer = dlsym(handle, name) else {
            fatalError("the C library does not export \(name); FerryVarlink needs Linux")
        }
        return unsafeBitCast(pointer, to: F.self)
    }
}
