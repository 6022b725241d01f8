import FerryJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Synchronization

/// The https helper's side (`ferryd --https-helper`, started by `SessionHelper`): it makes each
/// request it is sent with URLSession (`SessionCall`), several at once, and sends back the
/// reply or the error; a cancel frame cancels a request in flight. It ends when ferryd closes
/// its end of the socket (ferryd stopped, or gave up on it).
///
/// It exists so that FoundationNetworking's traps (an answer cut inside its head ends the
/// process: "Transfer completed, but there's no response") end this process, not ferryd.
public enum SessionHelperService {
    /// Serves the socket at `fd` until its other end closes; the exit code.
    public static func run(fd: Int32) async -> Int32 {
        // Started as /proc/self/exe, it would be "exe" to ps and pgrep.
        try? "ferryd-https".write(toFile: "/proc/self/comm", atomically: false, encoding: .utf8)
        let channel = SessionHelperChannel(fd: fd)
        let shared = Shared()
        let code: Int32 = await withCheckedContinuation { done in
            let reader = Thread {
                while true {
                    let frame: SessionHelperFrame?
                    do { frame = try channel.read() } catch { done.resume(returning: 1); return }
                    guard let frame else { done.resume(returning: 0); return }
                    // Asked whether it is alive: answered by this thread, whatever the requests do.
                    if frame.header["op"]?.stringValue == "ping" {
                        channel.write(SessionHelperFrame(header: ["pong": true]))
                        continue
                    }
                    guard let id = frame.header["id"]?.intValue, let op = frame.header["op"]?.stringValue else { continue }
                    if op == "cancel" {
                        shared.tasks.withLock { $0[id]?.cancel() }
                        continue
                    }
                    shared.tasks.withLock { running in
                        running[id] = Task {
                            let reply = await perform(op, frame, sessions: shared.sessions)
                            shared.tasks.withLock { _ = $0.removeValue(forKey: id) }
                            var header = reply.header.objectValue ?? [:]
                            header["id"] = .int(id)
                            channel.write(SessionHelperFrame(header: .object(header), body: reply.body))
                        }
                    }
                }
            }
            reader.name = "https-helper"
            reader.start()
        }
        return code
    }

    /// What the requests in flight share: a URLSession per timeout, and each request's task
    /// (for a cancel frame).
    private final class Shared: Sendable {
        let sessions = Mutex<[Int: URLSession]>([:])
        let tasks = Mutex<[Int64: Task<Void, Never>]>([:])
    }

    /// Makes one request; its reply frame (without the id).
    private static func perform(_ op: String, _ frame: SessionHelperFrame, sessions: borrowing Mutex<[Int: URLSession]>) async -> SessionHelperFrame {
        let h = frame.header
        guard let urlText = h["url"]?.stringValue, let url = URL(string: urlText) else {
            return failure(URLError(.badURL))
        }
        var request = URLRequest(url: url)
        request.httpMethod = h["method"]?.stringValue ?? "GET"
        for (name, value) in h["headers"]?.objectValue ?? [:] {
            if let value = value.stringValue { request.setValue(value, forHTTPHeaderField: name) }
        }
        if op == "data", h["hasBody"]?.boolValue == true { request.httpBody = Data(frame.body) }
        let seconds = Int(h["timeout"]?.intValue ?? 60)
        let session = sessions.withLock { made in
            if let s = made[seconds] { return s }
            let s = RelaySession.makeURLSession(timeout: .seconds(seconds))
            made[seconds] = s
            return s
        }
        do {
            switch op {
            case "data":
                let (data, response) = try await SessionCall.data(session, request)
                return reply(response, body: [UInt8](data))
            case "upload":
                guard let file = h["file"]?.stringValue else { return failure(URLError(.fileDoesNotExist)) }
                let (data, response) = try await SessionCall.upload(session, request, fromFile: URL(fileURLWithPath: file))
                return reply(response, body: [UInt8](data))
            case "download":
                guard let to = h["to"]?.stringValue else { return failure(URLError(.cannotCreateFile)) }
                return reply(try await SessionCall.download(session, request, to: URL(fileURLWithPath: to)), body: [])
            default:
                return failure(URLError(.unsupportedURL))
            }
        } catch {
            return failure(error)
        }
    }

    private static func reply(_ response: URLResponse, body: [UInt8]) -> SessionHelperFrame {
        guard let http = response as? HTTPURLResponse else { return failure(URLError(.badServerResponse)) }
        var headers: [String: JSONValue] = [:]
        for (k, v) in http.allHeaderFields {
            if let k = k as? String, let v = v as? String { headers[k] = .string(v) }
        }
        // A body over the cap is not read by ferryd anyway (`RelayHTTP.maxReplyBytes`).
        let kept = body.count > RelayHTTP.maxReplyBytes ? [] : body
        return SessionHelperFrame(header: ["status": .int(Int64(http.statusCode)), "headers": .object(headers)], body: kept)
    }

    private static func failure(_ error: any Error) -> SessionHelperFrame {
        let code = (error as? URLError)?.code.rawValue ?? URLError.Code.unknown.rawValue
        let message = ((error as NSError).userInfo[NSLocalizedDescriptionKey] as? String) ?? "\(error)"
        return SessionHelperFrame(header: ["error": ["code": .int(Int64(code)), "message": .string(String(message.prefix(1000)))]])
    }
}
