import FerryJSON
import Glibc

/// One accepted client connection: reads and frames its calls, runs them one at a time
/// (so replies leave in call order, and a `more` stream holds back later calls until it
/// ends), and writes the replies.
///
/// Lives on the server's event-loop thread; handler tasks reach it only through
/// `loop.execute` (`callFinished`, `deliverStreamed`) and the `ConnectionOutputState`.
///
/// Memory is bounded: the framer holds at most one message (`maxMessageSize`), reading
/// pauses while a call runs and 64 KiB of later calls are buffered, and while the
/// client leaves more than `outputBufferLimit` bytes of replies unread no further
/// call starts. All connections together stay within `maxBufferedBytes` (`BufferBudget`),
/// and a message unfinished for `incompleteMessageTimeout` closes the connection.
final class ServerConnection: EventLoopHandler {
    let id: UInt64
    let fd: Int32
    var token: UInt64 = 0
    var interest: UInt32 = 0
    let peer: PeerCredentials?
    private unowned let core: ServerCore
    /// The peer policy refused this peer: answer its first message with
    /// PermissionDenied and close.
    private let refused: Bool
    let output: ConnectionOutputState
    private var framer: VarlinkFramer
    private var outgoing = ByteQueue()
    /// When the client last took reply bytes (or had none waiting): a connection over its fair
    /// share of the server's budget that has not read for a while is the first to go when the
    /// budget is exceeded (`dropIfNotReading`).
    private(set) var lastRead = ContinuousClock.now
    private var activeCall: (id: UInt64, task: Task<Void, Never>?, isOneway: Locked<Bool>)?
    private var nextCallID: UInt64 = 1
    private var readClosed = false
    private var closeWhenFlushed = false
    /// A message broke the protocol: no more input is read or started.
    private var broken = false
    private var draining = false
    /// The client closed its end: nothing we write can arrive. Buffered calls still run
    /// (so a oneway call sent just before exiting is not lost); replies are dropped.
    private var peerGone = false
    private(set) var closed = false
    /// The framer's bytes as last counted in the server's budget.
    private var accountedInput = 0
    /// Since when the framer has held part of a message and no whole one (nil: it has not).
    private var incompleteSince: ContinuousClock.Instant?
    private var incompleteCheckPending = false

    /// Later calls buffered while one runs before reading pauses.
    private static let pipelineHighWater = 64 << 10
    /// Reads per readiness event, so one busy client cannot starve the others.
    private static let readsPerEvent = 16

    init(id: UInt64, fd: Int32, peer: PeerCredentials?, refused: Bool, core: ServerCore) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.refused = refused
        self.core = core
        self.output = ConnectionOutputState(limit: core.configuration.outputBufferLimit, budget: core.budget)
        self.framer = VarlinkFramer(maxMessageSize: core.configuration.maxMessageSize)
    }

    // MARK: - Readiness

    func handleEvents(_ events: UInt32) {
        if events & LinuxFunctions.epollErr != 0 {
            close()
            return
        }
        if events & LinuxFunctions.epollHup != 0 {
            // For Unix sockets HUP means the peer closed both directions.
            hangUp()
            return
        }
        if events & (LinuxFunctions.epollIn | LinuxFunctions.epollRdHup) != 0 {
            readInput(untilEndOfFile: events & LinuxFunctions.epollRdHup != 0)
        }
        if !closed && events & LinuxFunctions.epollOut != 0 { flush() }
        if !closed { processInput() }
        if !closed { noteIncompleteMessage() }
        if !closed { updateInterest() }
        // After the turn's batched calls ran and were answered (`ServerCore.runBatches`, which
        // is queued before this).
        if peekedBytes > 0 { core.loop.atEndOfTurn { [self] in takePeekedBytes() } }
    }

    private func readInput(untilEndOfFile: Bool) {
        let buffer = core.readBuffer
        var reads = 0
        while !readClosed && (untilEndOfFile || reads < Self.readsPerEvent) {
            if !untilEndOfFile && activeCall != nil && framer.bufferedByteCount >= Self.pipelineHighWater { break }
            // The first read of a turn only looks (MSG_PEEK) when the bytes it finds can be
            // taken later (`takePeekedBytes`): see `peekedBytes`.
            let peek = reads == 0 && !untilEndOfFile && peekedBytes == 0
            let count: Int
            do throws(SystemCallError) {
                count = try Syscall.run("recv fd \(fd)") { recv(fd, buffer.baseAddress, buffer.count, peek ? Int32(MSG_PEEK) : 0) }
            } catch where error.isWouldBlock {
                break
            } catch {
                if error.errno != ECONNRESET { core.log(.systemCallFailed(error)) }
                readClosed = true
                if !peerGone { close() }
                return
            }
            if count == 0 {
                readClosed = true
                break
            }
            framer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            reads += 1
            if peek {
                peekedBytes = count
                // A short read saw all the socket held: it is taken at the end of the turn.
                if count < buffer.count { break }
                // More may be waiting: take these bytes now and read on as usual.
                takePeekedBytes()
                if closed { return }
                continue
            }
            if untilEndOfFile && framer.bufferedByteCount > core.configuration.maxMessageSize { break }
            // A short read took all the socket held; epoll (level-triggered) reports the next
            // bytes, so asking again would only cost a recv that answers EAGAIN.
            if !untilEndOfFile && count < buffer.count { break }
        }
        accountInput()
        if core.budget.isExceeded && accountedInput > core.budget.fairShare {
            core.log(.bufferBudgetExceeded(peer: peer, held: accountedInput, budget: core.budget.limit))
            close()
        }
    }

    /// Bytes the framer holds that are still in the socket, read with MSG_PEEK and taken from
    /// it at the end of the loop turn, after the calls they carried were answered.
    ///
    /// Why: taking bytes out of a Unix socket wakes whoever sleeps on the sender's end, and a
    /// client blocked reading its reply sleeps there. A plain recv of a request therefore wakes
    /// the client for nothing (it finds no reply and sleeps again), which costs the loop thread
    /// a cross-CPU wake-up while the request waits. Taken after the reply, the client is
    /// already awake and nobody is woken.
    private var peekedBytes = 0

    /// Reads and drops what the socket holds now, up to `limit` bytes, without waiting.
    private func discardReceived(upTo limit: Int) {
        let scratch = core.readBuffer
        var taken = 0
        while taken < limit {
            let n = recv(fd, scratch.baseAddress, min(scratch.count, limit - taken), Int32(MSG_DONTWAIT))
            if n > 0 {
                taken += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }

    /// Takes the peeked bytes out of the socket (they are in the framer already).
    private func takePeekedBytes() {
        guard peekedBytes > 0, !closed else {
            peekedBytes = 0
            return
        }
        let scratch = core.readBuffer
        var left = peekedBytes
        peekedBytes = 0
        while left > 0 {
            let n = recv(fd, scratch.baseAddress, min(left, scratch.count), 0)
            if n > 0 {
                left -= n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                // The bytes were there when peeked and only this connection reads them: this
                // is a reset; the next read sees it.
                return
            }
        }
    }

    /// Brings the server's budget up to date with what the framer holds.
    private func accountInput() {
        let held = framer.bufferedByteCount
        core.budget.add(held - accountedInput)
        accountedInput = held
    }

    /// Starts or stops the clock on an unfinished message: the framer holds bytes, no call
    /// runs and replies do not hold calls back, so those bytes are the start of a message
    /// still to come. A whole message resets it (`processBufferedCalls`).
    private func noteIncompleteMessage() {
        accountInput()
        let waiting = !readClosed && activeCall == nil && framer.bufferedByteCount > 0
            && outgoing.count < core.configuration.outputBufferLimit
        guard waiting else {
            incompleteSince = nil
            return
        }
        if incompleteSince == nil { incompleteSince = .now }
        scheduleIncompleteCheck()
    }

    private func scheduleIncompleteCheck() {
        guard !incompleteCheckPending, let since = incompleteSince else { return }
        incompleteCheckPending = true
        let left = core.configuration.incompleteMessageTimeout - (ContinuousClock.now - since)
        core.checkIncompleteMessage(connectionID: id, after: max(left, .zero))
    }

    /// Closes the connection if its message has been unfinished for the whole timeout;
    /// otherwise looks again when the timeout would be up.
    func checkIncompleteMessage() {
        incompleteCheckPending = false
        guard !closed, let since = incompleteSince else { return }
        let timeout = core.configuration.incompleteMessageTimeout
        if ContinuousClock.now - since >= timeout {
            core.log(.incompleteMessageTimedOut(peer: peer, held: framer.bufferedByteCount, timeout: timeout))
            close()
        } else {
            scheduleIncompleteCheck()
        }
    }

    /// Starts the next buffered calls while none is running, and sends what they answered
    /// at once.
    func processInput() {
        processBufferedCalls()
        if !closed && !outgoing.isEmpty { flush() }
    }

    private func processBufferedCalls() {
        while !closed && !broken && activeCall == nil {
            if draining {
                closeWhenFlushed = true
                flush()
                return
            }
            if outgoing.count >= core.configuration.outputBufferLimit { return }
            let frame: [UInt8]?
            do {
                frame = try framer.nextMessage()
            } catch {
                core.log(.protocolViolation(peer: peer, reason: error.description))
                closeAfterAnswers()
                return
            }
            if frame != nil { incompleteSince = nil }
            guard let frame else {
                if readClosed {
                    closeWhenFlushed = true
                    flush()
                }
                return
            }
            if refused {
                enqueueFinal(VarlinkReplyMessage(.permissionDenied).encoded())
                closeWhenFlushed = true
                flush()
                return
            }
            startCall(frame)
        }
    }

    private func startCall(_ frame: [UInt8]) {
        let callID = nextCallID
        nextCallID += 1
        let core = self.core
        let (prepared, oneway) = core.service.prepare(frame, peer: peer, isOutputClosed: output.isClosed, limits: core.jsonLimits)
        switch prepared {
        case let .done(outcome):
            // Answered on the loop: no task, no hand-off.
            switch outcome {
            case let .finished(finalReply):
                if let finalReply { enqueueFinal(finalReply) }
            case let .protocolViolation(reason):
                core.log(.protocolViolation(peer: peer, reason: reason))
                closeAfterAnswers()
            }
        case let .batch(key, handler, call):
            activeCall = (callID, nil, Locked(oneway))
            core.enqueueBatch(key: key, handler: handler, call: call, connectionID: id, callID: callID)
        case let .task(handler, call):
            let connectionID = id
            // Replies leave in the order they were delivered. One delivered from another
            // thread waits in the loop's job queue; one delivered on the loop thread (a change
            // pushed by the commit that made it) is written at once only while none of this
            // call's replies is still waiting there, and otherwise queues behind them.
            let waiting = Locked(0)
            let channel = ReplyChannel(
                output: output, slowPeerGrace: core.configuration.slowPeerGrace,
                deliver: { bytes in
                    let inline = core.loop.inLoop && waiting.withLock { $0 == 0 }
                    if inline {
                        core.deliverStreamed(connectionID: connectionID, callID: callID, bytes: bytes)
                    } else {
                        waiting.withLock { $0 += 1 }
                        core.loop.execute {
                            waiting.withLock { $0 -= 1 }
                            core.deliverStreamed(connectionID: connectionID, callID: callID, bytes: bytes)
                        }
                    }
                })
            let service = core.service
            let task = Task {
                let outcome = await service.run(handler, call, channel: channel)
                core.loop.execute { core.callFinished(connectionID: connectionID, callID: callID, outcome: outcome) }
            }
            activeCall = (callID, task, channel.isOneway)
        }
    }

    // MARK: - Replies (loop thread, from handler tasks)

    func callFinished(callID: UInt64, outcome: CallOutcome) {
        guard !closed, let active = activeCall, active.id == callID else { return }
        activeCall = nil
        switch outcome {
        case let .finished(finalReply):
            if let finalReply { enqueueFinal(finalReply) }
            if closed { return }
        case let .protocolViolation(reason):
            core.log(.protocolViolation(peer: peer, reason: reason))
            closeAfterAnswers()
            return
        }
        if output.isTooSlow {
            core.log(.slowPeerDisconnected(peer: peer))
            closeWhenFlushed = true
            core.closeLater(connectionID: id, after: core.configuration.slowPeerDrainTime)
        }
        flush()
        if !closed { processInput() }
        if !closed { noteIncompleteMessage() }
        if !closed { updateInterest() }
    }

    func deliverStreamed(callID: UInt64, bytes: [UInt8]) {
        guard !closed, !peerGone, activeCall?.id == callID else { return }
        outgoing.append(bytes)
        flush()
        if !closed { updateInterest() }
    }

    /// Queues a call's final reply (every call has one, answered on the loop or by a task);
    /// past the server's budget, keeps the total within it (`keepWithinBudget`), which may
    /// close this connection.
    private func enqueueFinal(_ bytes: [UInt8]) {
        guard !peerGone, !closed else { return }
        output.addUnconditionally(bytes.count)
        outgoing.append(bytes)
        if core.budget.isExceeded { keepWithinBudget() }
    }

    /// Replies nobody reads are what holds the server's memory: the connections sitting on
    /// them go first; this one goes too if that is not enough and it holds more than its share
    /// (so the total stays within the cap plus one reply).
    private func keepWithinBudget() {
        flush()
        if closed { return }
        core.dropConnectionsNotReading(besides: id)
        if core.budget.isExceeded, output.queuedBytes > core.budget.fairShare {
            core.log(.unreadRepliesDropped(peer: peer, held: output.queuedBytes, budget: core.budget.limit, stalled: .zero))
            close()
        }
    }

    /// Closes this connection when it holds more than its fair share of the server's budget in
    /// replies and has not read any for `notReadingFor`; true when it did.
    func dropIfNotReading(_ notReadingFor: Duration, now: ContinuousClock.Instant) -> Bool {
        guard !closed, !outgoing.isEmpty, output.queuedBytes > core.budget.fairShare, now - lastRead >= notReadingFor else { return false }
        core.log(.unreadRepliesDropped(peer: peer, held: output.queuedBytes, budget: core.budget.limit, stalled: now - lastRead))
        close()
        return true
    }

    private func flush() {
        guard !closed else { return }
        if outgoing.isEmpty { lastRead = .now }
        if !outgoing.isEmpty && !peerGone {
            do {
                let written = try outgoing.write(to: fd)
                if written > 0 {
                    output.didWrite(written)
                    lastRead = .now
                }
            } catch {
                if error.errno != EPIPE && error.errno != ECONNRESET { core.log(.systemCallFailed(error)) }
                hangUp()
                return
            }
        }
        if (outgoing.isEmpty || peerGone) && closeWhenFlushed && activeCall == nil { close() }
    }

    /// The client closed its end (HUP, or a write failed with EPIPE): take what it sent
    /// before leaving, stop watching the socket, drop replies, cancel the running call
    /// unless it is oneway, and close once the buffered calls are done.
    private func hangUp() {
        guard !peerGone, !closed else { return }
        if !readClosed { readInput(untilEndOfFile: true) }
        guard !closed else { return }
        peerGone = true
        readClosed = true
        outgoing = ByteQueue()
        output.markClosed()
        try? core.loop.pause(fd, token: token)
        if let active = activeCall, !active.isOneway.withLock({ $0 }) { active.task?.cancel() }
        processInput()
    }

    private func updateInterest() {
        guard !peerGone else { return }
        var wanted: UInt32 = 0
        if !readClosed {
            wanted |= LinuxFunctions.epollRdHup
            let room =
                activeCall == nil
                ? outgoing.count < core.configuration.outputBufferLimit
                : framer.bufferedByteCount < Self.pipelineHighWater
            if room && !closeWhenFlushed { wanted |= LinuxFunctions.epollIn }
        }
        if !outgoing.isEmpty { wanted |= LinuxFunctions.epollOut }
        guard wanted != interest else { return }
        do {
            try core.loop.modify(fd, token: token, events: wanted)
            interest = wanted
        } catch {
            core.log(.systemCallFailed(error))
            close()
        }
    }

    // MARK: - Shutdown

    /// Finishes the running call (if any), then closes; starts no new call.
    func drain() {
        draining = true
        if activeCall == nil {
            closeWhenFlushed = true
            flush()
        }
    }

    /// The input broke the protocol, so nothing after it can be read: the calls before it were
    /// answered (calls run one at a time), and those answers still go out before the close.
    private func closeAfterAnswers() {
        broken = true
        closeWhenFlushed = true
        flush()
    }

    /// Closes at once: cancels the running call's task and fails its sink.
    func close() {
        guard !closed else { return }
        // Bytes left unread in the socket make the kernel reset the connection instead of
        // ending it, and a reset discards the replies the client has not read yet (a refused
        // peer's PermissionDenied, the answers before a protocol violation): what is there now
        // is taken first (the peeked bytes are still there too), up to a bound.
        discardReceived(upTo: 1 << 20)
        closed = true
        core.loop.deregisterAndClose(fd, token: token)
        core.budget.add(-accountedInput)
        accountedInput = 0
        incompleteSince = nil
        output.markClosed()
        activeCall?.task?.cancel()
        activeCall = nil
        core.connectionDidClose(id)
    }
}
