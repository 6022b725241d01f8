/// The query of a pull: `after`, `limit`, `wait`. Pure.
public struct PullParameters: Sendable, Equatable {
    public var after: Cursor
    public var limit: Int
    public var waitSeconds: Int

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
            guard wait.utf8.count <= 5, wait.utf8.allSatisfy({ (48...57).contains($0) }), let n = Int(wait), (0...maxWait).contains(n) else {
                throw .badRequest(code: "bad_wait", message: "wait= must be a whole number of seconds from 0 to \(maxWait)")
            }
            p.waitSeconds = n
        }
        return p
    }
}
