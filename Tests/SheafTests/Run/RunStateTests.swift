import XCTest
@testable import Sheaf

private let base = "https://api.example.com/v1/things"

/// A page of `count` JSON numbers starting at `first`, with what it says of the list.
private func page(_ count: Int, from first: Int = 0, next: String? = nil, total: Int? = nil, url: String = base) -> Page {
    var body: [UInt8] = Array("[".utf8)
    var items: [Range<Int>] = []
    for number in first..<(first + count) {
        if number > first { body += Array(",".utf8) }
        let text = Array(String(number).utf8)
        items.append(body.count..<(body.count + text.count))
        body += text
    }
    body += Array("]".utf8)
    var page = Page(body: body, items: items, identities: Array(repeating: nil, count: count), next: next, total: total)
    page.url = url
    return page
}

private func pageURL(_ number: Int) -> String { "\(base)?page=\(number)&per_page=10" }

/// The machine of a run of a `?page=N` list from 1 (10 a page), asking `pagesAhead` pages with
/// page one, its consumer taking snapshots a window of `consumerWindow` behind at most.
private func machine(pagesAhead: Int = 1, consumerWindow: Int = 64, syncs: Bool = false, windowShare: Int = .max,
                     pageBudget: Int? = nil) -> RunState {
    let paging = Paging.pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 10)))
    let planner = PagePlanner(firstURL: pageURL(1), paging: paging, window: 8, maxPages: 10_000, pageBudget: pageBudget,
                              pagesAhead: pagesAhead)
    let assembler = Assembler(keepsItems: true, maxItems: nil, deduplicates: false)
    var description = ListDescription(path: "/v1/things")
    description.paging = paging
    let facts = RunState.Facts(partitionEnd: nil, consumerWindow: consumerWindow, maxBodyBytes: 64 << 20, syncs: syncs,
                               leads: false, windowShare: windowShare, firstURL: pageURL(1))
    return RunState(facts: facts, planner: planner, assembler: assembler, start: ResumePoint(url: pageURL(1)),
                    resolution: Detector.Resolution(description: description, detected: [], pagingDetected: false))
}

/// A moment with an origin window of `window`; `budget` requests left in all.
private final class Surroundings {
    var window: Int
    var budget: Int
    var groupShare: Int?

    init(window: Int = 4, budget: Int = .max, groupShare: Int? = nil) {
        (self.window, self.budget, self.groupShare) = (window, budget, groupShare)
    }

    var moment: RunState.Moment {
        RunState.Moment(originWindow: window, groupShare: groupShare) { [self] in
            guard budget > 0 else { return false }
            budget -= 1
            return true
        }
    }
}

private func arrived(_ index: Int, _ order: RunState.FetchOrder?, _ content: Page) -> RunState.ArrivedPage {
    RunState.ArrivedPage(index: index, serial: order?.serial ?? -1, url: content.url, bodyBytes: content.body.count,
                         page: content)
}

private extension RunState.Effects {
    func order(of index: Int) -> RunState.FetchOrder? { sends.first { $0.index == index } }
    var indices: [Int] { sends.compactMap(\.index) }
    var items: [Int] { snapshots.map(\.delta.items) }
}

final class RunStateTests: XCTestCase {
    func testTheStartSendsPageOneAloneAndFirstAtItsOrigin() {
        var run = machine()
        let effects = run.start(Surroundings().moment)
        XCTAssertEqual(effects.sends, [RunState.FetchOrder(serial: 1, index: 0, url: pageURL(1), maxBodyBytes: nil,
                                                           leads: true, held: false)])
        XCTAssertNil(effects.ending)
        XCTAssertNil(run.ending)
    }

    func testPageOneWithATotalIsDeliveredThenTheWindowOfPagesIsSentAndThePlanLogged() {
        var run = machine()
        let surroundings = Surroundings(window: 3)
        let start = run.start(surroundings.moment)
        let effects = run.arrived(arrived(0, start.order(of: 0), page(10, total: 100, url: pageURL(1))), surroundings.moment)
        XCTAssertEqual(effects.items, [10], "page one is a snapshot of its own")
        XCTAssertEqual(effects.indices, [1, 2, 3], "the origin's window of 3, no more")
        XCTAssertEqual(effects.sends.map(\.leads), [true, false, false], "only the page asked for alone goes first")
        XCTAssertEqual(effects.logsPlan, pageURL(1))
        XCTAssertEqual(run.snapshotDelivered(effects.snapshots[0], taken: true).silenced, false)
        XCTAssertEqual(run.delivered?.delta.totalItems, 10)
    }

    func testAnAnswerOfAnAbandonedFetchChangesNothing() {
        var run = machine()
        let surroundings = Surroundings()
        _ = run.start(surroundings.moment)
        let stale = RunState.ArrivedPage(index: 0, serial: 99, url: pageURL(1), bodyBytes: 10, page: page(10, total: 100))
        let effects = run.arrived(stale, surroundings.moment)
        XCTAssertTrue(effects.sends.isEmpty && effects.snapshots.isEmpty && effects.ending == nil)
        XCTAssertNil(run.delivered)
    }

    func testPagesPlannedWhileTheConsumerIsAWindowBehindAreHeldUntilItTakesASnapshot() {
        var run = machine(consumerWindow: 1)
        let surroundings = Surroundings(window: 2)
        let start = run.start(surroundings.moment)
        let first = run.arrived(arrived(0, start.order(of: 0), page(10, total: 100, url: pageURL(1))), surroundings.moment)
        XCTAssertEqual(first.sends.map(\.held), [true, true], "page one's snapshot is not taken yet: a window waits")
        let taken = run.snapshotConsumed()
        XCTAssertEqual(taken.releases, first.sends.map(\.serial), "taking it releases what was held")
        XCTAssertTrue(run.snapshotConsumed().releases.isEmpty, "each is released once")
    }

    func testAnAnswerThatCameAheadOfPageOneIsHeldThenHandedBackOnceItIsPlanned() {
        var run = machine(pagesAhead: 2)
        let surroundings = Surroundings()
        let start = run.start(surroundings.moment)
        XCTAssertEqual(start.indices, [0, 1])
        XCTAssertEqual(start.order(of: 1)?.maxBodyBytes, RunStart.aheadBodyCap(pagesAhead: 2), "a page ahead is capped")
        let two = start.order(of: 1)!
        let end = FetchEnd.failed(SheafError(.transport, "reset"))
        guard case .decided(let held) = run.fetchEnded(1, serial: two.serial, end, surroundings.moment) else {
            return XCTFail("a page's failure ahead of page one is not read")
        }
        XCTAssertTrue(held.sends.isEmpty && held.ending == nil, "held, not planned: page one decides what the list is")
        let one = run.arrived(arrived(0, start.order(of: 0), page(10, total: 30, url: pageURL(1))), surroundings.moment)
        XCTAssertEqual(one.replays.map(\.index), [1], "handed back once page one is planned")
        XCTAssertEqual(one.replays.map(\.serial), [two.serial])
    }

    func testTheRequestBudgetStopsThePlanInItsOrderAndTheListEndsWithThatReason() {
        var run = machine()
        let surroundings = Surroundings(window: 4, budget: 3)
        let start = run.start(surroundings.moment)
        let effects = run.arrived(arrived(0, start.order(of: 0), page(10, total: 100, url: pageURL(1))), surroundings.moment)
        XCTAssertEqual(effects.indices, [1, 2], "page one took a request: two are left, for pages 2 and 3 in order")
        var last = RunState.Effects()
        for (offset, order) in effects.sends.enumerated() {
            last = run.arrived(arrived(order.index!, order, page(10, from: 10 * (offset + 1), url: order.url)), surroundings.moment)
        }
        XCTAssertEqual(last.ending, .finished(.requestBudget))
        XCTAssertEqual(run.assembledResume.itemsBefore, 30)
        XCTAssertNotNil(run.assembledResume.url, "the list goes on from page 4")
    }

    func testAStopAbandonsEveryFetchAndLaterAnswersAreIgnored() {
        var run = machine()
        let surroundings = Surroundings(window: 3)
        let start = run.start(surroundings.moment)
        let planned = run.arrived(arrived(0, start.order(of: 0), page(10, total: 100, url: pageURL(1))), surroundings.moment)
        let stop = run.stop(SheafError(.cancelled, "cancelled"), byCallback: false, silencing: true, started: true)
        XCTAssertEqual(Set(stop.abandons), Set(planned.sends.map(\.serial)))
        XCTAssertEqual(stop.ending?.error?.code, .cancelled)
        let late = planned.sends[0]
        let after = run.arrived(arrived(1, late, page(10, from: 10, url: late.url)), surroundings.moment)
        XCTAssertTrue(after.snapshots.isEmpty && after.sends.isEmpty && after.ending == nil)
        XCTAssertTrue(run.stop(SheafError(.cancelled, "again"), byCallback: false, silencing: true, started: true).abandons.isEmpty)
    }

    func testAStopBeforeTheStartOnlySilences() {
        var run = machine()
        let effects = run.stop(SheafError(.cancelled, "cancelled"), byCallback: false, silencing: true, started: false)
        XCTAssertNil(effects.ending)
        XCTAssertTrue(run.silenced)
    }

    func testTheLastPageShortOfTheTotalFailsIncomplete() {
        var run = machine()
        let surroundings = Surroundings(window: 1)
        let start = run.start(surroundings.moment)
        let one = run.arrived(arrived(0, start.order(of: 0), page(10, total: 15, url: pageURL(1))), surroundings.moment)
        let two = one.order(of: 1)!
        let last = run.arrived(arrived(1, two, page(3, from: 10, url: two.url)), surroundings.moment)
        XCTAssertEqual(last.ending?.error?.code, .incomplete)
        XCTAssertTrue(last.ending?.error?.message.contains("15 items but 13") == true)
    }

    func testTheFinalOutcomeSaysACallbacksStopAndNeverEndsOKWithASnapshotDropped() {
        var stopped = machine()
        _ = stopped.start(Surroundings().moment)
        _ = stopped.stop(SheafError(.stopped, "asked"), byCallback: true, silencing: true, started: true)
        XCTAssertEqual(stopped.finalOutcome?.error?.code, .stopped)

        var dropped = machine()
        let surroundings = Surroundings()
        let start = dropped.start(surroundings.moment)
        let one = dropped.arrived(arrived(0, start.order(of: 0), page(5, total: 5, url: pageURL(1))), surroundings.moment)
        XCTAssertEqual(one.ending, .complete)
        // A cancel after the end was decided, before the consumer had the snapshot.
        _ = dropped.stop(SheafError(.cancelled, "late"), byCallback: false, silencing: true, started: true)
        XCTAssertTrue(dropped.snapshotDelivered(one.snapshots[0], taken: true).silenced)
        XCTAssertEqual(dropped.finalOutcome?.error?.code, .cancelled, "an OK list is always whole")
    }

    func testInFlightIsTheLeastOfTheOriginsWindowTheSharesAndASyncsOpening() {
        let run = machine(windowShare: 5)
        XCTAssertEqual(run.inFlightLimit(Surroundings(window: 8).moment), 5, "a partition's share")
        XCTAssertEqual(run.inFlightLimit(Surroundings(window: 3).moment), 3, "the origin's window")
        XCTAssertEqual(run.inFlightLimit(Surroundings(window: 8, groupShare: 2).moment), 2, "a group's share of guessed pages")
        XCTAssertEqual(machine(syncs: true).inFlightLimit(Surroundings(window: 8).moment), 1, "a sync opens from one")
    }
}
