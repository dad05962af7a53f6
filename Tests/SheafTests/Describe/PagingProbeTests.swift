import XCTest
@testable import Sheaf

private let api = "https://api.example.com/v1/things"

/// A bare array of `{"id":i}` items read as detection reads one, with an `X-Total-Count` when
/// `total` is given, and each item's identity at /id when `identity` is set.
private func page(_ text: String, total: Int? = nil, identity: Bool = false, url: String = api) throws -> Page {
    var description = ListDescription(path: "/v1/things")
    description.signals[.items] = .body(JSONPointer("")!)
    description.signals[.total] = total == nil ? SignalSource.none : .header("X-Total-Count")
    description.signals[.identity] = identity ? .item(JSONPointer("/id")!) : SignalSource.none
    let headers = total.map { [HTTPHeader(name: "X-Total-Count", value: String($0))] } ?? []
    return try PageReader(description.pinningTheRest()).read(Array(text.utf8), headers: headers, from: url)
}

private func items(_ range: Range<Int>) -> String {
    "[" + range.map { #"{"id":\#($0)}"# }.joined(separator: ",") + "]"
}

final class PagingProbeTests: XCTestCase {
    // MARK: What is tried, in which order

    func testPageNumbersAreTriedForPageOneThenPageTwoThenOffsetsAtTheItemsServed() throws {
        let probe = PagingProbe(firstURL: api, pageOne: try page(items(0..<25), total: 95))
        XCTAssertEqual(probe.candidates.map(\.text), ["page=1", "page=2", "_page=1", "_page=2", "p=1", "p=2", "offset=25", "skip=25"])
        XCTAssertEqual(probe.candidates.map(\.url).prefix(3), ["\(api)?page=1", "\(api)?page=2", "\(api)?_page=1"])
        XCTAssertEqual(probe.candidates.map(\.paging), ["page", "_page", "p"].flatMap { name -> [Paging] in
            [.pageNumber(.init(parameter: name, first: 0)), .pageNumber(.init(parameter: name, first: 1))]
        } + [.offset(.init(parameter: "offset", first: 0)), .offset(.init(parameter: "skip", first: 0))])
    }

    func testAParameterTheURLAlreadyHasIsNotTriedAndTheRestOfTheQueryIsKept() throws {
        let url = "\(api)?sort=name&p=latest"
        let probe = PagingProbe(firstURL: url, pageOne: try page(items(0..<5), total: 20, url: url))
        XCTAssertEqual(probe.candidates.map(\.text), ["page=1", "page=2", "_page=1", "_page=2", "offset=5", "skip=5"])
        XCTAssertEqual(probe.candidates.first?.url, "\(api)?sort=name&p=latest&page=1")
    }

    func testAnEmptyFirstPageTriesNothingAndIsRefusedAsBefore() throws {
        var probe = PagingProbe(firstURL: api, pageOne: try page("[]", total: 95))
        XCTAssertTrue(probe.candidates.isEmpty)
        guard case .refuse(let error) = probe.start() else { return XCTFail("nothing to try, yet a request") }
        XCTAssertEqual(error.code, .undetected)
        XCTAssertFalse(error.message.contains("tried"), error.message)
    }

    func testEachCandidateIsAskedForInTurnAndTheRefusalNamesThemAll() throws {
        let pageOne = try page(items(0..<3), total: 9)
        var probe = PagingProbe(firstURL: api, pageOne: pageOne)
        XCTAssertEqual(probe.start(), .fetch(url: "\(api)?page=1"))
        XCTAssertEqual(probe.answered(nil), .fetch(url: "\(api)?_page=1"), "a failed page 1 says nothing of the numbering: on")
        XCTAssertEqual(probe.answered(pageOne), .fetch(url: "\(api)?_page=2"), "page one again: numbered from 1, page 2 next")
        XCTAssertEqual(probe.answered(pageOne), .fetch(url: "\(api)?p=1"), "page one again for page 2: ignored, on")
        XCTAssertEqual(probe.answered(try page("[]", total: 9)), .fetch(url: "\(api)?offset=3"), "an empty page 1: on")
        XCTAssertEqual(probe.answered(try page(items(2..<5), total: 9)), .fetch(url: "\(api)?skip=3"))
        guard case .refuse(let error) = probe.answered(nil) else { return XCTFail("every candidate was refused") }
        XCTAssertEqual(error.code, .undetected)
        XCTAssertEqual(error.url, api)
        XCTAssertTrue(error.message.contains("tried page=1, _page=1, _page=2, p=1, offset=3, skip=3: none gave the next items"),
                      error.message)
        XCTAssertNotNil(error.hint)
    }

    func testTheFirstCandidateWhoseAnswerContinuesTheListIsAdopted() throws {
        let pageOne = try page(items(0..<3), total: 9)
        var probe = PagingProbe(firstURL: api, pageOne: pageOne)
        _ = probe.start()
        XCTAssertEqual(probe.answered(pageOne), .fetch(url: "\(api)?page=2"))
        XCTAssertEqual(probe.answered(try page(items(3..<6), total: 9)), .adopt(.pageNumber(.init(parameter: "page", first: 1))))

        var fromZero = PagingProbe(firstURL: api, pageOne: pageOne)
        _ = fromZero.start()
        XCTAssertEqual(fromZero.answered(try page(items(3..<6), total: 9)), .adopt(.pageNumber(.init(parameter: "page", first: 0))),
                       "new items for page 1: page one was page 0")

        var offsets = PagingProbe(firstURL: api, pageOne: pageOne)
        _ = offsets.start()
        for _ in 0..<6 { _ = offsets.answered(pageOne) }
        XCTAssertEqual(offsets.answered(try page(items(3..<6), total: 9)), .adopt(.offset(.init(parameter: "offset", first: 0))))
    }

    // MARK: Which answer continues the list

    func testTheSameItemsAgainDoNotContinueTheList() throws {
        let pageOne = try page(items(0..<3), total: 9)
        XCTAssertFalse(PagingProbe.continues(try page(items(0..<3), total: 9), after: pageOne))
        XCTAssertFalse(PagingProbe.continues(try page(items(0..<3), total: 9, identity: true),
                                             after: try page(items(0..<3), total: 9, identity: true)))
    }

    func testAnEmptyAnswerContinuesOnlyWhenTheTotalSaysPageOneHeldEverything() throws {
        XCTAssertFalse(PagingProbe.continues(try page("[]", total: 9), after: try page(items(0..<3), total: 9)))
        XCTAssertFalse(PagingProbe.continues(try page("[]"), after: try page(items(0..<3))), "no total: an empty page proves nothing")
        XCTAssertTrue(PagingProbe.continues(try page("[]", total: 3), after: try page(items(0..<3), total: 3)))
    }

    func testAnAnswerRepeatingAnyItemOfPageOneDoesNotContinueTheList() throws {
        let pageOne = try page(items(0..<3), total: 9)
        XCTAssertFalse(PagingProbe.continues(try page(items(2..<5), total: 9), after: pageOne), "byte for byte")
        // By identity, an item that changed meanwhile is still a repeat.
        let withNames = try page(#"[{"id":0,"v":"a"},{"id":1,"v":"a"}]"#, identity: true)
        XCTAssertFalse(PagingProbe.continues(try page(#"[{"id":1,"v":"b"},{"id":2,"v":"b"}]"#, identity: true), after: withNames))
    }

    func testAnswerOfNewItemsContinuesTheList() throws {
        XCTAssertTrue(PagingProbe.continues(try page(items(3..<6), total: 9), after: try page(items(0..<3), total: 9)))
        XCTAssertTrue(PagingProbe.continues(try page(items(3..<5)), after: try page(items(0..<3))), "a short last page")
        let pageOne = try page(#"[{"id":0,"v":"a"}]"#, identity: true)
        XCTAssertTrue(PagingProbe.continues(try page(#"[{"id":1,"v":"a"}]"#, identity: true), after: pageOne),
                      "items with their own ids may share the rest of their bytes")
    }
}
