import Foundation
import XCTest
@testable import Sheaf

/// A list of `{"id": "c<n>", "t": seconds}` items served `order`ed by `t` (newest first: `t`
/// descending, then id descending, as Stripe orders ties), 3 a page, paged by `page`; with
/// `filters`, `?since=T` keeps the items at or after T. Items can be added while it is served.
private final class TiedList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(id: Int, t: Int)] = []
    let newestFirst: Bool
    let filters: Bool

    init(newestFirst: Bool = true, filters: Bool = false) {
        self.newestFirst = newestFirst
        self.filters = filters
    }

    func add(_ t: Int) {
        lock.lock()
        items.append((items.count + 1, t))
        lock.unlock()
    }

    var transport: ScriptedTransport {
        let transport = ScriptedTransport()
        transport.otherwise { [self] request, _ in
            let page = FakeAnchorAPI.query(request.url, "page").flatMap { Int($0) } ?? 1
            let since = filters ? FakeAnchorAPI.query(request.url, "since").flatMap { Int($0) } : nil
            lock.lock()
            var list = items.filter { since == nil || $0.t >= since! }
            lock.unlock()
            list.sort { newestFirst ? ($0.t, $0.id) > ($1.t, $1.id) : ($0.t, $0.id) < ($1.t, $1.id) }
            let slice = list.dropFirst((page - 1) * 3).prefix(3)
            let body = slice.map { #"{"id":"c\#($0.id)","t":\#($0.t)}"# }.joined(separator: ",")
            let more = (page - 1) * 3 + slice.count < list.count
            return .json(#"{"items":[\#(body)],"more":\#(more)}"#)
        }
        return transport
    }
}

private func tiedDescription(identity: Bool = true) -> ListDescription {
    var description = ListDescription(path: "/v1/things")
    description.signals[.items] = .body(JSONPointer("/items")!)
    description.signals[.hasMore] = .body(JSONPointer("/more")!)
    if identity { description.signals[.identity] = .item(JSONPointer("/id")!) }
    description.paging = .pageNumber(.init(parameter: "page", first: 1, size: nil))
    return description.pinningTheRest()
}

private func ids(_ json: [UInt8]) -> [String] {
    let items = (try? JSONSerialization.jsonObject(with: Data(json))) as? [[String: Any]] ?? []
    return items.map { $0["id"] as? String ?? "?" }
}

private let t = JSONPointer("/t")!

final class SyncTiesTests: XCTestCase {
    /// Runs `description` to its end on `list`; its items' ids and the state it reached.
    private func run(_ list: TiedList, _ description: ListDescription) throws -> (ids: [String], state: SyncState?) {
        let run = try scriptedClient(list.transport).makeList(description)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        return (ids(run.prefixJSON()), run.syncState)
    }

    func testABoundThatNamesWhatItSawDeliversAnItemAddedInTheSameSecondOnce() throws {
        let list = TiedList()
        for second in [8, 9, 10, 10, 10] { list.add(second) }
        var description = tiedDescription()
        description.until = SyncBound(pointer: t, value: .number("0"), seen: [])
        let first = try run(list, description)
        XCTAssertEqual(first.ids, ["c5", "c4", "c3", "c2", "c1"])
        XCTAssertEqual(first.state, SyncState(pointer: t, value: .number("10"), seen: [.string("c5"), .string("c4"), .string("c3")]))

        // Two more in second 10 (one of them sorts among the seen ones: ids are not in time
        // order everywhere) and one in second 11.
        list.add(10)
        list.add(11)
        description.until = SyncBound(pointer: t, value: first.state!.value!, seen: first.state!.seen)
        let second = try run(list, description)
        XCTAssertEqual(second.ids, ["c7", "c6"])
        XCTAssertEqual(second.state, SyncState(pointer: t, value: .number("11"), seen: [.string("c7")]))

        // Nothing new: nothing delivered, the state stays.
        description.until = SyncBound(pointer: t, value: second.state!.value!, seen: second.state!.seen)
        let third = try run(list, description)
        XCTAssertEqual(third.ids, [])
        XCTAssertEqual(third.state, second.state)

        // The old rule (no seen) loses the item added at the bound's second: what `seen` is for.
        list.add(11)
        description.until = SyncBound(pointer: t, value: .number("11"))
        XCTAssertEqual(try run(list, description).ids, [])
    }

    func testTheStateAtAValueTheRunStartedFromKeepsWhatEarlierRunsSaw() throws {
        let list = TiedList()
        for second in [5, 5] { list.add(second) }
        var description = tiedDescription()
        description.until = SyncBound(pointer: t, value: .number("5"), seen: [.string("c1")])
        let run = try run(list, description)
        XCTAssertEqual(run.ids, ["c2"])
        XCTAssertEqual(run.state?.seen, [.string("c1"), .string("c2")])
    }

    func testAnInclusiveFilterThatNamesWhatItSawDeliversOnlyWhatIsNewEvenFromAServerThatIgnoresIt() throws {
        for filters in [true, false] {
            let list = TiedList(newestFirst: false, filters: filters)
            for second in [1, 2, 2, 3, 3] { list.add(second) }
            var description = tiedDescription()
            description.since = SinceFilter(parameter: "since", pointer: t)
            let first = try run(list, description)
            XCTAssertEqual(first.ids, ["c1", "c2", "c3", "c4", "c5"])
            XCTAssertEqual(first.state?.seen, [.string("c4"), .string("c5")])
            list.add(3)
            list.add(4)
            description.since = SinceFilter(parameter: "since", pointer: t, value: first.state!.value, seen: first.state!.seen)
            let second = try run(list, description)
            XCTAssertEqual(second.ids, ["c6", "c7"], "filters: \(filters)")
            XCTAssertEqual(second.state, SyncState(pointer: t, value: .number("4"), seen: [.string("c7")]))
        }
    }

    func testAPollsEndLeavesOutWhatCameAfterIt() throws {
        let list = TiedList()
        for second in [1, 2, 2, 3, 3, 4] { list.add(second) }
        var description = tiedDescription()
        description.until = SyncBound(pointer: t, value: .number("1"), seen: [.string("c1")])
        // Through second 3 as one run saw it: c4 only (c5 came later in the same second).
        description.through = SyncState(pointer: t, value: .number("3"), seen: [.string("c4")])
        let run = try run(list, description)
        XCTAssertEqual(run.ids, ["c4", "c3", "c2"])
        XCTAssertEqual(run.state, SyncState(pointer: t, value: .number("3"), seen: [.string("c4")]))
    }

    func testSeenIsReadPrintedAndRefusedWhereItCannotBeKept() throws {
        var description = try ListDescription(path: "/x", json: Array(
            #"{"signals":{"identity":{"source":"item","where":"/id"}},"until":{"pointer":"/t","value":10,"seen":["a",7]}}"#.utf8))
        XCTAssertEqual(description.until?.seen, [.string("a"), .number("7")])
        let printed = String(decoding: description.json(resolution: nil, plan: nil), as: UTF8.self)
        XCTAssertTrue(printed.contains(#""until":{"pointer":"/t","value":10,"seen":["a",7]}"#), printed)
        for (json, field) in [(#"{"until":{"pointer":"/t","value":1,"seen":"a"}}"#, "/until/seen"),
                              (#"{"until":{"pointer":"/t","value":1,"seen":[true]}}"#, "/until/seen/0"),
                              (#"{"since":{"param":"s","pointer":"/t","seen":["a"]}}"#, "/since/seen")] {
            XCTAssertThrowsError(try ListDescription(path: "/x", json: Array(json.utf8))) { error in
                XCTAssertTrue("\(error)".contains(field), "\(error)")
            }
        }
        description.signals[.identity] = SignalSource.none
        XCTAssertThrowsError(try description.check()) { error in
            XCTAssertTrue("\(error)".contains("/until/seen names items by their identity"), "\(error)")
        }
    }

    func testWithoutAnIdentityTheStateNamesNoneAndTheBoundKeepsItsOldRule() throws {
        let list = TiedList()
        for second in [1, 2, 2] { list.add(second) }
        var description = tiedDescription(identity: false)
        description.until = SyncBound(pointer: t, value: .number("0"))
        let run = try run(list, description)
        XCTAssertEqual(run.state, SyncState(pointer: t, value: .number("2"), seen: nil))
    }

    func testPollsDeliverEachItemOnceAndTheirOffsetsReadBack() throws {
        let list = TiedList()
        for second in [1, 2, 2] { list.add(second) }
        let client = try scriptedClient(list.transport)
        var description = tiedDescription()
        description.until = SyncBound(pointer: t, value: .number("0"))
        let first = try client.poll(description, after: nil, format: .jsonLines)
        XCTAssertEqual(String(decoding: first.output, as: UTF8.self), "{\"id\":\"c3\",\"t\":2}\n{\"id\":\"c2\",\"t\":2}\n{\"id\":\"c1\",\"t\":1}\n")
        XCTAssertEqual(first.items, 3)
        let offset = try SyncState.offset(json: first.offsetJSON)
        XCTAssertEqual(offset.state, SyncState(pointer: t, value: .number("2"), seen: [.string("c3"), .string("c2")]))
        XCTAssertEqual(offset.list, first.list)

        let idle = try client.poll(description, after: offset)
        XCTAssertEqual(idle.items, 0)
        XCTAssertEqual(idle.requests, 1, "a poll that finds nothing new costs one request")
        XCTAssertEqual(idle.offset, offset.state)

        list.add(2)
        let next = try client.poll(description, after: (idle.list, idle.offset))
        XCTAssertEqual(ids(next.output), ["c4"])

        // The end of a range of an empty list holds nothing, whatever came since.
        let empty = try client.poll(description, after: nil, through: (nil, SyncState(pointer: t, value: nil, seen: [])))
        XCTAssertEqual(empty.items, 0)
        XCTAssertEqual(empty.requests, 0)

        // Refused: another field, another list, no sync, no identity, a budget.
        let refusals: [(ListDescription, (list: String?, state: SyncState)?, String)] = [
            (description, (nil, SyncState(pointer: JSONPointer("/id")!, value: .number("1"))), "of the field /id"),
            (description, ("http://elsewhere/x", offset.state), "of the list http://elsewhere/x"),
            (tiedDescription(), nil, "a list that syncs"),
            ({ var d = tiedDescription(identity: false); d.until = description.until; return d }(), nil, "by their identity"),
            ({ var d = description; d.maxItems = 5; return d }(), nil, "would leave a gap"),
        ]
        for (described, given, message) in refusals {
            XCTAssertThrowsError(try client.poll(described, after: given)) { error in
                XCTAssertEqual((error as? SheafError)?.code, .invalidArgument)
                XCTAssertTrue("\(error)".contains(message), "\(error)")
            }
        }
        for bad in [#"[]"#, #"{"field":"/t","value":true}"#, #"{"field":"/t","seen":[{}]}"#, #"{"value":1}"#, "{"] {
            XCTAssertThrowsError(try SyncState.offset(json: Array(bad.utf8)), bad)
        }
    }
}
