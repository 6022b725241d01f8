import Foundation
import Glibc

/// Pins threads to CPUs with `sched_setaffinity(2)`, for measurements that must not depend on
/// where the scheduler happens to put a client and its server: on one CPU a round trip pays
/// two context switches, on two CPUs it pays the wake-ups of CPUs that halted meanwhile, which
/// in a virtual machine cost tens of microseconds each.
enum CPUAffinity {
    private typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer?) -> Int32
    /// glibc declares these only with `_GNU_SOURCE`, so Swift's Glibc module lacks them.
    private static let getAffinity: Affinity? = symbol("sched_getaffinity")
    private static let setAffinity: Affinity? = symbol("sched_setaffinity")

    private static func symbol(_ name: String) -> Affinity? {
        guard let handle = dlopen(nil, RTLD_NOW), let pointer = dlsym(handle, name) else { return nil }
        return unsafeBitCast(pointer, to: Affinity.self)
    }

    /// The CPUs this thread may run on, in order; empty when they cannot be read.
    static var available: [Int] {
        var set = cpu_set_t()
        guard let getAffinity, getAffinity(0, MemoryLayout<cpu_set_t>.size, &set) == 0 else { return [] }
        return withUnsafeBytes(of: &set) { bytes in
            (0..<(bytes.count * 8)).filter { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 }
        }
    }

    /// Lets thread (or single-threaded process) `tid` run only on `cpus`; 0 is the calling
    /// thread. False when refused.
    @discardableResult
    static func pin(_ tid: pid_t, to cpus: [Int]) -> Bool {
        var set = cpu_set_t()
        withUnsafeMutableBytes(of: &set) { bytes in
            for cpu in cpus where cpu >= 0 && cpu < bytes.count * 8 { bytes[cpu / 8] |= UInt8(1 << (cpu % 8)) }
        }
        guard let setAffinity else { return false }
        return setAffinity(tid, MemoryLayout<cpu_set_t>.size, &set) == 0
    }

    /// Pins every thread process `pid` has now (threads they start later inherit it). False
    /// when any was refused or the threads cannot be listed.
    @discardableResult
    static func pinProcess(_ pid: pid_t, to cpus: [Int]) -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty else { return false }
        var all = true
        for task in tasks {
            guard let tid = pid_t(task) else { continue }
            if !pin(tid, to: cpus) { all = false }
        }
        return all
    }
}
