import Foundation
import XCTest
@testable import Sheaf

/// A newest-first list: `items` in the order given, `pageSize` a page, paged by `page` (from 1),
/// with the total; each page answers after `delay(page)` milliseconds.
private func newestFirst(_ items: [String], pageSize: Int = 10,
                         delay: @escaping @Sendable (Int) -> Int = { _ in 0 }) -> ScriptedTransport {
    let transport = ScriptedTransport()
    transport.otherwise { request, _ in
        let page = FakeAnchorAPI.query(request.url, "page").flatMap { Int($0) } ?? 1
        let start = (page - 1) * pageSize
        let slice = start < items.count ? items[start..<min(start + pageSize, items.count)] : []
        return .json(#"{"items":[\#(slice.joined(separator: ","))],"total":\#(items.count)}"#).after(delay(page))
    }
    return transport
}

/// A description of `newestFirst`'s list.
private func newestFirstList() -> ListDescription {
    var description = ListDescription(path: "/v1/things")
    description.signals[.items] = .body(JSONPointer("/items")!)
    description.signals[.total] = .body(JSONPointer("/total")!)
    description.paging = .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 10)))
    return description.pinningTheRest()
}

/// Items `{"id":n}` for `ids`, in that order.
private func idItems(_ ids: [Int]) -> [String] { ids.map { #"{"id":\#($0)}"# } }

final class IncrementalSyncTests: XCTestCase {
    func testABoundStopsAtTheFirstItemAtOrBelowItAndDeliversNothingAfterPagesInFlight() throws {
        // Pages 4 and later answer at once, page 3 (where the bound is) late: they are in flight
        // or held when the bound is reached, and none of their items may come out.
        let transport = newestFirst(idItems(Array((0..<100).reversed())), delay: { $0 == 3 ? 200 : 0 })
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("72"))
        let log = SnapshotLog()
        let run = try scriptedClient(transport) { $0.window = 4 }.makeList(description, onSnapshot: log.callback)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertTrue(run.reachedBound)
        XCTAssertEqual(log.ids, Array((73..<100).reversed()))
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array((73..<100).reversed()))
        XCTAssertEqual(run.syncState, SyncState(pointer: JSONPointer("/id")!, value: .number("99")))
        XCTAssertNil(run.resumeToken(), "a list that reached its bound has nothing left to resume")
        let made = run.requestsMade
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(run.requestsMade, made, "no request starts once the list has ended")
    }

    func testNoPageIsAskedForPastAWindowBeyondTheBound() throws {
        // A long list whose pages all take a while: the bound on page 3 ends it with at most a
        // window of pages beyond it asked for, not the hundred the list has.
        let transport = newestFirst(idItems(Array((0..<1000).reversed())), delay: { _ in 20 })
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("975"))
        let run = try scriptedClient(transport) { $0.window = 4 }.makeList(description)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertTrue(run.reachedBound)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array((976..<1000).reversed()))
        XCTAssertLessThanOrEqual(run.requestsMade, 3 + 4, "pages beyond the bound: a window at most")
    }

    func testABoundOnPageOneCostsOneRequestAndTheWindowOpensAsPagesComeIn() throws {
        // The client has answered here before: a list without a bound asks for a window at once.
        let transport = newestFirst(idItems(Array((0..<200).reversed())), delay: { _ in 5 })
        let client = try scriptedClient(transport) { $0.window = 8 }
        _ = try client.fetchAll(newestFirstList())
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("195"))
        let onPageOne = try client.makeList(description)
        try onPageOne.start()
        XCTAssertEqual(outcome(of: onPageOne), .complete)
        XCTAssertEqual(onPageOne.requestsMade, 1, "nothing is asked for past a bound on page one")
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("175"))
        let onPageThree = try client.makeList(description)
        try onPageThree.start()
        XCTAssertEqual(outcome(of: onPageThree), .complete)
        XCTAssertLessThanOrEqual(onPageThree.requestsMade, 3 + 2, "a page in flight per page delivered")
    }

    func testAnItemEqualToTheBoundIsNotDelivered() throws {
        let transport = newestFirst(idItems([30, 20, 10]))
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("20"))
        let (json, outcome) = try scriptedClient(transport).fetchAll(description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), [30])
    }

    func testNoNewItemReportsTheOldBoundAsTheState() throws {
        let transport = newestFirst(idItems([5, 4, 3]))
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("5"))
        let run = try scriptedClient(transport).makeList(description)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertTrue(run.reachedBound)
        XCTAssertEqual(itemIDs(run.prefixJSON()), [])
        XCTAssertEqual(run.syncState?.value, .number("5"))
    }

    func testBigIntegerIdsCompareExactlyPastDoublePrecision() throws {
        // 2^53 + 1 and 2^53 are one Double: only an exact comparison tells them apart.
        let transport = newestFirst(["{\"id\":9007199254740993}", "{\"id\":9007199254740992}"])
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("9007199254740992"))
        let (json, outcome) = try scriptedClient(transport).fetchAll(description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(String(decoding: json, as: UTF8.self), "[{\"id\":9007199254740993}]")
    }

    func testTimestampsCompareAsStrings() throws {
        let items = ["2026-11-22T10:00:00Z", "2026-11-21T09:00:00Z", "2026-11-20T00:00:00Z", "2026-11-19T00:00:00Z"]
            .map { #"{"updated_at":"\#($0)"}"# }
        let transport = newestFirst(items)
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/updated_at")!, value: .string("2026-11-20T00:00:00Z"))
        let run = try scriptedClient(transport).makeList(description)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertTrue(run.reachedBound)
        XCTAssertEqual(String(decoding: run.prefixJSON(), as: UTF8.self), "[" + items[0..<2].joined(separator: ",") + "]")
        XCTAssertEqual(run.syncState?.value, .string("2026-11-22T10:00:00Z"))
    }

    func testAnItemWithoutTheFieldIsNotAtTheBoundAndTheListGoesOn() throws {
        let transport = newestFirst([#"{"id":9}"#, #"{"name":"no id"}"#, #"{"id":null}"#, #"{"id":8}"#, #"{"id":2}"#])
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("5"))
        let (json, outcome) = try scriptedClient(transport).fetchAll(description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(String(decoding: json, as: UTF8.self), #"[{"id":9},{"name":"no id"},{"id":null},{"id":8}]"#)
    }

    func testAListThatNeverReachesItsBoundCompletes() throws {
        let transport = newestFirst(idItems(Array((50..<75).reversed())))
        var description = newestFirstList()
        description.until = SyncBound(pointer: JSONPointer("/id")!, value: .number("10"))
        let run = try scriptedClient(transport).makeList(description)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()).count, 25)
        XCTAssertEqual(run.syncState?.value, .number("74"))
    }

    func testASinceFilterGoesOnTheFirstRequestAndRecordsTheGreatestValue() throws {
        let transport = newestFirst(idItems([3, 7, 5]))
        var description = newestFirstList()
        description.since = SinceFilter(parameter: "since", pointer: JSONPointer("/id")!, value: .string("2026-01-01"))
        let run = try scriptedClient(transport).makeList(description)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(transport.requests.first?.url, "\(scriptedList)?page=1&per_page=10&since=2026-01-01")
        XCTAssertEqual(run.syncState?.value, .number("7"))
        let printed = try JSONSerialization.jsonObject(with: Data(run.descriptionJSON())) as! [String: Any]
        let state = printed["sync_state"] as! [String: Any]
        XCTAssertEqual(state["field"] as? String, "/id")
        XCTAssertEqual(state["value"] as? Int, 7)
        XCTAssertEqual(state["list"] as? String, "\(scriptedList)?page=1&per_page=10", "the list is named without its since parameter")
    }

    func testASinceFilterWithoutAValueSendsNoParameter() throws {
        let transport = newestFirst(idItems([1]))
        var description = newestFirstList()
        description.since = SinceFilter(parameter: "since", pointer: JSONPointer("/id")!)
        _ = try scriptedClient(transport).fetchAll(description)
        XCTAssertEqual(transport.requests.first?.url, scriptedPage(1))
    }

    func testNumbersCompareByValueWhateverTheirSpelling() {
        let pairs: [(String, String)] = [("9007199254740992", "9007199254740993"), ("-5", "3"), ("-5", "-3"), ("0", "0.5"),
                                         ("999", "1e3"), ("1.25", "1.3"), ("12", "123"), ("-0.001", "0")]
        for (smaller, larger) in pairs {
            XCTAssertLessThan(SyncValue.number(smaller), SyncValue.number(larger), "\(smaller) < \(larger)")
            XCTAssertFalse(SyncValue.number(larger) < SyncValue.number(smaller), "\(larger) < \(smaller)")
        }
        XCTAssertEqual(SyncValue.number("1"), SyncValue.number("1.0"))
        XCTAssertEqual(SyncValue.number("100"), SyncValue.number("1E2"))
        XCTAssertEqual(SyncValue.number("-0"), SyncValue.number("0"))
        XCTAssertLessThan(SyncValue.string("2026-11-19T23:59:59Z"), SyncValue.string("2026-11-20T00:00:00Z"))
    }

    /// Go's RFC3339Nano drops trailing zeros, so one list holds `…:00Z`, `…:00.5Z` and `…:00.123Z`:
    /// by code point `.` sorts below `Z` and a newer item would sit "below" an older bound (issue 47).
    func testRFC3339TimestampsCompareByTheInstantTheyName() {
        let pairs: [(String, String)] = [
            ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00.5Z"), ("2024-05-01T10:00:00.123Z", "2024-05-01T10:00:00.5Z"),
            ("2024-05-01T09:59:59.999999999Z", "2024-05-01T10:00:00Z"), ("2024-05-01T10:00:00.05Z", "2024-05-01T10:00:00.5Z"),
            ("2024-05-01T11:30:00+02:00", "2024-05-01T10:00:00Z"), ("2024-02-28T23:59:59Z", "2024-02-29T00:00:00Z"),
            ("2023-12-31T23:59:59.9Z", "2024-01-01t00:00:00z"), ("1999-12-31 23:00:00-01:30", "2000-01-01T00:31:00Z"),
        ]
        for (smaller, larger) in pairs {
            XCTAssertLessThan(SyncValue.string(smaller), SyncValue.string(larger), "\(smaller) < \(larger)")
            XCTAssertFalse(SyncValue.string(larger) < SyncValue.string(smaller), "\(larger) < \(smaller)")
        }
        XCTAssertEqual(SyncValue.string("2024-05-01T12:00:00+02:00"), SyncValue.string("2024-05-01T10:00:00.000Z"))
        // Not RFC 3339 (no offset, a month 13, a bare fraction point): compared as text.
        for text in ["2024-05-01T10:00:00", "2024-13-01T10:00:00Z", "2024-05-01T10:00:00.Z", "2024-05-01T10:00:00Zx"] {
            XCTAssertNil(TimestampText(text), text)
        }
        XCTAssertLessThan(SyncValue.string("2024-05-01T10:00:00"), SyncValue.string("2024-05-01T10:00:00.5"))
    }

    // MARK: The description's JSON form

    func testUntilAndSincePrintAndReadBack() throws {
        let json = #"{"until":{"pointer":"/id","value":12345678901234567890},"since":{"param":"since","pointer":"/id","value":"x"}}"#
        let description = try ListDescription(path: "/v1/things", json: Array(json.utf8))
        XCTAssertEqual(description.until, SyncBound(pointer: JSONPointer("/id")!, value: .number("12345678901234567890")))
        XCTAssertEqual(description.since, SinceFilter(parameter: "since", pointer: JSONPointer("/id")!, value: .string("x")))
        let printed = description.json(resolution: nil, plan: nil)
        XCTAssertEqual(try ListDescription(path: "/v1/things", json: printed).until, description.until)
        XCTAssertTrue(String(decoding: printed, as: UTF8.self).contains(#""value":12345678901234567890"#),
                      "a big number prints as it was written")
    }

    func testBadSyncMembersAreRefusedNamingTheField() {
        let cases = [(#"{"until":{"pointer":"id","value":1}}"#, "/until/pointer"),
                     (#"{"until":{"pointer":"/id","value":true}}"#, "/until/value"),
                     (#"{"until":{"pointer":"/id"}}"#, "/until/value"),
                     (#"{"until":{"pointer":"","value":1}}"#, "/until/pointer"),
                     (#"{"until":{"pointer":"/id","value":1,"extra":2}}"#, "/until/extra"),
                     (#"{"since":{"pointer":"/id"}}"#, "/since/param"),
                     (#"{"since":{"param":"s","pointer":"/id","value":[1]}}"#, "/since/value"),
                     (#"{"until":{"pointer":"/id","value":1},"since":{"param":"s","pointer":"/other"}}"#, "/since/pointer"),
                     (#"{"sync_state":{"field":3}}"#, "/sync_state")]
        for (json, field) in cases {
            XCTAssertThrowsError(try ListDescription(path: "/", json: Array(json.utf8)), json) { error in
                let error = error as! SheafError
                XCTAssertEqual(error.code, .invalidArgument, json)
                XCTAssertTrue(error.message.contains(field), "\(json): \(error.message)")
            }
        }
    }
}
