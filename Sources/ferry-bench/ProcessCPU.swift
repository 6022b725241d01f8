import Foundation

/// CPU time (user + system) a process used, from `/proc/PID/stat` (Linux): a steadier figure
/// than throughput on a machine whose speed drifts, for where a phase's work goes.
enum ProcessCPU {
    /// User plus system CPU seconds of `pid` (this process when nil), all its threads, or nil
    /// when `/proc` cannot be read.
    static func seconds(of pid: Int32? = nil) -> Double? {
        let path = "/proc/" + (pid.map { String($0) } ?? "self") + "/stat"
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": state is field 3, utime field 14 and stime field 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system) / (ticks > 0 ? ticks : 100)
    }

    /// User plus system CPU seconds of this process, all its threads, to the microsecond
    /// (`getrusage`), for phases too short for `/proc`'s clock ticks.
    static func preciseSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
