import FerryJSON
import Glibc

/// The loop side of a `VarlinkClient`: writes calls, reads replies and hands each reply
/// to the oldest call still waiting (Varlink replies carry no ids; order is the match).
// @unchecked Sendable: all mutable state is touched only on `loop`'s thread; the client
// reaches it only through `loop.execute`.
final class ClientConnection: @unchecked Sendable, EventLoopHandler {
    /// Who waits for the next reply.
    enum Pending {
        case single(CheckedContinuation<Result<JSONValue, VarlinkClientError>, Never>)
        case stream(AsyncThrowingStream<JSONValue, Error>.Continuation)
        /// A call whose replies leave the objects at `paths` (from the top of the message) as text.
        case capturing(CheckedContinuation<Result<VarlinkClientReply, VarlinkClientError>, Never>, paths: [[JSONPathComponent]])
        case capturingStream(AsyncThrowingStream<VarlinkClientReply, Error>.Continuation, paths: [[JSONPathComponent]])

        var capturePaths: [[JSONPathComponent]] {
            switch self {
            case .single, .stream: return []
            case let .capturing(_, paths), let .capturingStream(_, paths): return paths
            }
        }
    }

    let loop: EventLoop
    private let fd: Int32
    private var token: UInt64 = 0
    private var interest: UInt32 = 0
    private var registered = false
    private var framer: VarlinkFramer
    private var outgoing = ByteQueue()
    private var pending: [Pending] = []
    private var pendingHead = 0
    private var closedWith: VarlinkClientError?
    /// The `VarlinkClient` is gone: close as soon as no reply is awaited.
    private var closeWhenIdle = false
    private let jsonLimits: JSONLimits
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)

    init(loop: EventLoop, fd: Int32, maxMessageSize: Int) {
        self.loop = loop
        self.fd = fd
        self.framer = VarlinkFramer(maxMessageSize: maxMessageSize)
        self.jsonLimits = JSONLimits(maxBytes: maxMessageSize, maxDepth: 256)
    }

    deinit {
        readBuffer.deallocate()
    }

    /// Registers with the loop. Loop thread; the first job the client submits.
    func register() {
        do {
            token = try loop.register(fd, events: LinuxFunctions.epollIn, handler: self)
            interest = LinuxFunctions.epollIn
            registered = true
        } catch {
            Syscall.close(fd)
            closedWith = .system(error)
        }
    }

    /// Queues a call's bytes and who waits for its reply (`nil` for oneway).
    /// - Returns: `nil` when queued, or the error the connection closed with.
    func send(_ bytes: [UInt8], awaiting: Pending?) -> VarlinkClientError? {
        if let closedWith { return closedWith }
        outgoing.append(bytes)
        if let awaiting { pending.append(awaiting) }
        flush()
        if let closedWith {
            // The write failed; `close` already failed what was pending, including this call.
            return awaiting == nil ? closedWith : nil
        }
        updateInterest()
        return nil
    }

    func handleEvents(_ events: UInt32) {
        let hungUp = events & (LinuxFunctions.epollHup | LinuxFunctions.epollErr) != 0
        if events & LinuxFunctions.epollIn != 0 || hungUp {
            readReplies(untilEndOfFile: hungUp)
        }
        if closedWith == nil && events & LinuxFunctions.epollOut != 0 { flush() }
        if closedWith == nil { updateInterest() }
    }

    /// Reads what the socket holds and delivers every whole reply. A short read took all of it
    /// (epoll, level-triggered, reports more), unless the peer hung up: then it reads to the end.
    private func readReplies(untilEndOfFile: Bool) {
        while closedWith == nil {
            let count: Int
            do throws(SystemCallError) {
                count = try Syscall.run("recv fd \(fd)") { recv(fd, readBuffer.baseAddress, readBuffer.count, 0) }
            } catch where error.isWouldBlock {
                return
            } catch {
                close(error.errno == ECONNRESET ? .connectionClosed : .system(error))
                return
            }
            if count == 0 {
                close(.connectionClosed)
                return
            }
            framer.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
            do {
                while closedWith == nil, let frame = try framer.nextMessage() {
                    deliver(frame)
                }
            } catch {
                close(.protocolViolation(error.description))
            }
            if !untilEndOfFile && count < readBuffer.count { return }
        }
    }

    private func deliver(_ frame: [UInt8]) {
        guard pendingHead < pending.count else {
            // An error sent before any call (a server over its connection limit says so, then
            // closes) ends the connection with that error; any other reply breaks the protocol.
            if let reply = try? VarlinkReplyMessage.decode(frame, limits: jsonLimits, capturing: []).message,
               let error = reply.varlinkError, !reply.continues {
                close(.remote(error))
            } else {
                close(.protocolViolation("a reply arrived with no call waiting for it"))
            }
            return
        }
        let waiting = pending[pendingHead]
        let reply: VarlinkReplyMessage
        let captures: [JSONCapture]
        do {
            (reply, captures) = try VarlinkReplyMessage.decode(frame, limits: jsonLimits, capturing: waiting.capturePaths)
        } catch {
            close(.protocolViolation(error.description))
            return
        }
        switch waiting {
        case let .capturing(continuation, _):
            finish(continuation, reply) {
                VarlinkClientReply(parameters: .object(reply.parameters),
                                   captured: VarlinkCapturedText(frame: frame, captures: captures, limits: jsonLimits))
            }
        case let .capturingStream(continuation, _):
            stream(continuation, reply) {
                VarlinkClientReply(parameters: .object(reply.parameters),
                                   captured: VarlinkCapturedText(frame: frame, captures: captures, limits: jsonLimits))
            }
        case let .single(continuation):
            finish(continuation, reply) { .object(reply.parameters) }
        case let .stream(continuation):
            stream(continuation, reply) { .object(reply.parameters) }
        }
    }

    /// Hands a plain call its reply (`value`, or the error the reply carries); a reply marked
    /// `continues` breaks the protocol.
    private func finish<T>(_ continuation: CheckedContinuation<Result<T, VarlinkClientError>, Never>,
                           _ reply: VarlinkReplyMessage, _ value: () -> T) {
        if reply.continues {
            close(.protocolViolation("a reply with \"continues\" answered a call made without \"more\""))
            return
        }
        popPending()
        if let error = reply.varlinkError {
            continuation.resume(returning: .failure(.remote(error)))
        } else {
            continuation.resume(returning: .success(value()))
        }
    }

    /// Hands a `more` call one reply (`value`); the last one, or an error, ends its stream.
    private func stream<T>(_ continuation: AsyncThrowingStream<T, Error>.Continuation,
                           _ reply: VarlinkReplyMessage, _ value: () -> T) {
        if let error = reply.varlinkError {
            popPending()
            continuation.finish(throwing: VarlinkClientError.remote(error))
            return
        }
        if !reply.continues { popPending() }
        continuation.yield(value())
        if !reply.continues { continuation.finish() }
    }

    private func popPending() {
        pendingHead += 1
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
            if closeWhenIdle { close() }
        }
    }

    /// Closes now if no reply is awaited, else after the last one (streams included)
    /// arrives. Loop thread.
    func closeWhenNothingPending() {
        closeWhenIdle = true
        if pendingHead == pending.count { close() }
    }

    private func flush() {
        guard registered, !outgoing.isEmpty else { return }
        do {
            _ = try outgoing.write(to: fd)
        } catch {
            guard error.errno == EPIPE || error.errno == ECONNRESET else { return close(.system(error)) }
            // The peer closed. What it sent first is still to be read: a server over its
            // connection limit says so before it closes, and that answers the first call.
            readReplies(untilEndOfFile: true)
            close(.connectionClosed)
        }
    }

    private func updateInterest() {
        guard registered else { return }
        var wanted = LinuxFunctions.epollIn
        if !outgoing.isEmpty { wanted |= LinuxFunctions.epollOut }
        guard wanted != interest else { return }
        do {
            try loop.modify(fd, token: token, events: wanted)
            interest = wanted
        } catch {
            close(.system(error))
        }
    }

    /// Closes the socket and fails every waiting call with `error`. Loop thread.
    func close(_ error: VarlinkClientError = .connectionClosed) {
        guard closedWith == nil else { return }
        closedWith = error
        if registered {
            loop.deregisterAndClose(fd, token: token)
            registered = false
        }
        let waiting = pending[pendingHead...]
        pending = []
        pendingHead = 0
        for entry in waiting {
            switch entry {
            case let .single(continuation): continuation.resume(returning: .failure(error))
            case let .stream(continuation): continuation.finish(throwing: error)
            case let .capturing(continuation, _): continuation.resume(returning: .failure(error))
            case let .capturingStream(continuation, _): continuation.finish(throwing: error)
            }
        }
    }
}
