import FerryJSON

extension VarlinkService {
    /// Decodes, resolves and runs one call; the single place where call-level failures
    /// become wire replies.
    ///
    /// Malformed calls that are JSON objects (no `method`, wrongly typed flags or
    /// parameters) are answered with `org.varlink.service.InvalidParameter` naming the
    /// field. Errors are not sent for `oneway` calls: the spec forbids any reply to them.
    /// Calls still buffered when the client hung up run only if they are `oneway`.
    func process(
        _ frame: [UInt8], peer: PeerCredentials?, channel: ReplyChannel, limits: JSONLimits
    ) async -> CallOutcome {
        let message: VarlinkCallMessage
        do {
            message = try VarlinkCallMessage.decode(frame, limits: limits)
        } catch {
            guard let field = error.offendingField else { return .protocolViolation(error.description) }
            return .finished(finalReply: VarlinkReplyMessage(.invalidParameter(field)).encoded())
        }
        channel.isOneway.withLock { $0 = message.oneway }
        switch resolve(message, peer: peer) {
        case let .reply(parameters):
            return .finished(finalReply: message.oneway ? nil : VarlinkReplyMessage(parameters: parameters).encoded())
        case let .failure(error):
            return .finished(finalReply: message.oneway ? nil : VarlinkReplyMessage(error).encoded())
        case let .handler(method, call):
            if channel.output.isClosed && !call.oneway {
                // The client hung up before this call started: nobody will read a reply.
                return .finished(finalReply: nil)
            }
            let sink = VarlinkReplySink(channel: channel, more: call.more, oneway: call.oneway)
            let reply: VarlinkReplyMessage
            do throws(VarlinkError) {
                reply = VarlinkReplyMessage(parameters: try await method.handler(call, sink))
            } catch {
                reply = VarlinkReplyMessage(error)
            }
            sink.finish()
            if call.oneway || channel.output.isClosed { return .finished(finalReply: nil) }
            return .finished(finalReply: reply.encoded())
        }
    }
}
