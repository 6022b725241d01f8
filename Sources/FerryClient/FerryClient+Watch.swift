import FerryAPI
import FerryJSON
import FerryVarlink

extension FerryClient {
    /// The `spaces` value that follows every space.
    public static let allSpaces = ["*"]

    /// Follows changes (`io.ferry.Store.Watch`, called with `more`).
    ///
    /// The first event is `.started` with the current cursor; then one `.change` per change,
    /// with the record at its latest version and the change's cursor. Pass a cursor as
    /// `since` to resume after it, across daemon restarts, with nothing skipped.
    ///
    /// The watch runs on a connection of its own (opened by this call, to this client's
    /// socket), so other calls on this client are never held up by it. Stop iterating (or
    /// cancel the task) to end it; that closes its connection.
    ///
    /// - Parameters:
    ///   - since: resume after this cursor; nil starts at the current end of the change log.
    ///   - spaces: the spaces to follow; nil for the private space, `FerryClient.allSpaces`
    ///     for all of them.
    ///   - entities: only changes of these entity kinds; nil for all.
    /// - Returns: a stream that throws only `FerryClientError`: a connection error, or
    ///   `.remote` with `ResumeFromCursor` (the watcher fell too far behind: watch again
    ///   with `since` set to the error's `cursor` parameter), `SpaceNotFound`, ...
    public func watch(since: Int64? = nil, spaces: [String]? = nil,
                      entities: [String]? = nil) -> AsyncThrowingStream<WatchEvent, Error> {
        var parameters: [String: JSONValue] = [:]
        parameters.setIfPresent("since", since.json)
        if let spaces { parameters["spaces"] = .array(spaces.map(JSONValue.string)) }
        if let entities { parameters["entities"] = .array(entities.map(JSONValue.string)) }
        let path = socketPath
        let parametersToSend = parameters
        return AsyncThrowingStream { continuation in
            let task = Task {
                do throws(FerryClientError) {
                    try await Self.runWatch(path: path, parameters: parametersToSend) { event in
                        continuation.yield(event)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Connects to `path`, calls Watch and hands each decoded event to `deliver` until the
    /// daemon ends the stream or the task is cancelled.
    private static func runWatch(path: String, parameters: [String: JSONValue],
                                 deliver: (WatchEvent) -> Void) async throws(FerryClientError) {
        let connection = try open(path)
        defer { connection.close() }
        do {
            let paths = [WireRecord.payloadPath(.key("record"))]
            for try await reply in connection.callMore("io.ferry.Store.Watch", parameters, capturing: paths) {
                guard let object = reply.parameters.objectValue else {
                    throw FerryClientError.malformedReply(WireError(field: "parameters", expected: "object"))
                }
                var event: WatchEvent
                do {
                    event = try WatchEvent(json: object)
                    if case .change(var record, let cursor) = event {
                        try record.resolvePayload(from: reply.captured)
                        event = .change(record, cursor: cursor)
                    }
                } catch {
                    throw FerryClientError.malformedReply(error)
                }
                deliver(event)
            }
        } catch let error as FerryClientError {
            throw error
        } catch let error as VarlinkClientError {
            throw FerryClientError(error, socketPath: path)
        } catch is CancellationError {
            return
        } catch {
            throw .protocolError(String(describing: error))
        }
    }
}
