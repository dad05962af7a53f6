import XCTest
@testable import Sheaf

private let url = "https://api.example.com/v1/things?page=2"

private func report(_ result: Result<HTTPResponse, TransportError>, _ decision: AnswerPolicy.Decision,
                    attempt: Int = 1) -> AttemptReport {
    AttemptReport(method: "GET", url: url, redactor: Redactor(["s3cret"]), attempt: attempt, milliseconds: 12, result: result, decision: decision)
}

private func status(_ code: Int, _ headers: [(String, String)] = []) -> Result<HTTPResponse, TransportError> {
    .success(HTTPResponse(status: code, headers: headers.map { HTTPHeader(name: $0.0, value: $0.1) }, body: [1, 2, 3]))
}

private func events(_ report: AttemptReport) -> [String] {
    report.events.map { "\($0.kind):\($0.status):\($0.attempt):\($0.waitMilliseconds)" }
}

final class AttemptReportTests: XCTestCase {
    func testEveryAttemptIsOneRequestRecordWithItsAnswer() {
        let delivered = report(status(200), .deliver(HTTPResponse(status: 200)))
        XCTAssertEqual(delivered.records.map(\.kind), [.request])
        XCTAssertEqual(delivered.records[0].message, "GET \(url) -> 200 in 12 ms, 3 bytes")
        XCTAssertEqual(delivered.records[0].bytes, 3)
        XCTAssertEqual(delivered.records[0].durationMilliseconds, 12)
        XCTAssertEqual(delivered.events, [])
    }

    func testARetryIsLoggedAndToldWithItsWait() {
        let retried = report(status(503), .retry(afterMilliseconds: 250), attempt: 2)
        XCTAssertEqual(retried.records.map(\.kind), [.request, .retry])
        XCTAssertEqual(retried.records[1].delayMilliseconds, 250)
        XCTAssertEqual(events(retried), ["retrying:503:2:250"])
    }

    func testA429OrA503WithRetryAfterIsRateLimited() {
        XCTAssertEqual(events(report(status(429), .retry(afterMilliseconds: 2000))),
                       ["rateLimited:429:1:2000", "retrying:429:1:2000"])
        XCTAssertEqual(events(report(status(503, [("Retry-After", "2")]), .retry(afterMilliseconds: 2000))),
                       ["rateLimited:503:1:2000", "retrying:503:1:2000"])
        XCTAssertEqual(events(report(status(429), .fail(SheafError(.http, "x")), attempt: 4)), ["rateLimited:429:4:-1"])
    }

    func testTheLastWordSaysWhatItMeansForTheCaller() {
        let failed = SheafError(.http, "x")
        XCTAssertEqual(events(report(status(401), .fail(failed))), ["authenticationRefused:401:1:-1"])
        XCTAssertEqual(events(report(status(403), .deliver(HTTPResponse(status: 403)))), ["authenticationRefused:403:1:-1"])
        XCTAssertEqual(events(report(status(502), .fail(failed), attempt: 4)), ["serverUnavailable:502:4:-1"])
        XCTAssertEqual(events(report(.failure(TransportError(.timeout, "")), .fail(failed), attempt: 4)),
                       ["serverUnavailable:0:4:-1"])
        XCTAssertEqual(events(report(.failure(TransportError(.connect, "")), .fail(failed), attempt: 4)), ["offline:0:4:-1"])
        XCTAssertEqual(events(report(.failure(TransportError(.dns, "")), .fail(failed))), ["offline:0:1:-1"])
        XCTAssertEqual(events(report(.failure(TransportError(.tls, "")), .fail(failed))), [], "not offline: a certificate")
        XCTAssertEqual(events(report(status(404), .fail(failed))), [])
        XCTAssertEqual(report(.failure(TransportError(.dns, "")), .fail(failed)).events.first?.transportError, .dns)
    }

    func testARedirectIsADebugRecord() {
        let redirected = report(status(303), .redirect(to: "https://api.example.com/done?key=x&t=s3cret", method: "GET"))
        XCTAssertEqual(redirected.records.map(\.level), [.info, .debug])
        XCTAssertEqual(redirected.records[1].message, "GET \(url): 303 to GET https://api.example.com/done?key=<redacted>&t=<redacted>")
        XCTAssertEqual(redirected.events, [])
    }

    func testHooksHandOverInOrderAndNothingAfterClose() {
        let seen = Locked([String]())
        let hooks = Hooks(logLevel: .info, onLog: { record in seen.withLock { $0.append(record.message) } },
                          onEvent: { event in seen.withLock { $0.append("event \(event.kind)") } })
        hooks.deliver(report(status(503), .retry(afterMilliseconds: 5)))
        hooks.deliver(report(status(303), .redirect(to: "https://api.example.com/done", method: "GET")))
        hooks.log(.debug) { XCTFail("a debug record is not even made at .info"); return LogRecord(level: .debug, kind: .plan, message: "") }
        hooks.flush()   // close would drop what is still queued
        hooks.close()
        XCTAssertEqual(seen.withLock { $0 }, ["GET \(url) -> 503 in 12 ms, 3 bytes", "GET \(url): HTTP 503, retrying in 5 ms",
                                               "event retrying", "GET \(url) -> 303 in 12 ms, 3 bytes"])
        hooks.deliver(report(status(503), .retry(afterMilliseconds: 5)))
        hooks.flush()
        XCTAssertEqual(seen.withLock { $0.count }, 4, "nothing after close")
    }

    func testCloseWaitsForTheCallRunningNowAndDropsTheQueuedOnes() {
        let calls = Locked(0)
        let running = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let hooks = Hooks(onEvent: { _ in
            calls.withLock { $0 += 1 }
            running.signal()
            release.wait()
        })
        for _ in 0..<5 { hooks.deliver(report(status(503), .fail(SheafError(.http, "503")), attempt: 4)) }
        running.wait()   // the first call runs; four are queued
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { hooks.close(); closed.signal() }
        XCTAssertEqual(closed.wait(timeout: .now() + .milliseconds(200)), .timedOut, "close waits for the call running now")
        for _ in 0..<5 { release.signal() }   // enough for every call, should the queued ones run
        XCTAssertEqual(closed.wait(timeout: .now() + .seconds(10)), .success)
        hooks.flush()
        XCTAssertEqual(calls.withLock { $0 }, 1, "the queued calls are dropped")
    }
}
