/// The query of a pull: `after`, `limit`, `wait`, `skipDevice`. Pure.
public struct PullParameters: Sendable, Equatable {
    public var after: Cursor
    public var limit: Int
    public var waitSeconds: Int
    /// Leave out events this device sealed (its own pushes): 16 lowercase hex digits, the
    /// header's device id. The cursor still moves past them.
    public var skipDevice: [UInt8]?

    /// The longest `wait` a client may ask for; the relay waits at most its `MaxWaitSeconds`.
    public static let maxAskedWait = 3600

    /// A `wait` over `maxWait` (the relay's `MaxWaitSeconds`) is cut to it: a client cannot
    /// know the relay's setting, and a relay set lower must not refuse every long-poll.
    /// - Throws: `RelayError.badRequest` naming the parameter and what it allows.
    public static func parse(_ query: [String: String], maxWait: Int) throws(RelayError) -> PullParameters {
        var p = PullParameters(after: .start, limit: RelayConfiguration.defaultPullLimit, waitSeconds: 0)
        if let after = query["after"] {
            guard let c = Cursor(text: after) else {
                throw .badRequest(code: "bad_cursor", message: "after= must be a cursor a previous pull returned")
            }
            p.after = c
        }
        if let limit = query["limit"] {
            guard limit.utf8.count <= 4, limit.utf8.allSatisfy({ (48...57).contains($0) }), let n = Int(limit), (1...RelayConfiguration.maxPullLimit).contains(n) else {
                throw .badRequest(code: "bad_limit", message: "limit= must be a whole number from 1 to \(RelayConfiguration.maxPullLimit)")
            }
            p.limit = n
        }
        if let wait = query["wait"] {
            guard wait.utf8.count <= 5, wait.utf8.allSatisfy({ (48...57).contains($0) }), let n = Int(wait), (0...maxAskedWait).contains(n) else {
                throw .badRequest(code: "bad_wait", message: "wait= must be a whole number of seconds from 0 to \(maxAskedWait) "
                    + "(this relay waits at most \(maxWait))")
            }
            p.waitSeconds = min(n, maxWait)
        }
        if let device = query["skipDevice"] {
            let utf8 = Array(device.utf8)
            guard utf8.count == 16, utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
                throw .badRequest(code: "bad_device", message: "skipDevice= must be a device id: 16 lowercase hex digits")
            }
            p.skipDevice = stride(from: 0, to: 16, by: 2).map { UInt8(String(decoding: utf8[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
        }
        return p
    }
}
