import FerryJSON
import Glibc

/// The running part of a `VarlinkServer`: the listener and every connection, all on one
/// event-loop thread.
// @unchecked Sendable: every mutable property is touched only on `loop`'s thread. Other
// threads (handler tasks, the VarlinkServer actor) only call `loop.execute` with jobs
// that capture this object, and read the immutable `let` properties.
final class ServerCore: @unchecked Sendable, EventLoopHandler {
    let loop: EventLoop
    let service: VarlinkService
    let configuration: VarlinkServerConfiguration
    let jsonLimits: JSONLimits
    /// What all connections together hold (`maxBufferedBytes`).
    let budget: BufferBudget
    private let peerPolicy: VarlinkPeerPolicy
    private let logger: VarlinkServerLogger
    /// Scratch space for `recv`, shared by all connections of this loop.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)

    private var listenerFD: Int32 = -1
    private var listenerToken: UInt64 = 0
    private var connections: [UInt64: ServerConnection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var draining = false
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []

    init(
        loop: EventLoop, service: VarlinkService, configuration: VarlinkServerConfiguration,
        peerPolicy: @escaping VarlinkPeerPolicy, logger: @escaping VarlinkServerLogger
    ) {
        self.loop = loop
        self.service = service
        self.configuration = configuration
        self.jsonLimits = JSONLimits(maxBytes: configuration.maxMessageSize, maxDepth: configuration.maxJSONDepth)
        self.budget = BufferBudget(limit: configuration.maxBufferedBytes, fairShare: configuration.fairShareBytes)
        self.peerPolicy = peerPolicy
        self.logger = logger
    }

    deinit {
        readBuffer.deallocate()
    }

    func log(_ event: VarlinkServerEvent) {
        logger(event)
    }

    // MARK: - Listener (loop thread)

    func startListening(_ fd: Int32) throws(SystemCallError) {
        listenerFD = fd
        listenerToken = try loop.register(fd, events: LinuxFunctions.epollIn, handler: self)
    }

    /// Readiness of the listening socket.
    func handleEvents(_ events: UInt32) {
        for _ in 0..<64 {
            let fd: Int32?
            do {
                fd = try UnixSocket.accept(listenerFD)
            } catch {
                log(.systemCallFailed(error))
                pauseAccepting()
                return
            }
            guard let fd else { return }
            adopt(fd)
        }
    }

    /// After an accept failure such as EMFILE the listener stays readable; pause it
    /// briefly instead of spinning.
    private func pauseAccepting() {
        guard listenerFD >= 0 else { return }
        try? loop.modify(listenerFD, token: listenerToken, events: 0)
        Task { [self] in
            try? await Task.sleep(for: .milliseconds(100))
            loop.execute { [self] in
                guard listenerFD >= 0 else { return }
                try? loop.modify(listenerFD, token: listenerToken, events: LinuxFunctions.epollIn)
            }
        }
    }

    private func adopt(_ fd: Int32) {
        guard !draining, connections.count < configuration.maxConnections else {
            if !draining {
                log(.connectionLimitReached(limit: configuration.maxConnections))
                // A new socket's send buffer takes a short reply whole.
                if let reply = configuration.connectionLimitReply {
                    _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                }
            }
            Syscall.close(fd)
            return
        }
        let peer = try? UnixSocket.peerCredentials(fd)
        let allowed = peer.map(peerPolicy) ?? false
        if !allowed { log(.peerRefused(peer)) }
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = ServerConnection(id: id, fd: fd, peer: peer, refused: !allowed, core: self)
        let events = LinuxFunctions.epollIn | LinuxFunctions.epollRdHup
        do {
            connection.token = try loop.register(fd, events: events, handler: connection)
        } catch {
            log(.systemCallFailed(error))
            Syscall.close(fd)
            return
        }
        connection.interest = events
        connections[id] = connection
        if !allowed { closeLater(connectionID: id, after: configuration.refusedPeerGrace) }
    }

    // MARK: - Batched calls (loop thread)

    private struct PendingBatch {
        var handler: VarlinkBatchHandler
        var items: [(connectionID: UInt64, callID: UInt64, call: VarlinkCall)]
    }
    private var batches: [String: PendingBatch] = [:]
    private var batchOrder: [String] = []

    /// Queues a call of a batched method; every call queued in this loop turn goes to the
    /// method's handler together at the end of the turn.
    func enqueueBatch(key: String, handler: @escaping VarlinkBatchHandler, call: VarlinkCall,
                      connectionID: UInt64, callID: UInt64) {
        if batchOrder.isEmpty { loop.atEndOfTurn { [self] in runBatches() } }
        if batches[key] == nil {
            batches[key] = PendingBatch(handler: handler, items: [])
            batchOrder.append(key)
        }
        batches[key]!.items.append((connectionID, callID, call))
    }

    private func runBatches() {
        let order = batchOrder, pending = batches
        batchOrder = []
        batches = [:]
        for key in order {
            guard let batch = pending[key] else { continue }
            let results = batch.handler(batch.items.map(\.call))
            for (i, item) in batch.items.enumerated() {
                let reply: [UInt8]?
                if item.call.oneway {
                    reply = nil
                } else if i < results.count {
                    switch results[i] {
                    case .success(let parameters): reply = parameters.encodedFinalReply()
                    case .failure(let error): reply = VarlinkReplyMessage(error).encoded()
                    }
                } else {
                    reply = VarlinkReplyMessage(VarlinkError("org.varlink.service.MethodNotImplemented",
                                                             parameters: ["method": .string(item.call.qualifiedMethod)])).encoded()
                }
                connections[item.connectionID]?.callFinished(callID: item.callID, outcome: .finished(finalReply: reply))
            }
        }
    }

    // MARK: - Jobs from handler tasks (loop thread)

    func callFinished(connectionID: UInt64, callID: UInt64, outcome: CallOutcome) {
        connections[connectionID]?.callFinished(callID: callID, outcome: outcome)
    }

    func deliverStreamed(connectionID: UInt64, callID: UInt64, bytes: [UInt8]) {
        connections[connectionID]?.deliverStreamed(callID: callID, bytes: bytes)
    }

    /// How long a connection holding replies it does not read keeps them once all connections
    /// together reached the cap.
    static let notReadingGrace = Duration.seconds(2)

    /// The budget is exceeded: closes the connections (other than `besides`) that hold more
    /// than their fair share of replies they have not read for `notReadingGrace`, the longest
    /// silent first, until the budget is no longer exceeded.
    func dropConnectionsNotReading(besides: UInt64) {
        let now = ContinuousClock.now
        let candidates = connections.values.filter { $0.id != besides && now - $0.lastRead >= Self.notReadingGrace }
            .sorted { $0.lastRead < $1.lastRead }
        for connection in candidates {
            guard budget.isExceeded else { return }
            _ = connection.dropIfNotReading(Self.notReadingGrace, now: now)
        }
    }

    func closeLater(connectionID: UInt64, after delay: Duration) {
        Task { [self] in
            try? await Task.sleep(for: delay)
            loop.execute { [self] in connections[connectionID]?.close() }
        }
    }

    /// Asks the connection, after `delay`, whether it is still in the middle of a message
    /// (`ServerConnection.checkIncompleteMessage`).
    func checkIncompleteMessage(connectionID: UInt64, after delay: Duration) {
        Task { [self] in
            try? await Task.sleep(for: delay)
            loop.execute { [self] in connections[connectionID]?.checkIncompleteMessage() }
        }
    }

    func connectionDidClose(_ id: UInt64) {
        connections[id] = nil
        if draining && connections.isEmpty {
            let waiters = drainWaiters
            drainWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }

    var connectionCount: Int { connections.count }

    // MARK: - Shutdown (loop thread unless noted)

    /// Stops accepting and lets every connection finish its running call, then close.
    func beginDrain() {
        draining = true
        if listenerFD >= 0 {
            loop.deregisterAndClose(listenerFD, token: listenerToken)
            listenerFD = -1
        }
        for connection in Array(connections.values) { connection.drain() }
    }

    /// Closes every connection now, cancelling running calls.
    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
    }

    /// Returns once `beginDrain` was called and every connection has closed. Any thread.
    func waitUntilDrained() async {
        await withCheckedContinuation { continuation in
            loop.execute { [self] in
                if draining && connections.isEmpty {
                    continuation.resume()
                } else {
                    drainWaiters.append(continuation)
                }
            }
        }
    }
}
