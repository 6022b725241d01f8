import FerryJSON
import Testing

@testable import FerryVarlink

/// The sink's contract without sockets: what it sends, when it refuses, and how the
/// outgoing-buffer cap turns into waiting and then `peerTooSlow`.
@Suite struct VarlinkReplySinkTests {
    final class Delivered: Sendable {
        let messages = Locked<[[UInt8]]>([])
        var count: Int { messages.withLock { $0.count } }
    }

    private func makeSink(
        limit: Int = 1 << 20, grace: Duration = .seconds(5), more: Bool = true, oneway: Bool = false
    ) -> (VarlinkReplySink, ConnectionOutputState, Delivered) {
        let output = ConnectionOutputState(limit: limit)
        let delivered = Delivered()
        let channel = ReplyChannel(output: output, slowPeerGrace: grace) { bytes in
            delivered.messages.withLock { $0.append(bytes) }
        }
        return (VarlinkReplySink(channel: channel, more: more, oneway: oneway), output, delivered)
    }

    /// Queues of all connections count against the server's budget: past it, a queue gets
    /// room up to its fair share and no further; what is written or dropped is given back.
    /// A reply whose parameters are written straight into it is the reply made from the same
    /// bytes, whatever room was reserved.
    @Test(arguments: [0, 5, 1000])
    func aReplyWrittenInPlaceIsTheReplyOfItsBytes(capacity: Int) {
        let object = Array(#"{"cursor":7,"record":{"id":"é"}}"#.utf8)
        let inPlace = VarlinkEncodedReply(capacity: capacity) { $0 += object }
        #expect(inPlace.bytes == VarlinkEncodedReply(parametersJSON: object).bytes)
        #expect(inPlace.size == inPlace.bytes.count && inPlace.bytes.last == 0)
    }

    @Test func queuesShareTheServersBudget() async throws {
        let budget = BufferBudget(limit: 1000, fairShare: 100)
        let a = ConnectionOutputState(limit: 800, budget: budget)
        let b = ConnectionOutputState(limit: 800, budget: budget)
        #expect(a.tryReserve(700) == nil)
        #expect(b.tryReserve(90) == nil)
        #expect(budget.total == 790)
        #expect(b.tryReserve(100) == nil, "the total stays within the cap")
        #expect(b.tryReserve(200) == .peerTooSlow(limit: 800), "past the cap and past its fair share")
        a.didWrite(500)
        #expect(budget.total == 390)
        #expect(b.tryReserve(200) == nil, "room again once another queue drained")
        b.markClosed()
        #expect(budget.total == 200, "a closed queue gives back what it held")
        a.addUnconditionally(50)   // a final reply always goes, and counts
        #expect(budget.total == 250)
    }

    /// Several replies at once go to the connection together; where one has no room, the
    /// ones before it are handed over first (written at once on the event loop, which makes
    /// room), and only a reply that still has no room stops the rest.
    @Test func sendsSeveralRepliesTogether() throws {
        let replies = (0..<5).map { VarlinkEncodedReply(parameters: ["n": .int($0), "pad": .string(String(repeating: "x", count: 10))]) }
        let size = replies[0].size
        let (sink, output, delivered) = makeSink(limit: 1 << 20)
        #expect(sink.sendNow(replies) == (5, nil))
        #expect(delivered.messages.withLock { $0 } == [replies.flatMap(\.bytes)])
        #expect(output.queuedBytes == 5 * size)

        // Room for two and nobody writing: two are sent, in one hand-over, and the third stops.
        let (slow, _, slowDelivered) = makeSink(limit: 2 * size + size / 2)
        let (sent, error) = slow.sendNow(replies)
        #expect(sent == 2 && error == .peerTooSlow(limit: 2 * size + size / 2))
        #expect(slowDelivered.messages.withLock { $0 } == [replies[0].bytes + replies[1].bytes])

        // A connection that writes what it is handed at once (the event-loop thread): all go.
        let fast = ConnectionOutputState(limit: 2 * size + size / 2)
        let written = Delivered()
        let channel = ReplyChannel(output: fast, slowPeerGrace: .seconds(5)) { bytes in
            written.messages.withLock { $0.append(bytes) }
            fast.didWrite(bytes.count)
        }
        let inline = VarlinkReplySink(channel: channel, more: true, oneway: false)
        #expect(inline.sendNow(replies) == (5, nil))
        #expect(written.messages.withLock { $0.flatMap { $0 } } == replies.flatMap(\.bytes))
        #expect(written.count == 3)

        let (finished, _, _) = makeSink()
        finished.finish()
        #expect(finished.sendNow(replies) == (0, .callFinished))
    }

    @Test func sendsContinuesReplies() async throws {
        let (sink, output, delivered) = makeSink()
        try await sink.send(["n": 1])
        let bytes = try #require(delivered.messages.withLock { $0.first })
        #expect(try VarlinkReplyMessage.decode(Array(bytes.dropLast())) == VarlinkReplyMessage(parameters: ["n": 1], continues: true))
        #expect(output.queuedBytes == bytes.count)
    }

    @Test func refusesOutsideAStream() async {
        let (plain, _, _) = makeSink(more: false)
        await #expect(throws: VarlinkSinkError.notStreaming) { try await plain.send(["n": 1]) }
        let (oneway, _, delivered) = makeSink(more: true, oneway: true)
        await #expect(throws: Never.self) { try await oneway.send(["n": 1]) }
        #expect(delivered.count == 0)
        let (finished, _, _) = makeSink()
        finished.finish()
        await #expect(throws: VarlinkSinkError.callFinished) { try await finished.send(["n": 1]) }
    }

    @Test func reportsAPeerThatLeft() async {
        let (sink, output, _) = makeSink()
        #expect(sink.isPeerConnected)
        output.markClosed()
        #expect(!sink.isPeerConnected)
        await #expect(throws: VarlinkSinkError.peerGone) { try await sink.send(["n": 1]) }
    }

    @Test func waitsForRoomThenReportsTooSlow() async throws {
        let (sink, output, delivered) = makeSink(limit: 100, grace: .milliseconds(100))
        let payload: [String: JSONValue] = ["data": .string(String(repeating: "x", count: 60))]
        try await sink.send(payload)  // an empty buffer always takes one message
        let size = output.queuedBytes
        let started = ContinuousClock.now
        await #expect(throws: VarlinkSinkError.peerTooSlow(limit: 100)) { try await sink.send(payload) }
        #expect(ContinuousClock.now - started >= .milliseconds(100))
        #expect(delivered.count == 1)
        // Once too slow, it stays too slow: the call must end.
        output.didWrite(size)
        await #expect(throws: VarlinkSinkError.peerTooSlow(limit: 100)) { try await sink.send(payload) }
    }

    @Test func resumesWhenThePeerReads() async throws {
        let (sink, output, delivered) = makeSink(limit: 100, grace: .seconds(10))
        let payload: [String: JSONValue] = ["data": .string(String(repeating: "x", count: 60))]
        try await sink.send(payload)
        let size = output.queuedBytes
        let second = Task { try await sink.send(payload) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(delivered.count == 1)
        output.didWrite(size)
        try await second.value
        #expect(delivered.count == 2)
        #expect(output.queuedBytes == size)
    }

    @Test func closingWakesAWaitingSender() async throws {
        let (sink, output, _) = makeSink(limit: 100, grace: .seconds(10))
        let payload: [String: JSONValue] = ["data": .string(String(repeating: "x", count: 60))]
        try await sink.send(payload)
        let second = Task { try await sink.send(payload) }
        try await Task.sleep(for: .milliseconds(50))
        output.markClosed()
        await #expect(throws: VarlinkSinkError.peerGone) { try await second.value }
    }
}
