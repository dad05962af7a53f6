import Dispatch
import Synchronization
import XCTest
@testable import Sheaf

/// A GitHub-shaped quota (issue 44): `allowed` points per window of `resetSeconds`, every answer
/// carrying X-RateLimit-* (the reset in whole seconds from now, rounded up); past them a 403 with
/// X-RateLimit-Remaining: 0.
private final class Quota: Sendable {
    let allowed: Int
    let resetSeconds: Int
    private let counts = Mutex((used: 0, refused: 0, windowStart: DispatchTime.now().uptimeNanoseconds))

    init(allowed: Int, resetSeconds: Int = 3_600) {
        self.allowed = allowed
        self.resetSeconds = resetSeconds
    }

    var used: Int { counts.withLock { $0.used } }
    var refused: Int { counts.withLock { $0.refused } }

    /// A new window of the server's: the points are back.
    func reset() { counts.withLock { $0.used = 0 } }

    func reply(_ request: HTTPRequest, _ api: FakeAnchorAPI) -> ScriptedReply {
        let (admitted, left, reset) = counts.withLock { counts -> (Bool, Int, Int) in
            let now = DispatchTime.now().uptimeNanoseconds
            let window = UInt64(resetSeconds) * 1_000_000_000
            if now - counts.windowStart >= window { (counts.used, counts.windowStart) = (0, now) }
            let reset = Int((counts.windowStart + window - now + 999_999_999) / 1_000_000_000)
            guard counts.used < allowed else {
                counts.refused += 1
                return (false, 0, reset)
            }
            counts.used += 1
            return (true, allowed - counts.used, reset)
        }
        let headers = [("X-RateLimit-Limit", String(allowed)), ("X-RateLimit-Remaining", String(left)),
                       ("X-RateLimit-Reset", String(reset)), ("X-RateLimit-Resource", "core")]
            .map { HTTPHeader(name: $0.0, value: $0.1) }
        guard admitted else {
            return .json(#"{"message":"API rate limit exceeded for user ID 1."}"#, status: 403, headers: headers)
        }
        return .json(api.body(request.url), headers: headers)
    }
}

final class QuotaTests: XCTestCase {
    /// 200 pages into 120 points, with a window of 64: no request past the points (0 refusals at
    /// the server), the list fails `.rateLimited` with the 120 pages it paid for, and the resume
    /// token, once the points are back, gives the other 80 pages, each item once.
    func testAListLargerThanTheQuotaStopsBeforeItIsRefusedAndResumesExactly() throws {
        let api = FakeAnchorAPI(count: 2_000)
        let quota = Quota(allowed: 120)
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in quota.reply(request, api) }
        let client = try scriptedClient(transport) { $0.window = 64 }
        let run = try client.makeList(anchorList())
        try run.start()
        let ended = outcome(of: run)
        XCTAssertEqual(ended?.error?.code, .rateLimited, "\(String(describing: ended))")
        XCTAssertTrue(ended?.error?.message.contains("the server's core limit of 120 requests is spent: 0 left until it resets in") == true,
                      ended?.error?.message ?? "")
        XCTAssertEqual(quota.refused, 0, "no request went past the points the server said were left")
        XCTAssertEqual(quota.used, 120, "every point, and not one more")
        let first = itemIDs(run.prefixJSON())
        XCTAssertEqual(first, Array(0..<first.count))
        XCTAssertGreaterThanOrEqual(first.count, 1_000, "the pages paid for, in order, up to the first one not sent")
        guard let token = run.resumeToken() else { return XCTFail("a rate-limited list gives a token") }

        // After the reset, the next run (a client that has not seen the spent limit: a process
        // of the next hour) goes on from the token.
        quota.reset()
        var description = anchorList()
        description.resume = token
        let rest = try scriptedClient(transport) { $0.window = 64 }.makeList(description)
        try rest.start()
        XCTAssertEqual(outcome(of: rest), .complete)
        XCTAssertEqual(first + itemIDs(rest.prefixJSON()), Array(0..<2_000), "every item once")
        XCTAssertEqual(quota.refused, 0)
    }

    /// A quota that resets within the longest wait is waited for: the list completes, never refused.
    func testAQuotaThatResetsWithinTheLongestWaitIsWaitedFor() throws {
        let api = FakeAnchorAPI(count: 300)
        let quota = Quota(allowed: 12, resetSeconds: 1)
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in quota.reply(request, api) }
        let client = try scriptedClient(transport) { $0.window = 16 }
        let run = try client.makeList(anchorList())
        try run.start()
        XCTAssertEqual(outcome(of: run, within: 20), .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<300))
        XCTAssertEqual(quota.refused, 0)
    }

    /// Another client of the same credential spent the points: the refusal (403, remaining 0) is
    /// `.rateLimited` with its status, not a refused credential (`.http`).
    func testARefusalForASpentQuotaIsRateLimited() throws {
        let api = FakeAnchorAPI(count: 100)
        let quota = Quota(allowed: 0)
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in quota.reply(request, api) }
        let client = try scriptedClient(transport)
        let run = try client.makeList(anchorList())
        try run.start()
        let error = outcome(of: run)?.error
        XCTAssertEqual(error?.code, .rateLimited, "\(String(describing: error))")
        XCTAssertEqual(quota.refused, 1, "one refusal told it, and nothing more was sent")
    }
}
