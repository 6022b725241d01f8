import FerryModel
import FerrySync
import FerryTestSupport
import Foundation
import Testing

/// Relay requests cancelled at any moment, including the moment they complete, end: a stopping
/// ferryd cancels its waiting pulls, and a cancel that raced a finishing request once left
/// FoundationNetworking deadlocked and ferryd unable to exit.
@Suite(.serialized) struct RelayCancellationTests {
    @Test func requestsCancelledAsTheyFinishAlwaysEnd() async throws {
        let relay = try RelayHarness()
        try relay.start()
        defer { _ = relay.stop() }
        let owner = OwnerID(high: UInt64.random(in: 1 ... .max), low: UInt64.random(in: 1 ... .max))
        let token = try relay.createOwner(owner.description)
        let transport = RelayTransport(name: "relay", url: URL(string: "http://127.0.0.1:\(relay.port)")!, owner: owner, token: token)
        defer { Task { await transport.close() } }
        // A deadlock stalls the threads Swift's tasks run on, so no check in this test could
        // report it: a plain thread ends the test process with a message instead of a hang.
        let done = DispatchSemaphore(value: 0)
        let watchdog = Thread {
            if done.wait(timeout: .now() + 180) == .timedOut {
                fatalError("RelayCancellationTests: cancelled relay requests did not all end within 3 minutes; FoundationNetworking is deadlocked (see SessionCall)")
            }
        }
        watchdog.start()
        defer { done.signal() }
        // Quick pulls (an owner with nothing is an empty page at once), each cancelled after a
        // delay around its own round trip, so some cancels land just as a reply arrives.
        for i in 0..<1500 {
            let pull = Task { _ = try? await transport.pull(after: nil, limit: 10, wait: .zero) }
            if i % 3 != 0 { usleep(UInt32.random(in: 0...1500)) }
            pull.cancel()
            await pull.value
        }
        // Nothing was left holding a connection: the transport still answers.
        let page = try await transport.pull(after: nil, limit: 10, wait: .zero)
        #expect(page.envelopes.isEmpty && !page.more)
    }
}
