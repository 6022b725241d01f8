import FerryRelay
import Synchronization
import Testing

/// `LogThrottle` on a clock the test moves.
@Suite struct LogThrottleTests {
    final class Clock: Sendable {
        let millis = Atomic<Int64>(1_000)
        func advance(_ by: Int64) { millis.add(by, ordering: .relaxed) }
    }

    @Test func theFirstOfAKeyIsLoggedThenOneAnIntervalWithTheRepeatsCounted() {
        let clock = Clock()
        let throttle = LogThrottle(intervalMillis: 60_000, now: { clock.millis.load(ordering: .relaxed) })
        #expect(throttle.admit("a") == 0)
        #expect(throttle.admit("a") == nil)
        #expect(throttle.admit("b") == 0, "keys are counted apart")
        clock.advance(59_999)
        #expect(throttle.admit("a") == nil)
        clock.advance(1)
        #expect(throttle.admit("a") == 2, "two went unlogged since the first")
        #expect(throttle.admit("a") == nil)
        clock.advance(60_000)
        #expect(throttle.admit("a") == 1)
        #expect(throttle.admit("b") == 0)
    }

    @Test func aFloodOfKeysIsForgottenNotHeld() {
        let clock = Clock()
        let throttle = LogThrottle(intervalMillis: 60_000, maxKeys: 3, now: { clock.millis.load(ordering: .relaxed) })
        for key in ["a", "b", "c"] { #expect(throttle.admit(key) == 0) }
        #expect(throttle.admit("a") == nil)
        // A fourth key makes room by forgetting the others: "a" is logged again at once.
        #expect(throttle.admit("d") == 0)
        #expect(throttle.admit("a") == 0)
        #expect(throttle.admit("d") == nil)
    }
}
