import Testing
@testable import FerrySync

/// When the relay transport reads this device's own events back: through the first catch-up
/// after it starts (what a copy of this device pushed before a restore of its store is there),
/// and for any pull after a cursor below where that catch-up ended; never after it.
@Suite struct OwnEventReadingTests {
    @Test func ownEventsAreReadUntilTheFirstPageWithNothingMore() {
        var reading = OwnEventReading()
        #expect(!reading.mayLeaveOut(after: nil))
        #expect(!reading.mayLeaveOut(after: "40"))
        reading.answered(cursor: "60", more: true)
        #expect(!reading.mayLeaveOut(after: "60"), "a page with more behind it is no catch-up")
        reading.answered(cursor: "75", more: false)
        #expect(reading.caughtUpAt == 75)
        #expect(reading.mayLeaveOut(after: "75") && reading.mayLeaveOut(after: "4294967371"))
        // A page read again from before (applying it failed) still has them.
        #expect(!reading.mayLeaveOut(after: "60"))
        #expect(!reading.mayLeaveOut(after: nil) && !reading.mayLeaveOut(after: ""))
        // A later catch-up does not move the point back or on.
        reading.answered(cursor: "90", more: false)
        #expect(reading.caughtUpAt == 75)
    }

    @Test func anEmptyRelayIsCaughtUpAtOnce() {
        var reading = OwnEventReading()
        reading.answered(cursor: "0", more: false)
        #expect(reading.mayLeaveOut(after: "0") && reading.mayLeaveOut(after: nil))
    }

    /// Cursors that are not relay numbers are never taken as past the catch-up.
    @Test func aCursorThatIsNotANumberNeverLeavesOwnEventsOut() {
        var reading = OwnEventReading()
        reading.answered(cursor: "x1", more: false)
        #expect(reading.caughtUpAt == nil)
        reading.answered(cursor: "10", more: false)
        for odd in ["-5", "1e3", "99999999999999999999", " 12", "12 "] {
            #expect(!reading.mayLeaveOut(after: odd), "\(odd)")
        }
    }
}
