import Foundation
import Glibc
import Synchronization
import Testing

@testable import FerryVarlink

/// The event loop with busy polling: events and jobs still arrive in order, and a loop with
/// nothing to do sleeps instead of polling.
@Suite struct EventLoopTests {
    /// Jobs submitted one after another (each waiting for the previous, as a client making one
    /// call after another does) and in bursts all run, in order, with polling on.
    @Test func runsEveryJobInOrderWhilePolling() async throws {
        let loop = try EventLoop(name: "busy-poll-order", busyPoll: .microseconds(200))
        let seen = Mutex<[Int]>([])
        for i in 0..<2000 {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                loop.execute {
                    seen.withLock { $0.append(i) }
                    done.resume()
                }
            }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for i in 2000..<3000 { loop.execute { seen.withLock { $0.append(i) } } }
            loop.execute { done.resume() }
        }
        #expect(seen.withLock { $0 } == Array(0..<3000))
        await loop.shutdown()
    }

    /// After a quick run of jobs, a loop left idle sleeps: its thread uses (almost) no CPU
    /// time while nothing happens, even with a long busy-poll time.
    @Test func anIdleLoopSleeps() async throws {
        let name = "busy-poll-idle"
        let loop = try EventLoop(name: name, busyPoll: .microseconds(1000))
        for _ in 0..<500 {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in loop.execute { done.resume() } }
        }
        let before = try Self.cpuTicks(ofThreadNamed: name)
        try await Task.sleep(for: .milliseconds(600))
        let after = try Self.cpuTicks(ofThreadNamed: name)
        // Polling for ever would use about 60 ticks (of 10 ms) here; one poll, 1 ms at most.
        #expect(after - before <= 2, "the idle loop used \(after - before) ticks of CPU time")
        await loop.shutdown()
    }

    /// The time the loop polls grows while jobs come one right after another, and falls to
    /// nothing once they come further apart than the longest poll time.
    @Test func pollTimeAdaptsToHowQuicklyEventsCome() async throws {
        let loop = try EventLoop(name: "busy-poll-adapt", busyPoll: .milliseconds(40))
        func pollNanos() async -> UInt64 {
            await withCheckedContinuation { done in loop.execute { done.resume(returning: loop.pollNanos) } }
        }
        // Each call waits for the one before: the loop sleeps only briefly between them.
        for _ in 0..<200 { _ = await pollNanos() }
        let quick = await pollNanos()
        #expect(quick > 0 && quick <= 40_000_000, "\(quick) ns after quick jobs")
        // Each wait longer than 40 ms halves it; from 40 ms, 11 halvings end below the start.
        // The value is read by the job that ended each wait, after that wait counted.
        var afterWaits = quick
        for _ in 0..<12 {
            try await Task.sleep(for: .milliseconds(100))
            afterWaits = await pollNanos()
        }
        #expect(afterWaits == 0)
        await loop.shutdown()
    }

    /// A descriptor that becomes readable while the loop polls is handled.
    @Test func handlesReadinessWhilePolling() async throws {
        let loop = try EventLoop(name: "busy-poll-fd", busyPoll: .microseconds(500))
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let (writer, reader) = (fds[0], fds[1])
        defer { close(writer) }
        let handler = CountingHandler(fd: reader)
        let token: UInt64? = await withCheckedContinuation { done in
            loop.execute { done.resume(returning: try? loop.register(reader, events: LinuxFunctions.epollIn, handler: handler)) }
        }
        let registered = try #require(token)
        for i in 1...300 {
            var byte: UInt8 = 1
            #expect(write(writer, &byte, 1) == 1)
            let deadline = ContinuousClock.now + .seconds(10)
            while handler.count < i && ContinuousClock.now < deadline { await Task.yield() }
            #expect(handler.count == i)
            if handler.count != i { break }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { loop.deregisterAndClose(reader, token: registered); done.resume() }
        }
        await loop.shutdown()
    }

    private static func cpuTicks(ofThreadNamed name: String) throws -> Int {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == String(name.prefix(15)) else { continue }
            let stat = try String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8)
            // Fields after the ")" that ends the name: state is field 3, utime 14, stime 15.
            let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
            return Int(fields[11])! + Int(fields[12])!
        }
        throw CocoaError(.fileNoSuchFile)
    }
}

/// Reads what is readable and counts the bytes.
private final class CountingHandler: EventLoopHandler, @unchecked Sendable {
    // @unchecked: `received` is an atomic; `fd` is immutable.
    let fd: Int32
    private let received = Atomic<Int>(0)
    init(fd: Int32) { self.fd = fd }
    var count: Int { received.load(ordering: .acquiring) }
    func handleEvents(_ events: UInt32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &buffer, buffer.count)
        if n > 0 { received.add(n, ordering: .releasing) }
    }
}
