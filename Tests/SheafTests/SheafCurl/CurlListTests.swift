import Foundation
import XCTest
@testable import Sheaf
import SheafCurl

/// Whole lists through the real libcurl transport against the loopback test API server.
final class CurlListTests: XCTestCase {
    func testAnAnchorListOfAThousandItemsArrivesCompleteAndInOrderWithTheWindowFull() throws {
        let server = try TestServer()
        defer { server.stop() }
        var configuration = ClientConfiguration()
        configuration.window = 8
        configuration.adaptsWindow = false
        let client = try SheafClient(baseURL: server.baseURL, bearerToken: "curl-token", transport: CurlTransport(),
                                     configuration: configuration)
        var description = ListDescription(path: "/anchor?n=1000&latency_ms=20")
        description.signals[.items] = .body(JSONPointer("/items")!)
        description.signals[.next] = .body(JSONPointer("/next_page")!)
        description.signals[.total] = .body(JSONPointer("/total")!)
        description.paging = .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 20)))
        let log = SnapshotLog()
        let run = try client.makeList(description, onSnapshot: log.callback)
        try server.reset()
        try run.start()

        XCTAssertEqual(outcome(of: run, within: 30), .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<1000))
        XCTAssertEqual(log.ids, Array(0..<1000))
        XCTAssertTrue(log.all.allSatisfy { $0.expectedItems == 1000 && $0.expectedPages == 50 })
        let stats = try server.stats()
        XCTAssertEqual(stats.requests, 50)
        XCTAssertEqual(stats.maxInFlight, 8)
        XCTAssertTrue(stats.log.allSatisfy { $0.authorization == "Bearer curl-token" })
        XCTAssertEqual(Set(stats.log.map(\.path)).count, 50, "every page requested once")
    }

    func testADRFListWithAnInjectedServerErrorIsRetriedToCompletion() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try SheafClient(baseURL: server.baseURL, transport: CurlTransport())
        var description = ListDescription(path: "/drf?n=95&fail=3:2:503")
        description.signals[.items] = .body(JSONPointer("/results")!)
        description.signals[.next] = .body(JSONPointer("/next")!)
        description.signals[.total] = .body(JSONPointer("/count")!)
        description.paging = .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "page_size", value: 10)))
        try server.reset()
        let (json, outcome) = try client.fetchAll(description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<95))
        XCTAssertEqual(try server.stats().requests, 12, "10 pages and 2 retries of page 3")
    }
}
