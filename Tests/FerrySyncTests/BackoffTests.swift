import Testing
@testable import FerrySync

@Suite struct BackoffTests {
    /// The delay doubles per attempt up to the kind's ceiling and is drawn from the upper half
    /// of it; the extremes of the random draw give the bounds.
    @Test func delaysGrowToTheirKindsCeilingWithJitterInTheUpperHalf() {
        func delay(_ failure: SyncFailure, _ attempt: Int, _ draw: Double) -> Duration {
            Backoff.delay(after: failure, attempt: attempt) { _ in draw }
        }
        let unavailable = SyncFailure.transport(.unavailable("down"))
        #expect(delay(unavailable, 1, 0) == .milliseconds(500))
        #expect(delay(unavailable, 1, 1) == .seconds(1))
        #expect(delay(unavailable, 3, 1) == .seconds(4))
        // A host that is back is tried again within 30 s, however long it was away.
        #expect(delay(unavailable, 50, 1) == .seconds(30))
        #expect(delay(unavailable, 50, 0) == .seconds(15))
        #expect(delay(.transport(.quotaExceeded("full")), 50, 1) == .seconds(3600))
        #expect(delay(.transport(.unauthorized("no")), 1, 1) == .seconds(60))
        #expect(delay(.local("disk"), 50, 1) == .seconds(60))
        // A host's Retry-After is obeyed (plus up to 250 ms).
        #expect(delay(.transport(.rateLimited(retryAfter: .seconds(7), "slow")), 1, 0) == .seconds(7))
        #expect(delay(.transport(.rateLimited(retryAfter: nil, "slow")), 1, 1) == .seconds(5))
    }
}
