import Foundation
import XCTest
@testable import Sheaf

/// A run whose snapshots are pulled through a `SnapshotChannel`.
private func pulledRun(_ transport: ScriptedTransport, window: Int = 4,
                       list: ListDescription = anchorList()) throws -> (ListRun, SnapshotChannel<Snapshot>) {
    let queue = SnapshotChannel<Snapshot>()
    let run = try scriptedClient(transport) { $0.window = window }
        .makeList(list, keepsItems: false, into: queue) { ($0, true) }
    try run.start()
    return (run, queue)
}

final class SnapshotChannelTests: XCTestCase {
    func testAnAsyncTakerAndABlockingTakerWakeOnAPushAndSeeTheEndForEver() async throws {
        let channel = SnapshotChannel<Int>()
        let taken = Shared(0)
        channel.whenTaken({ taken.update { $0 += 1 } }, closed: {})
        let waiting = Task { await channel.next() }
        try await Task.sleep(nanoseconds: 20_000_000)   // it waits: nothing was pushed
        XCTAssertTrue(channel.push(1))
        guard case .snapshot(1) = await waiting.value else { return XCTFail("the push did not wake the async taker") }
        let blocked = Date()
        guard case .pending = channel.next(timeoutMilliseconds: 50) else { return XCTFail("nothing was there to take") }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(blocked), 0.045, "it waited its timeout")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) { _ = channel.push(2) }
        guard case .snapshot(2) = channel.next(timeoutMilliseconds: 5000) else { return XCTFail("the push did not wake the blocked taker") }
        channel.finish()
        for _ in 0..<3 {
            guard case .end = channel.next(timeoutMilliseconds: 0) else { return XCTFail("the end is seen by every later call") }
            guard case .end = await channel.next() else { return XCTFail("the end is seen by every later call") }
        }
        XCTAssertEqual(taken.value, 2, "each snapshot handed out is counted once")
    }

    func testClosingWakesAWaitingTakerWithTheEndAndRefusesLaterPushes() async throws {
        let channel = SnapshotChannel<Int>()
        let closed = Shared(0)
        channel.whenTaken({}, closed: { closed.update { $0 += 1 } })
        XCTAssertTrue(channel.push(1))
        let waiting = Task { () -> Bool in
            _ = await channel.next()                   // takes 1
            if case .end = await channel.next() { return true }
            return false
        }
        try await Task.sleep(nanoseconds: 20_000_000)
        channel.close()
        channel.close()
        let sawTheEnd = await waiting.value
        XCTAssertTrue(sawTheEnd)
        XCTAssertFalse(channel.push(2), "a closed channel takes nothing more: the run stops")
        XCTAssertEqual(closed.value, 1)
    }

    func testPulledSnapshotsArriveInOrderThenTheEndForEveryLaterCall() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 95)
        transport.on(scriptedList) { request, _ in api.reply(request).after(Int.random(in: 0...4)) }
        let (run, queue) = try pulledRun(transport)
        var ids: [Int] = []
        var pulls = 0
        pulling: while pulls < 1000 {
            pulls += 1
            switch queue.next(timeoutMilliseconds: 5000) {
            case .snapshot(let snapshot): ids += itemIDs(snapshot.delta.json)
            case .end: break pulling
            case .pending: XCTFail("nothing within 5 s")
            }
        }
        XCTAssertEqual(ids, Array(0..<95))
        XCTAssertEqual(outcome(of: run), .complete)
        for _ in 0..<3 {
            guard case .end = queue.next(timeoutMilliseconds: 0) else { return XCTFail("the end is not kept") }
        }
    }

    func testNothingYetIsPendingAfterTheTimeout() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .never }
        let (run, queue) = try pulledRun(transport)
        let started = Date()
        guard case .pending = queue.next(timeoutMilliseconds: 50) else { return XCTFail("expected pending") }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.04)
        guard case .pending = queue.next(timeoutMilliseconds: 0) else { return XCTFail("expected pending") }
        run.close()
    }

    func testAnUntakenQueueHoldsBackTheFetchingAndClosingItStopsTheRun() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 10_000)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let (run, queue) = try pulledRun(transport, window: 2)
        Thread.sleep(forTimeInterval: 0.3)
        // A window of pages waits untaken, and a window of pages was in flight when the fetching
        // was held back: far from 1,000 pages.
        let made = run.requestsMade
        XCTAssertLessThan(made, 40, "the fetching went on while nobody took the snapshots")
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(run.requestsMade, made, "the fetching is held back, not slowed")
        queue.close()
        XCTAssertEqual(outcome(of: run, within: 5)?.error?.code, .stopped)
        guard case .end = queue.next(timeoutMilliseconds: 1000) else { return XCTFail("a closed queue ends") }
    }

    func testAWaitingSnapshotOfManyPagesHoldsTheFetchingBackAlone() throws {
        // Every 16th page from page 2 is slow: the 15 after it come first, so each snapshot after
        // page one's carries 16 pages.
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 10_000)
        transport.on(scriptedList) { request, _ in
            let page = FakeAnchorAPI.query(request.url, "page").flatMap { Int($0) } ?? 1
            return api.reply(request).after(page % 16 == 2 ? 30 : 0)
        }
        let (run, queue) = try pulledRun(transport, window: 8)
        Thread.sleep(forTimeInterval: 0.6)
        let made = run.requestsMade
        var pages: [Int] = []
        while case .snapshot(let snapshot) = queue.next(timeoutMilliseconds: 0) { pages.append(snapshot.delta.pages) }
        XCTAssertEqual(pages.prefix(2), [1, 17], "page one, then pages 2 to 17 together")
        // Pages 2 to 17 are more than a window's worth waiting: at most the window in flight when
        // they came is sent after them. Counted in snapshots, eight of them waited (128 pages).
        XCTAssertLessThanOrEqual(made, 17 + 8, "the fetching went on while 17 pages waited untaken")
        queue.close()
        XCTAssertEqual(outcome(of: run, within: 5)?.error?.code, .stopped)
    }

    func testAFailingRunEndsThePullAfterTheSnapshotsBeforeTheFailure() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 40)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(3) ? .status(400) : api.reply(request)
        }
        let (run, queue) = try pulledRun(transport)
        var ids: [Int] = []
        pulling: for _ in 0..<100 {
            switch queue.next(timeoutMilliseconds: 5000) {
            case .snapshot(let snapshot): ids += itemIDs(snapshot.delta.json)
            case .end: break pulling
            case .pending: XCTFail("nothing within 5 s")
            }
        }
        XCTAssertEqual(ids, Array(0..<20))
        XCTAssertEqual(outcome(of: run)?.error?.code, .http)
    }

    func testThreeHundredStalledPulledListsLeaveEveryOtherListRunning() throws {
        // Each stalled pull used to park a libdispatch worker in its queue; at 256 the pool was
        // exhausted and every other list of the process stopped.
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 10_000)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let stalled = try (0..<300).map { _ in try pulledRun(transport, window: 2) }
        let deadline = Date().addingTimeInterval(10)
        // Every stalled list has delivered more snapshots than a window, nobody taking them.
        while stalled.contains(where: { $0.0.requestsMade < 3 }), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertFalse(stalled.contains { $0.0.requestsMade < 3 }, "each had page one and a window of pages answered")
        let other = try scriptedClient(transport).makeList(anchorList())
        try other.start()
        XCTAssertEqual(outcome(of: other, within: 10), .complete)
        for (run, queue) in stalled {
            queue.close()
            XCTAssertEqual(outcome(of: run, within: 5)?.error?.code, .stopped)
        }
    }
}
