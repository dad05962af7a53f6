import Foundation
import XCTest
@testable import Sheaf

/// Collects a group's deltas as they come.
private final class DeltaLog: @unchecked Sendable {
    private let lock = NSLock()
    private var deltas: [GroupDelta] = []
    private var inside = 0
    private(set) var overlaps = 0

    func add(_ delta: GroupDelta) {
        lock.lock()
        inside += 1
        if inside > 1 { overlaps += 1 }
        lock.unlock()
        Thread.sleep(forTimeInterval: 0.0002) // a callback that takes a moment: overlaps would show
        lock.lock()
        deltas.append(delta)
        inside -= 1
        lock.unlock()
    }

    var all: [GroupDelta] { lock.withLock { deltas } }

    /// The ids each list delivered, by list.
    func ids() -> [Int: [Int]] {
        var ids: [Int: [Int]] = [:]
        for delta in all {
            guard let json = delta.snapshot?.delta.json,
                  let items = try? JSONSerialization.jsonObject(with: Data(json)) as? [[String: Any]] else { continue }
            ids[delta.list, default: []] += items.compactMap { $0["id"] as? Int }
        }
        return ids
    }
}

/// A parent list of `owners` (`{"items": [{"id": k, "name": "owner-k"}...]}`, 7 a page, no total)
/// whose children are /v1/owners/owner-k/things, each of `things(k)` anchor items.
private func ownersAPI(_ transport: ScriptedTransport, owners: Int, things: @escaping @Sendable (Int) -> Int,
                       repeatEach: Bool = false, delayMilliseconds: Int? = nil) {
    transport.on("\(scriptedBase)/v1/owners") { request, _ in
        let page = FakeAnchorAPI.query(request.url, "page").flatMap(Int.init) ?? 1
        let start = (page - 1) * 7
        var ids = start < owners ? Array(start..<min(start + 7, owners)) : []
        if repeatEach { ids += ids } // every owner twice on its page
        let items = ids.map { #"{"id":\#($0),"name":"owner-\#($0)"}"# }.joined(separator: ",")
        let next = start + 7 < owners ? #""\#(FakeAnchorAPI.settingQuery(request.url, "page", String(page + 1)))""# : "null"
        let reply = ScriptedReply.json(#"{"items":[\#(items)],"next_page":\#(next)}"#)
        return delayMilliseconds.map { reply.after($0) } ?? reply
    }
    for owner in 0..<owners {
        let api = FakeAnchorAPI(count: things(owner))
        transport.on("\(scriptedBase)/v1/owners/owner-\(owner)/things") { request, _ in
            let reply = ScriptedReply.json(api.body(request.url))
            return delayMilliseconds.map { reply.after($0) } ?? reply
        }
    }
}

private func ownersList() -> ListDescription {
    var description = ListDescription(path: "/v1/owners")
    description.signals[.items] = .body(JSONPointer("/items")!)
    description.signals[.next] = .body(JSONPointer("/next_page")!)
    description.paging = .next
    return description.pinningTheRest()
}

final class ListGroupTests: XCTestCase {
    func testAFanOutGivesEveryChildOnceWholeTaggedInOrderPerChild() throws {
        let transport = ScriptedTransport(delayMilliseconds: 1)
        ownersAPI(transport, owners: 30, things: { $0 * 3 % 41 }, repeatEach: true)
        let group = try scriptedClient(transport).makeGroup()
        XCTAssertEqual(try group.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things"],
                                         child: anchorList("")), 0)
        let log = DeltaLog()
        try group.start { log.add($0); return true }
        XCTAssertEqual(try group.wait(), .complete)
        XCTAssertEqual(group.count, 31, "each owner once, though the parent names every owner twice")
        XCTAssertEqual(log.overlaps, 0)
        let ids = log.ids()
        for index in 1...30 {
            let tag = try XCTUnwrap(group.tag(at: index))
            let owner = try XCTUnwrap(Int(tag.dropFirst("owner-".count)))
            XCTAssertEqual(ids[index] ?? [], Array(0..<(owner * 3 % 41)), "\(tag): whole, in order")
            let ends = log.all.filter { $0.list == index && $0.outcome != nil }
            XCTAssertEqual(ends.map(\.outcome), [.complete])
            XCTAssertEqual(log.all.last { $0.list == index }?.outcome, .complete, "the end is the list's last delta")
        }
        XCTAssertNil(ids[0], "a parent's items are not delivered")
        XCTAssertEqual(log.all.filter { $0.list == 0 }.map(\.outcome), [.complete])
    }

    func testOrderedDeltasComeListAfterListAndTheWaitingOnesHoldBack() throws {
        let transport = ScriptedTransport()
        // Child 0 is slow; the others answer at once and must wait their turn. A waiting list
        // stops asking once a window (4) of its pages waits in snapshots; before that its
        // planner may run two windows past its first missing page (pages kept ahead of a slow
        // one): 3 + 8 pages at most, whatever order its pages come back in.
        ownersAPI(transport, owners: 6, things: { _ in 200 })
        transport.on("\(scriptedBase)/v1/owners/owner-0/things") { request, _ in
            ScriptedReply.json(FakeAnchorAPI(count: 200).body(request.url)).after(20)
        }
        let client = try scriptedClient(transport) { $0.window = 4 }
        let group = client.makeGroup(ListGroup.Options(ordered: true))
        try group.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things"], child: anchorList(""))
        let log = DeltaLog()
        let heldBack = Locked(true)
        try group.start { delta in
            if delta.list == 1, delta.snapshot != nil, delta.snapshot!.delta.totalItems <= 10 {
                // While owner-0 still streams, owner-1 has asked for at most three windows less one
                // of its 20 pages.
                let sent = transport.requests.filter { $0.url.contains("owner-1/") }.count
                heldBack.withLock { $0 = $0 && sent <= 3 * 4 - 1 }
            }
            log.add(delta)
            return true
        }
        XCTAssertEqual(try group.wait(), .complete)
        let order = log.all.filter { $0.list > 0 }.map(\.list)
        XCTAssertEqual(order, order.sorted(), "children list after list")
        XCTAssertEqual(log.all.filter { $0.list > 0 }.map(\.tag).reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } },
                       (0..<6).map { "owner-\($0)" }, "in the parent's order")
        XCTAssertTrue(heldBack.withLock { $0 })
    }

    func testOneListFailingLeavesTheOthersWholeAndFailFastCancelsThem() throws {
        let transport = ScriptedTransport(delayMilliseconds: 2)
        transport.on("\(scriptedBase)/v1/things") { request, _ in .json(FakeAnchorAPI(count: 95).body(request.url)) }
        transport.on("\(scriptedBase)/v1/gone") { _, _ in .status(404, body: #"{"message":"Not Found"}"#) }
        let client = try scriptedClient(transport)
        let group = client.makeGroup()
        try group.add(anchorList("/v1/things"), tag: "a")
        try group.add(anchorList("/v1/gone"))
        try group.add(anchorList("/v1/things?x=1"), tag: "c")
        let log = DeltaLog()
        try group.start { log.add($0); return true }
        let outcome = try group.wait()
        XCTAssertEqual(outcome.error?.code, .partial)
        XCTAssertTrue(outcome.error?.message.hasPrefix("1 of 3 lists failed") == true, outcome.error?.message ?? "")
        XCTAssertEqual(log.ids()[0], Array(0..<95))
        XCTAssertEqual(log.ids()[2], Array(0..<95))
        XCTAssertEqual(log.all.first { $0.list == 1 }?.tag, "/v1/gone", "a list without a tag is tagged with its path")
        XCTAssertEqual(group.run(at: 1)?.outcome?.error?.httpStatus, 404)

        let slow = ScriptedTransport(delayMilliseconds: 30)
        slow.on("\(scriptedBase)/v1/things") { request, _ in .json(FakeAnchorAPI(count: 500).body(request.url)) }
        slow.on("\(scriptedBase)/v1/gone") { _, _ in ScriptedReply.status(404, body: "{}").after(1) }
        let failFast = try scriptedClient(slow).makeGroup(ListGroup.Options(failFast: true))
        try failFast.add(anchorList("/v1/things"))
        try failFast.add(anchorList("/v1/gone"))
        try failFast.start { _ in true }
        XCTAssertEqual(try failFast.wait().error?.httpStatus, 404)
        XCTAssertEqual(failFast.run(at: 0)?.outcome?.error?.code, .cancelled)
    }

    func testEveryListOfAGroupSendsThroughTheClientsOneWindow() throws {
        let transport = ScriptedTransport(delayMilliseconds: 3)
        ownersAPI(transport, owners: 60, things: { 25 + $0 % 7 })
        let client = try scriptedClient(transport) { $0.window = 5 }
        let group = client.makeGroup()
        try group.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things"], child: anchorList(""))
        try group.start { _ in true }
        XCTAssertEqual(try group.wait(), .complete)
        XCTAssertEqual(group.count, 61)
        XCTAssertLessThanOrEqual(transport.maxOutstanding, 5, "60 lists sent what one list would")
        XCTAssertGreaterThanOrEqual(transport.maxOutstanding, 4)
    }

    func testAPulledGroupAndACallbackThatStops() throws {
        let transport = ScriptedTransport(delayMilliseconds: 1)
        ownersAPI(transport, owners: 10, things: { $0 * 5 })
        let group = try scriptedClient(transport).makeGroup()
        try group.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things"], child: anchorList(""))
        try group.startPulling()
        var items = 0, ends = 0
        pulling: while true {
            switch group.next(timeoutMilliseconds: 5_000) {
            case .snapshot(let delta):
                items += delta.snapshot?.delta.items ?? 0
                ends += delta.outcome == nil ? 0 : 1
            case .end: break pulling
            case .pending: return XCTFail("no delta within 5 s")
            }
        }
        XCTAssertEqual(try group.wait(), .complete)
        XCTAssertEqual(items, (0..<10).map { $0 * 5 }.reduce(0, +))
        XCTAssertEqual(ends, 11)

        let stopping = try scriptedClient(transport).makeGroup()
        try stopping.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things"], child: anchorList(""))
        let calls = Locked(0)
        try stopping.start { _ in calls.withLock { $0 += 1; return $0 < 2 } }
        XCTAssertEqual(try stopping.wait().error?.code, .stopped)
        XCTAssertEqual(calls.withLock { $0 }, 2, "nothing is delivered after the callback asked to stop")
    }

    func testAListWalkedPageByPageIsNotHeldBackByListsWithPagesToSpare() throws {
        // Four lists of 40 pages fill a window of 8 with pages they know exist; a list walked by
        // next links asks for one page at a time. Each of its pages goes at the next turn, not
        // behind the pages the others asked for in batches.
        let transport = ScriptedTransport(delayMilliseconds: 20)
        transport.on("\(scriptedBase)/v1/things") { request, _ in .json(FakeAnchorAPI(count: 400).body(request.url)) }
        for page in 0..<6 {
            let next = page < 5 ? "\"/v1/chain?cursor=\(page + 1)\"" : "null"
            transport.on("\(scriptedBase)/v1/chain" + (page == 0 ? "" : "?cursor=\(page)")) { _, _ in
                .json(#"{"items":[{"id":\#(page)}],"next_page":\#(next)}"#)
            }
        }
        let client = try scriptedClient(transport) {
            $0.window = 8
            $0.adaptsWindow = false
        }
        let group = client.makeGroup()
        for list in ["a", "b", "c", "d"] { try group.add(anchorList("/v1/things?list=\(list)")) }
        try group.add(linkedList("/v1/chain"))
        try group.start { _ in true }
        XCTAssertEqual(try group.wait(), .complete)
        let urls = transport.requests.map(\.url)
        XCTAssertEqual(urls.count, 166)
        let lastOfTheChain = try XCTUnwrap(urls.lastIndex { $0.contains("/v1/chain") })
        // Here its last page went out 63rd to 65th of the 166 requests in 3 runs (66th to 84th
        // first come, first served): it ends in the first half, long before the others.
        XCTAssertLessThan(lastOfTheChain, urls.count / 2, "the chain's last page went out behind \(lastOfTheChain) others")
        XCTAssertLessThanOrEqual(transport.maxOutstanding, 8)
    }

    func testEveryListStartsAtOnceAndAGroupCancelledEndsEveryListCancelled() throws {
        let transport = ScriptedTransport(delayMilliseconds: 20)
        transport.on("\(scriptedBase)/v1/things") { request, _ in .json(FakeAnchorAPI(count: 300).body(request.url)) }
        let client = try scriptedClient(transport) { $0.window = 2 }
        let group = client.makeGroup()
        for k in 0..<6 { try group.add(anchorList("/v1/things?list=\(k)")) }
        try group.start { _ in true }
        Thread.sleep(forTimeInterval: 0.1)
        // A window of 2, and no list waits for another to end: each list's page one goes before
        // the pages after it of any list.
        let firstPages = transport.requests.prefix(8).filter { FakeAnchorAPI.query($0.url, "page") == "1" }
        XCTAssertEqual(Set(firstPages.compactMap { FakeAnchorAPI.query($0.url, "list") }), ["0", "1", "2", "3", "4", "5"])
        group.cancel()
        XCTAssertEqual(try group.wait().error?.code, .cancelled)
        for k in 0..<6 { XCTAssertEqual(group.run(at: k)?.outcome?.error?.code, .cancelled) }
        XCTAssertLessThanOrEqual(transport.maxOutstanding, 2)
    }

    func testAnItemWithoutTheValueIsSkippedOrFailsItsParentAndMisuseIsRefused() throws {
        let transport = ScriptedTransport()
        transport.on("\(scriptedBase)/v1/owners") { _, _ in
            .json(#"{"items":[{"name":"owner-0"},{"id":1},{"name":null},{"name":"owner-1"}],"next_page":null}"#)
        }
        for owner in 0..<2 {
            transport.on("\(scriptedBase)/v1/owners/owner-\(owner)/things") { request, _ in .json(FakeAnchorAPI(count: 3).body(request.url)) }
        }
        let client = try scriptedClient(transport)
        let skipping = client.makeGroup()
        try skipping.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things"], child: anchorList(""))
        try skipping.start { _ in true }
        XCTAssertEqual(try skipping.wait(), .complete)
        XCTAssertEqual(skipping.count, 3)

        let failing = client.makeGroup(ListGroup.Options(missingValueFails: true))
        try failing.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things"], child: anchorList(""))
        try failing.start { _ in true }
        XCTAssertEqual(try failing.wait().error?.code, .partial)
        XCTAssertEqual(failing.run(at: 0)?.outcome?.error?.jsonPointer, "/name")

        let group = client.makeGroup()
        XCTAssertThrowsError(try group.addEach(parent: ownersList(), templates: [])) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        XCTAssertThrowsError(try group.addEach(parent: ownersList(), templates: ["/v1/{/name"])) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        XCTAssertThrowsError(try group.wait()) { XCTAssertEqual(($0 as? SheafError)?.code, .state) }
        try group.start { _ in true }
        XCTAssertEqual(try group.wait(), .complete, "a group of no lists ends at once")
        XCTAssertThrowsError(try group.add(anchorList())) { XCTAssertEqual(($0 as? SheafError)?.code, .state) }
        XCTAssertThrowsError(try group.start { _ in true }) { XCTAssertEqual(($0 as? SheafError)?.code, .state) }
        XCTAssertThrowsError(try group.setOptions(ListGroup.Options(ordered: true))) { XCTAssertEqual(($0 as? SheafError)?.code, .state) }
    }

    /// A URL that is a parent at one level and a leaf at the next is both: its items are the
    /// middle level's children there and delivered here (issue 47: each URL was fetched once for
    /// the whole fan-out, so the leaf was never delivered and the group ended complete).
    func testAURLThatIsAParentAtOneLevelAndALeafAtTheNextIsBoth() throws {
        let transport = ScriptedTransport(delayMilliseconds: 1)
        // /v1/owners names owner-0 and owner-1; each /v1/lists/owner-k holds two items naming
        // lists: owner-0's name owner-1 (a middle list's URL) and a list of its own.
        transport.on("\(scriptedBase)/v1/owners") { _, _ in
            .json(#"{"items":[{"id":0,"name":"owner-0"},{"id":1,"name":"owner-1"}],"next_page":null}"#)
        }
        for owner in 0..<2 {
            transport.on("\(scriptedBase)/v1/lists/owner-\(owner)") { _, _ in
                let names = owner == 0 ? ["owner-1", "own-0"] : ["own-1", "own-1b"]
                let items = names.enumerated().map { #"{"id":\#(100 * owner + $0),"name":"\#($1)"}"# }.joined(separator: ",")
                return .json(#"{"items":[\#(items)],"next_page":null,"total":2}"#)
            }
        }
        transport.otherwise { request, _ in
            guard request.url.contains("/v1/lists/") else { return .status(404, body: "{}") }
            return .json(FakeAnchorAPI(count: 3).body(request.url))
        }
        let group = try scriptedClient(transport).makeGroup()
        try group.addEach(parent: ownersList(), templates: ["/v1/lists/{/name}", "/v1/lists/{/name}"],
                          child: anchorList(""))
        let log = DeltaLog()
        try group.start { log.add($0); return true }
        XCTAssertEqual(try group.wait(), .complete)
        XCTAssertEqual(group.count, 1 + 2 + 4, "the owners, two middle lists, four leaves (owner-1 among them)")
        let tags = (0..<group.count).map { group.tag(at: $0) ?? "" }
        XCTAssertEqual(tags.filter { $0 == "owner-1" }.count, 2, "owner-1 as a middle list and as a leaf: \(tags)")
        let delivered = log.ids()
        XCTAssertEqual(Set(delivered.values.map { $0 }), [[0, 1, 2], [100, 101]])
        XCTAssertEqual(delivered.count, 4, "each leaf delivers its items, the middle lists none: \(delivered)")
    }

    /// A list that failed on a next link to another origin has a token pointing there; handed
    /// back to a group with the others, it fails again alone, keeping that token, and the others
    /// run (issue 47: the group refused them all, nothing fetched).
    func testAGroupTakesBackTheTokenOfAListThatFailedOnAnotherOriginAndRunsTheOthers() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedPage(1)) { _, _ in
            .json(#"{"items":[{"id":0},{"id":1}],"next_page":"https://elsewhere.example.com/v1/things?page=2&per_page=10","total":4}"#)
        }
        transport.otherwise { request, _ in .json(FakeAnchorAPI(count: 30).body(request.url)) }
        let client = try scriptedClient(transport)
        let failed = try client.makeList(anchorList())
        try failed.start()
        XCTAssertEqual(outcome(of: failed)?.error?.code, .crossOrigin)
        let token = try XCTUnwrap(failed.resumeToken())
        XCTAssertEqual(token.point.url.flatMap(Origin.init), Origin("https://elsewhere.example.com/"))

        var again = anchorList()
        again.resume = token
        let group = try client.makeGroup()
        XCTAssertEqual(try group.add(again), 0, "the library's own token goes back in")
        XCTAssertEqual(try group.add(anchorList("/v1/others")), 1)
        try group.start { _ in true }
        XCTAssertEqual(try group.wait().error?.code, .partial)
        XCTAssertEqual(group.run(at: 0)?.outcome?.error?.code, .invalidArgument, "it fails again, alone, nothing sent")
        XCTAssertEqual(group.run(at: 0)?.resumeToken(), token, "and keeps the token")
        XCTAssertEqual(group.run(at: 1)?.outcome, .complete)
        XCTAssertFalse(transport.requests.contains { $0.url.contains("elsewhere") })
    }

    func testTwoLevelsCompose() throws {
        let transport = ScriptedTransport(delayMilliseconds: 1)
        ownersAPI(transport, owners: 4, things: { _ in 12 })
        // Each thing of owner k names a part list: /v1/parts/<k>-<id>.
        for owner in 0..<4 {
            transport.on("\(scriptedBase)/v1/owners/owner-\(owner)/things") { request, _ in
                let page = FakeAnchorAPI.query(request.url, "page").flatMap(Int.init) ?? 1
                let ids = Array(((page - 1) * 10)..<min(page * 10, 12))
                let items = ids.map { #"{"id":\#($0),"part":"\#(owner)-\#($0)"}"# }.joined(separator: ",")
                let next = page == 1 ? #""\#(FakeAnchorAPI.settingQuery(request.url, "page", "2"))""# : "null"
                return .json(#"{"items":[\#(items)],"next_page":\#(next),"total":12}"#)
            }
        }
        transport.otherwise { request, _ in
            guard request.url.contains("/v1/parts/") else { return .status(404, body: "{}") }
            return .json(FakeAnchorAPI(count: 2).body(request.url))
        }
        let group = try scriptedClient(transport).makeGroup()
        try group.addEach(parent: ownersList(), templates: ["/v1/owners/{/name}/things", "/v1/parts/{/part}"],
                          child: anchorList(""))
        let log = DeltaLog()
        try group.start { log.add($0); return true }
        XCTAssertEqual(try group.wait(), .complete)
        XCTAssertEqual(group.count, 1 + 4 + 48)
        let partLists = log.all.filter { !$0.tag.hasPrefix("owner-") && $0.tag.contains("-") && $0.outcome != nil }
        XCTAssertEqual(partLists.count, 48)
        XCTAssertEqual(log.ids().values.map(\.count).reduce(0, +), 48 * 2, "only the last level's items are delivered")
        // Each list's last delta says whether it is a parent, and what its items fill: the top
        // level both templates, a middle list the one below it, a list of items none.
        let last = log.all.filter { $0.outcome != nil }
        XCTAssertEqual(last.first { $0.list == 0 }?.templates, ["/v1/owners/{/name}/things", "/v1/parts/{/part}"])
        let middles = last.filter { $0.tag.hasPrefix("owner-") }
        XCTAssertEqual(middles.count, 4)
        XCTAssertTrue(middles.allSatisfy { $0.templates == ["/v1/parts/{/part}"] }, "\(middles.map(\.templates))")
        XCTAssertTrue(partLists.allSatisfy { $0.templates == nil })
    }
}
