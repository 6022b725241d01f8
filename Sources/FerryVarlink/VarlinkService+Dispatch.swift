import FerryJSON

/// What the connection does with one framed message, decided on the loop thread.
enum PreparedCall: Sendable {
    /// Answer at once (built-in methods, errors, inline handlers); nil for no reply.
    case done(CallOutcome)
    /// Queue it for the batch handler of its method at the end of this loop turn.
    case batch(key: String, handler: VarlinkBatchHandler, call: VarlinkCall)
    /// Run a task handler.
    case task(VarlinkMethodHandler, VarlinkCall)
}

extension VarlinkService {
    /// A call of a method with a direct decoder (`VarlinkMethod.direct`), when the message has
    /// the common shape (`DirectCallShape`: `{"method":"NAME","parameters":{...}}`, no other
    /// member, whitespace anywhere JSON allows it) and the decoder reads its parameters; nil
    /// otherwise, and the message takes the ordinary decoding.
    private func directCall(_ frame: [UInt8], peer: PeerCredentials?, limits: JSONLimits) -> (VarlinkBatchHandler, VarlinkCall)? {
        frame.withUnsafeBufferPointer { b -> (VarlinkBatchHandler, VarlinkCall)? in
            guard let shape = DirectCallShape(b) else { return nil }
            let name = UnsafeBufferPointer(rebasing: b[shape.name])
            guard let entry = directMethods.first(where: { $0.qualifiedName.elementsEqual(name) }),
                  let value = entry.decode(UnsafeBufferPointer(rebasing: b[shape.parameters]), limits) else { return nil }
            var call = VarlinkCall(interface: entry.interface, method: entry.method, parameters: [:], peer: peer)
            call.direct = value
            return (entry.handler, call)
        }
    }

    /// Runs a task handler for a call `prepare` resolved, turning its result into the reply.
    func run(_ handler: VarlinkMethodHandler, _ call: VarlinkCall, channel: ReplyChannel) async -> CallOutcome {
        channel.isOneway.withLock { $0 = call.oneway }
        if channel.output.isClosed && !call.oneway {
            // The client hung up before this call started: nobody will read a reply.
            return .finished(finalReply: nil)
        }
        let sink = VarlinkReplySink(channel: channel, more: call.more, oneway: call.oneway)
        let reply: VarlinkReplyMessage
        do throws(VarlinkError) {
            reply = VarlinkReplyMessage(parameters: try await handler(call, sink))
        } catch {
            reply = VarlinkReplyMessage(error)
        }
        sink.finish()
        if call.oneway || channel.output.isClosed { return .finished(finalReply: nil) }
        return .finished(finalReply: reply.encoded())
    }

    /// Decodes and resolves a call on the loop thread, and runs it there when its method is
    /// inline; task methods are left to `process`.
    func prepare(_ frame: [UInt8], peer: PeerCredentials?, isOutputClosed: Bool, limits: JSONLimits) -> (PreparedCall, Bool) {
        if !directMethods.isEmpty, let (handler, call) = directCall(frame, peer: peer, limits: limits) {
            if isOutputClosed { return (.done(.finished(finalReply: nil)), false) }
            return (.batch(key: call.qualifiedMethod, handler: handler, call: call), false)
        }
        let message: VarlinkCallMessage
        let captures: [JSONCapture]
        do {
            (message, captures) = try VarlinkCallMessage.decode(frame, limits: limits, capturing: capturePaths)
        } catch {
            guard let field = error.offendingField else { return (.done(.protocolViolation(error.description)), false) }
            return (.done(.finished(finalReply: VarlinkReplyMessage(.invalidParameter(field)).encoded())), false)
        }
        switch resolve(message, peer: peer) {
        case let .reply(parameters):
            return (.done(.finished(finalReply: message.oneway ? nil : VarlinkReplyMessage(parameters: parameters).encoded())), message.oneway)
        case let .failure(error):
            return (.done(.finished(finalReply: message.oneway ? nil : VarlinkReplyMessage(error).encoded())), message.oneway)
        case let .handler(method, resolved):
            let call: VarlinkCall
            do {
                call = try attach(captures, frame: frame, limits: limits, to: resolved)
            } catch {
                return (.done(.protocolViolation(VarlinkMessageError.invalidJSON(error).description)), false)
            }
            switch method.kind {
            case .task(let handler):
                return (.task(handler, call), call.oneway)
            case .inline(let handler):
                if isOutputClosed && !call.oneway { return (.done(.finished(finalReply: nil)), false) }
                let reply: [UInt8]
                do throws(VarlinkError) {
                    reply = try handler(call).encodedFinalReply()
                } catch {
                    reply = VarlinkReplyMessage(error).encoded()
                }
                return (.done(.finished(finalReply: call.oneway ? nil : reply)), call.oneway)
            case .batch(let handler):
                if isOutputClosed && !call.oneway { return (.done(.finished(finalReply: nil)), false) }
                return (.batch(key: call.qualifiedMethod, handler: handler, call: call), call.oneway)
            }
        }
    }
}
