import Foundation
import XCTest
@testable import Sheaf
import SheafCurl

/// An item as the test server makes them.
private struct Thing: Decodable, Equatable, Sendable {
    let id: Int
    let name: String
}

private func things(_ range: Range<Int>) -> [Thing] {
    range.map { Thing(id: $0, name: "item-\($0)") }
}

/// The async API (decoded lists, snapshot sequences, single requests, the pager) through libcurl
/// against the loopback test API server.
final class AsyncAPITests: XCTestCase {
    private var server: TestServer!
    private var client: SheafClient!

    override func setUpWithError() throws {
        server = try TestServer()
        var configuration = ClientConfiguration()
        configuration.retry.maxAttempts = 1
        client = try SheafClient(baseURL: server.baseURL, transport: CurlTransport(), configuration: configuration)
    }

    override func tearDown() {
        server.stop()
    }

    func testAListIsDecodedWholeAndInOrderForEveryConvention() async throws {
        for path in ["/anchor?n=237", "/conv/github?n=95", "/conv/stripe?n=57", "/drf?n=101", "/conv/jsonapi?n=44"] {
            let items = try await client.fetchAll(Thing.self, path: path)
            let count = Int(path.split(separator: "=").last!)!
            XCTAssertEqual(items.items, things(0..<count), path)
            XCTAssertEqual(items.stopReason, .complete, path)
        }
    }

    func testSnapshotsAreGrowingPrefixesWithTheirCounts() async throws {
        var seen: [Thing] = []
        var snapshots = 0
        for try await snapshot in client.snapshots(Thing.self, path: "/anchor?n=230&per_page=20") {
            seen += snapshot.items
            snapshots += 1
            XCTAssertEqual(snapshot.prefix, seen)
            XCTAssertEqual(snapshot.itemCount, seen.count)
            XCTAssertEqual(snapshot.expectedItems, 230)
            XCTAssertEqual(snapshot.pageCount, (seen.count + 19) / 20)
        }
        XCTAssertEqual(seen, things(0..<230))
        XCTAssertGreaterThan(snapshots, 1)
    }

    func testLeavingTheLoopCancelsTheList() async throws {
        try server.reset()
        for try await snapshot in client.snapshots(Thing.self, path: "/anchor?n=2000&per_page=10&latency_ms=50") {
            XCTAssertFalse(snapshot.items.isEmpty)
            break
        }
        try await waitUntilTheServerIsIdle()
        XCTAssertLessThan(try server.stats().requests, 40, "the list went on after the loop was left")
    }

    func testCancellingTheTaskCancelsTheListAndNothingComesAfter() async throws {
        try server.reset()
        let sequence = client.snapshots(Thing.self, path: "/anchor?n=2000&per_page=10&latency_ms=50")
        let firstSnapshot = expectation(description: "a first snapshot")
        let task = Task {
            var count = 0
            do {
                for try await _ in sequence {
                    count += 1
                    if count == 1 { firstSnapshot.fulfill() }
                    try? await Task.sleep(nanoseconds: 20_000_000) // a slow consumer
                }
                return (count, SheafError?.none)
            } catch {
                return (count, error as? SheafError)
            }
        }
        await fulfillment(of: [firstSnapshot], timeout: 10)
        task.cancel()
        let (count, error) = await task.value
        XCTAssertEqual(error?.code, .cancelled)
        XCTAssertLessThan(count, 20)
        try await waitUntilTheServerIsIdle()
        XCTAssertLessThan(try server.stats().requests, 60)
    }

    func testAFailureIsThrownWithItsFieldsAndTheItemsBeforeIt() async throws {
        do {
            _ = try await client.fetchAll(Thing.self, path: "/anchor?n=100&per_page=10&fail=3:1:500")
            XCTFail("no failure")
        } catch {
            XCTAssertEqual(error.code, .http)
            XCTAssertEqual(error.httpStatus, 500)
            XCTAssertEqual(error.items, things(0..<20))
        }
    }

    func testAnItemThatDoesNotDecodeIsNamedByIndexAndLocation() async throws {
        /// Item 256 has no number for a name.
        struct Picky: Decodable, Sendable {
            enum Key: CodingKey { case id, name }
            init(from decoder: any Decoder) throws {
                let item = try decoder.container(keyedBy: Key.self)
                if try item.decode(Int.self, forKey: .id) == 256 { _ = try item.decode(Int.self, forKey: .name) }
            }
        }
        do {
            _ = try await client.fetchAll(Picky.self, path: "/anchor?n=300&per_page=50")
            XCTFail("no failure")
        } catch {
            XCTAssertEqual(error.code, .decoding)
            XCTAssertEqual(error.itemIndex, 256)
            XCTAssertEqual(error.jsonPointer, "/name")
            XCTAssertTrue(error.message.contains("item 256"), error.message)
            XCTAssertEqual(error.items.count, 256, "every item before the one that failed, however the pages were delivered")
        }
    }

    func testSingleRequestsDecodeAndEncode() async throws {
        struct Echo: Decodable, Sendable {
            let method: String
            let json: [String: Int]?
        }
        struct Body: Encodable { let a: Int }
        let got = try await client.fetch(Echo.self, path: "/req/echo")
        XCTAssertEqual(got.method, "GET")
        let sent = try await client.send(Echo.self, method: "POST", path: "/req/echo", body: Body(a: 7))
        XCTAssertEqual(sent.method, "POST")
        XCTAssertEqual(sent.json, ["a": 7])
        do {
            _ = try await client.fetch(Echo.self, path: "/req/error/github?status=404")
            XCTFail("no failure")
        } catch {
            XCTAssertEqual(error.code, .http)
            XCTAssertEqual(error.httpStatus, 404)
            XCTAssertNotNil(error.serverMessage)
        }
        do {
            _ = try await client.fetch([Int].self, path: "/req/echo")
            XCTFail("no failure")
        } catch {
            XCTAssertEqual(error.code, .decoding)
        }
        let response = try await client.response(for: Request(method: "GET", path: "/req/echo?status=418"))
        XCTAssertEqual(response.status, 418, "response(for:) returns any status")
    }

    func testConcurrentTasksAskingForMoreJoinThePageOnItsWay() async throws {
        try server.reset()
        let pager = try client.makePager(ListDescription(path: "/anchor?n=100&per_page=10&latency_ms=300"))
        let pages = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<6 {
                group.addTask {
                    guard case .page(let page) = try await pager.more() else { return [] }
                    return itemIDs(page.delta.json)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(pages, Array(repeating: Array(0..<10), count: 6))
        XCTAssertEqual(try server.stats().requests, 1)
        guard case .page(let second) = try await pager.more() else { return XCTFail("no second page") }
        XCTAssertEqual(itemIDs(second.delta.json), Array(10..<20))
        pager.close()
    }

    func testWhenFinishedGivenBeforeTheStartWaitsForTheRun() throws {
        let run = try client.makeList(ListDescription(path: "/anchor?n=30&per_page=10"))
        let finished = expectation(description: "finished")
        run.whenFinished {
            XCTAssertEqual(run.outcome, .complete)
            finished.fulfill()
        }
        try run.start()
        wait(for: [finished], timeout: 10)
    }

    private func waitUntilTheServerIsIdle() async throws {
        for _ in 0..<500 where try server.stats().inFlight > 0 {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        try await Task.sleep(nanoseconds: 200_000_000) // what was cancelled has had time to go on, if it would
    }
}

/// An async transport serving the fake anchor API, counting what it was asked and cancelled.
private struct FakeAsyncBackend: AsyncTransport {
    let api = FakeAnchorAPI(count: 95)
    let delayNanoseconds: UInt64
    let counts = Shared((sent: 0, cancelled: 0))

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        counts.update { $0.sent += 1 }
        if request.url.contains("fail") { throw URLFailure() }
        do {
            try await Task.sleep(nanoseconds: delayNanoseconds)
        } catch {
            counts.update { $0.cancelled += 1 }
            throw error
        }
        return HTTPResponse(status: 200, body: Array(api.body(request.url).utf8))
    }

    struct URLFailure: Error {}
}

final class AsyncTransportTests: XCTestCase {
    func testAnAsyncBackendServesAListAndIsCancelledWithIt() async throws {
        let backend = FakeAsyncBackend(delayNanoseconds: 1_000_000)
        let client = try SheafClient(baseURL: scriptedBase, transport: AsyncTransportAdapter(backend))
        let items = try await client.fetchAll(Thing.self, anchorList())
        XCTAssertEqual(items.items, things(0..<95))
        XCTAssertEqual(items.stopReason, .complete)
        XCTAssertEqual(backend.counts.value.sent, 10)

        let slow = FakeAsyncBackend(delayNanoseconds: 10_000_000_000)
        let slowClient = try SheafClient(baseURL: scriptedBase, transport: AsyncTransportAdapter(slow))
        let task = Task { try await slowClient.fetchAll(Thing.self, anchorList()) }
        for _ in 0..<500 where slow.counts.value.sent == 0 { try await Task.sleep(nanoseconds: 2_000_000) }
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("not cancelled")
        } catch let failure as ListFailure<Thing> {
            XCTAssertEqual(failure.code, .cancelled)
        }
        for _ in 0..<500 where slow.counts.value.cancelled < slow.counts.value.sent { try await Task.sleep(nanoseconds: 2_000_000) }
        XCTAssertEqual(slow.counts.value.cancelled, slow.counts.value.sent, "every exchange in flight was cancelled with the list")
    }

    func testASequenceEndedByABudgetSaysWhyAndIsNoFailure() async throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 95)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let client = try scriptedClient(transport)
        for (budget, reason, count) in [(3, StopReason.pageBudget, 30), (nil, StopReason.complete, 95)] {
            var description = anchorList()
            description.maxPages = budget
            var snapshots = client.snapshots(Thing.self, description).makeAsyncIterator()
            XCTAssertNil(snapshots.stopReason, "not before the end")
            var items: [Thing] = []
            while let snapshot = try await snapshots.next() { items += snapshot.items }
            XCTAssertEqual(items, things(0..<count))
            XCTAssertEqual(snapshots.stopReason, reason)
        }
    }

    func testASlowConsumerHoldsTheFetchingBack() async throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 1000)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let client = try scriptedClient(transport) { $0.window = 2 }
        var snapshots = client.snapshots(Thing.self, anchorList()).makeAsyncIterator()
        let first = try await snapshots.next()
        XCTAssertEqual(first?.items, things(0..<10))
        try await Task.sleep(nanoseconds: 300_000_000) // the consumer is busy; the server answers at once
        XCTAssertLessThanOrEqual(transport.requests.count, 8, "a window of pages waits, a window is in flight")
        var count = 10
        while let snapshot = try await snapshots.next() { count += snapshot.items.count }
        XCTAssertEqual(count, 1000)
    }

    func testTheErrorMappingHookDecidesWhatIsRetried() async throws {
        let backend = FakeAsyncBackend(delayNanoseconds: 0)
        var configuration = ClientConfiguration()
        configuration.retry.baseDelayMilliseconds = 0
        configuration.window = 1 // page one alone
        let mapped = AsyncTransportAdapter(backend) { _ in TransportError(.timeout, "mapped") }
        let client = try SheafClient(baseURL: scriptedBase, transport: mapped, configuration: configuration)
        do {
            _ = try await client.fetchAll(Thing.self, anchorList("/v1/things?fail=1"))
            XCTFail("no failure")
        } catch {
            XCTAssertEqual(error.code, .transport)
            XCTAssertEqual(backend.counts.value.sent, configuration.retry.maxAttempts, "a timeout is retried")
        }
    }
}
