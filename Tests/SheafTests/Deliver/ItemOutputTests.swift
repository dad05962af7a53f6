import XCTest
@testable import Sheaf

/// A page holding `items` (JSON texts), with their ranges in its body.
private func page(_ items: [String]) -> Page {
    var body = Array("{\"items\":[".utf8)
    var ranges: [Range<Int>] = []
    for (position, item) in items.enumerated() {
        if position > 0 { body.append(UInt8(ascii: ",")) }
        ranges.append(body.count..<body.count + item.utf8.count)
        body += Array(item.utf8)
    }
    body += Array("]}".utf8)
    return Page(body: body, items: ranges, identities: [], next: nil, total: nil)
}

/// Collects what an output writes; fails every write after `failAfter` writes.
private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var writes = 0
    let failAfter: Int?

    init(failAfter: Int? = nil) { self.failAfter = failAfter }

    var sink: ItemOutput.Sink {
        { chunk in
            self.lock.lock()
            defer { self.lock.unlock() }
            if let failAfter = self.failAfter, self.writes >= failAfter { return SheafError(.io, "disk full") }
            self.writes += 1
            self.bytes += chunk
            return nil
        }
    }

    var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: bytes, as: UTF8.self) }
}

final class ItemOutputTests: XCTestCase {
    private func deltas(_ pages: [[String]]) -> [SnapshotDelta] {
        var assembler = Assembler(keepsItems: false, maxItems: nil, deduplicates: false)
        return pages.enumerated().flatMap { assembler.add($0.offset, page($0.element)) }
    }

    func testAnArrayHasAnItemPerLineAcrossSnapshotsAndIsClosedAtTheEnd() {
        let out = Collected()
        let output = ItemOutput(format: .jsonArray, sink: out.sink)
        for delta in deltas([[#"{"id":0}"#, #"{"id":1}"#], [], [#"{"id":2}"#]]) { XCTAssertTrue(output.write(delta)) }
        XCTAssertEqual(output.finish(.complete), .complete)
        XCTAssertEqual(out.text, "[\n{\"id\":0},\n{\"id\":1},\n{\"id\":2}\n]\n")
    }

    func testJSONLinesPutEveryItemOnOneLineEvenWhenTheServerIndents() {
        let out = Collected()
        let output = ItemOutput(format: .jsonLines, sink: out.sink)
        for delta in deltas([["{\n  \"id\": 0,\r\n  \"s\": \"a\\nb\"\n}", #"{"id":1}"#]]) { XCTAssertTrue(output.write(delta)) }
        XCTAssertEqual(output.finish(.complete), .complete)
        XCTAssertEqual(out.text, "{   \"id\": 0,    \"s\": \"a\\nb\" }\n{\"id\":1}\n", "escaped \\n in strings stays as it is")
    }

    func testNoItemsIsAnEmptyArrayOrNoLines() {
        for (format, expected) in [(ItemFormat.jsonArray, "[]\n"), (.jsonLines, "")] {
            let out = Collected()
            let output = ItemOutput(format: format, sink: out.sink)
            for delta in deltas([[]]) { XCTAssertTrue(output.write(delta)) }
            XCTAssertEqual(output.finish(.complete), .complete)
            XCTAssertEqual(out.text, expected)
        }
    }

    func testAFailedListStillClosesTheArrayAndKeepsItsOutcome() {
        let out = Collected()
        let output = ItemOutput(format: .jsonArray, sink: out.sink)
        for delta in deltas([[#"{"id":0}"#]]) { XCTAssertTrue(output.write(delta)) }
        let failure = ListOutcome.failed(SheafError(.http, "HTTP 500", httpStatus: 500))
        XCTAssertEqual(output.finish(failure), failure)
        XCTAssertEqual(out.text, "[\n{\"id\":0}\n]\n")
    }

    func testAWriteThatFailsStopsTheOutputAndBecomesTheOutcome() {
        let out = Collected(failAfter: 1)
        let output = ItemOutput(format: .jsonLines, sink: out.sink)
        let all = deltas([[#"{"id":0}"#], [#"{"id":1}"#], [#"{"id":2}"#]])
        // One delta per add: the pages arrive in order.
        XCTAssertTrue(output.write(all[0]))
        XCTAssertFalse(output.write(all[1]), "the run is told to stop")
        XCTAssertFalse(output.write(all[2]), "nothing more is written")
        guard case .failed(let error) = output.finish(.failed(SheafError(.stopped, "stop"))) else { return XCTFail("no failure") }
        XCTAssertEqual(error.code, .io)
        XCTAssertEqual(out.text, "{\"id\":0}\n")
    }

    func testAListRunWritesThroughItsFinishingStepBeforeWaitReturns() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 95)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let out = Collected()
        let output = ItemOutput(format: .jsonArray, sink: out.sink)
        let run = try scriptedClient(transport).makeList(anchorList(), keepsItems: false) { output.write($0.delta) }
        run.finishing(output.finish)
        try run.start()
        XCTAssertEqual(try run.wait(), .complete)
        XCTAssertEqual(itemIDs(Array(out.text.utf8)), Array(0..<95), "closed before wait() returned")
    }
}
