import Dispatch
import Foundation
import XCTest
@testable import Sheaf

private final class Marker: Sendable {}

final class DeadlineClockTests: XCTestCase {
    func testDeadlinesFireInTheirTimesOrderAndNotBefore() {
        let clock = DeadlineClock()
        let fired = Locked<[(Int, UInt64)]>([])
        let done = DispatchSemaphore(value: 0)
        let start = DispatchTime.now().uptimeNanoseconds
        for milliseconds in [120, 40, 80, 0] {
            _ = Deadline(after: milliseconds, on: clock) {
                fired.withLock { $0.append((milliseconds, DispatchTime.now().uptimeNanoseconds - start)) }
                done.signal()
            }
        }
        for _ in 0..<4 { XCTAssertEqual(done.wait(timeout: .now() + 10), .success) }
        let order = fired.withLock { $0 }
        XCTAssertEqual(order.map(\.0), [0, 40, 80, 120])
        for (milliseconds, after) in order {
            XCTAssertGreaterThanOrEqual(after, UInt64(milliseconds) * 1_000_000, "\(milliseconds) ms fired early")
        }
        XCTAssertEqual(clock.counts.pending, 0)
    }

    func testAStoppedDeadlineNeverFiresAndLetsGoOfItsBodyAtOnce() {
        let clock = DeadlineClock()
        weak var held: Marker?
        let fired = Locked(false)
        let deadline: Deadline = {
            let marker = Marker()
            held = marker
            return Deadline(after: 50, on: clock) { _ = marker; fired.withLock { $0 = true } }
        }()
        XCTAssertNotNil(held, "the pending deadline holds its body")
        deadline.cancel()
        XCTAssertNil(held, "stopping it released the body")
        // A later deadline fires: the clock went past the stopped one without running it.
        let later = DispatchSemaphore(value: 0)
        _ = Deadline(after: 100, on: clock) { later.signal() }
        XCTAssertEqual(later.wait(timeout: .now() + 10), .success)
        XCTAssertFalse(fired.withLock { $0 })
        deadline.cancel() // twice: nothing
    }

    func testAnEarlierDeadlineSetWhileTheClockWaitsForALaterOneWakesIt() {
        let clock = DeadlineClock()
        let late = Deadline(after: 60_000, on: clock) { XCTFail("a minute passed") }
        Thread.sleep(forTimeInterval: 0.05) // the clock thread now waits for the minute
        let soon = DispatchSemaphore(value: 0)
        let setAt = DispatchTime.now()
        _ = Deadline(after: 20, on: clock) { soon.signal() }
        XCTAssertEqual(soon.wait(timeout: setAt + 30), .success, "it waited for the later deadline")
        late.cancel()
        XCTAssertEqual(clock.counts.pending, 0)
    }

    func testStoppedDeadlinesDoNotPileUpInTheHeap() {
        let clock = DeadlineClock()
        // As a long list's request timeouts: set, and stopped when each answer comes.
        for _ in 0..<10_000 { Deadline(after: 30_000, on: clock) {}.cancel() }
        let kept = (0..<100).map { _ in Deadline(after: 30_000, on: clock) {} }
        for deadline in kept.prefix(60) { deadline.cancel() }
        let counts = clock.counts
        XCTAssertEqual(counts.pending, 40)
        XCTAssertLessThanOrEqual(counts.entries, 2 * 40 + 64, "stopped entries are dropped once they are most of the heap")
        for deadline in kept.dropFirst(60) { deadline.cancel() }
    }
}
