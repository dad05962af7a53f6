import Logging
import Metrics
import MetricsTestKit
import Sheaf
import SheafAsyncHTTPClient
@testable import SheafLogging
@testable import SheafMetrics
import Synchronization
import XCTest

/// A swift-log handler that keeps every entry.
struct CapturingLogHandler: LogHandler {
    struct Entry: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
        let source: String
    }

    final class Store: Sendable {
        let entries = Mutex<[Entry]>([])
        var all: [Entry] { entries.withLock { $0 } }
    }

    let store: Store
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let entry = Entry(level: event.level, message: event.message.description,
                          metadata: self.metadata.merging(event.metadata ?? [:]) { $1 }, source: event.source)
        store.entries.withLock { $0.append(entry) }
    }
}

private let token = "s3cret-t0ken-value"
private let apiKey = "hunter2-query-secret"

final class LoggingTests: XCTestCase {
    func testRecordsAndEventsAsLoggerEntriesWithoutCredentials() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let store = CapturingLogHandler.Store()
        var logger = Logger(label: "sheaf.test") { _ in CapturingLogHandler(store: store) }
        logger.logLevel = .debug
        let hooks = Hooks(logger: logger)
        let client = try makeClient(server, credential: .bearer(token), hooks: hooks)
        // Page 2 answers 503 once; every page needs the token; the URL carries a secret key.
        let items = try await client.fetchAll(
            Item.self, path: "/anchor?n=30&per_page=10&fail=2:1:503&bearer=\(token)&api_key=\(apiKey)")
        XCTAssertEqual(items.items.map(\.id), Array(0..<30))
        hooks.flush()
        hooks.close()
        let entries = store.all

        let requests = entries.filter { $0.metadata["sheaf.kind"] == "request" }
        XCTAssertEqual(requests.count, 4, "\(requests.map(\.message))")
        XCTAssertEqual(requests.filter { $0.metadata["sheaf.status"] == "200" }.count, 3)
        XCTAssertEqual(requests.filter { $0.metadata["sheaf.status"] == "503" }.count, 1)
        for entry in requests {
            XCTAssertEqual(entry.level, .info)
            XCTAssertEqual(entry.source, "Sheaf")
            XCTAssertEqual(entry.metadata["sheaf.method"], "GET")
            XCTAssertNotNil(entry.metadata["sheaf.attempt"])
            XCTAssertNotNil(entry.metadata["sheaf.duration_ms"])
            XCTAssertNotNil(entry.metadata["sheaf.bytes"])
            guard case .string(let url) = entry.metadata["sheaf.url"] else { return XCTFail("no URL in \(entry)") }
            XCTAssertTrue(url.hasPrefix(server.baseURL + "/anchor?"), url)
        }
        // The retried page: its second attempt, and the retry with its delay.
        XCTAssertTrue(requests.contains { $0.metadata["sheaf.attempt"] == "2" && $0.metadata["sheaf.status"] == "200" })
        let retries = entries.filter { $0.metadata["sheaf.kind"] == "retry" }
        XCTAssertEqual(retries.count, 1)
        XCTAssertEqual(retries.first?.metadata["sheaf.status"], "503")
        XCTAssertNotNil(retries.first?.metadata["sheaf.delay_ms"])
        XCTAssertEqual(entries.filter { $0.metadata["sheaf.kind"] == "plan" }.count, 1)
        // Events: the retry (debug), the rate limit waited out (a 503 with Retry-After: notice).
        let events = entries.filter { $0.metadata["sheaf.event"] != nil }
        XCTAssertTrue(events.contains { $0.metadata["sheaf.event"] == "retrying" && $0.level == .debug })
        XCTAssertTrue(events.contains { $0.metadata["sheaf.event"] == "rate_limited" && $0.level == .notice })

        // No credential anywhere: message, metadata, the logger's own.
        for entry in entries {
            let text = entry.message + " " + entry.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            XCTAssertFalse(text.contains(token), text)
            XCTAssertFalse(text.contains(apiKey), text)
        }
    }

    func testLevelsFollowTheLogger() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let store = CapturingLogHandler.Store()
        var logger = Logger(label: "sheaf.test") { _ in CapturingLogHandler(store: store) }
        logger.logLevel = .warning
        XCTAssertEqual(LoggerHook(logger: logger).recordLevel, .warning)
        let hooks = Hooks(logger: logger)
        let client = try makeClient(server, hooks: hooks)
        _ = try await client.fetchAll(Item.self, path: "/anchor?n=30&per_page=10")
        hooks.flush()
        hooks.close()
        // A list that went well says nothing at warning.
        XCTAssertEqual(store.all.map(\.message), [])
        XCTAssertEqual(LoggerHook.level(.debug), .debug)
        XCTAssertEqual(LoggerHook.level(.error), .error)
    }

    func testFinalFailureIsAWarningEvent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "sheaf.test") { _ in CapturingLogHandler(store: store) }
        let hooks = Hooks(logger: logger)
        let client = try makeClient(server, credential: .bearer("wrong-credential-42"), hooks: hooks)
        do {
            _ = try await client.fetchAll(Item.self, path: "/anchor?n=30&per_page=10&bearer=\(token)")
            XCTFail("the token was refused")
        } catch {
            XCTAssertEqual(error.error.httpStatus, 401)
        }
        hooks.flush()
        hooks.close()
        let refused = store.all.filter { $0.metadata["sheaf.event"] == "authentication_refused" }
        XCTAssertFalse(refused.isEmpty)
        XCTAssertTrue(refused.allSatisfy { $0.level == .warning && $0.metadata["sheaf.status"] == "401" })
        XCTAssertFalse(store.all.contains { $0.message.contains("wrong-credential-42") || "\($0.metadata)".contains("wrong-credential-42") })
    }
}

final class MetricsTests: XCTestCase {
    func testCountsOfAListWithARetry() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let metrics = TestMetrics()
        let hook = MetricsHook(dimensions: [("client", "upstream")], factory: metrics)
        let hooks = Hooks(metrics: hook)
        let client = try makeClient(server, hooks: hooks)
        let items = try await client.fetchAll(Item.self, path: "/anchor?n=30&per_page=10&fail=2:1:503")
        XCTAssertEqual(items.count, 30)
        hooks.flush()
        hooks.close()

        let origin = server.baseURL
        let ok = [("origin", origin), ("method", "GET"), ("status_class", "2xx"), ("client", "upstream")]
        let unavailable = [("origin", origin), ("method", "GET"), ("status_class", "5xx"), ("client", "upstream")]
        XCTAssertEqual(metrics.counterTotal(label: "sheaf_requests_total"), 4)
        XCTAssertEqual(try metrics.expectCounter("sheaf_requests_total", ok).totalValue, 3)
        XCTAssertEqual(try metrics.expectCounter("sheaf_requests_total", unavailable).totalValue, 1)
        XCTAssertEqual(try metrics.expectTimer("sheaf_request_duration", ok).values.count, 3)
        XCTAssertEqual(try metrics.expectCounter("sheaf_retries_total", unavailable).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("sheaf_failures_total", unavailable).totalValue, 1)
        XCTAssertEqual(metrics.counterTotal(label: "sheaf_failures_total"), 1)
        XCTAssertEqual(try metrics.expectCounter("sheaf_pages_total", [("origin", origin), ("client", "upstream")]).totalValue, 3)
        XCTAssertEqual(try metrics.expectCounter("sheaf_lists_total", [("origin", origin), ("client", "upstream")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("sheaf_events_total", [("origin", origin), ("event", "retrying"),
                                                                          ("client", "upstream")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("sheaf_events_total", [("origin", origin), ("event", "rate_limited"),
                                                                          ("client", "upstream")]).totalValue, 1)
        // The window as planned and after each change (it may grow from 8 before the plan is
        // logged); the refused request shrank it.
        let window = try metrics.expectGauge("sheaf_window", [("client", "upstream")])
        XCTAssertEqual(Int64(window.values.count - 1), metrics.counterTotal(label: "sheaf_window_changes_total"),
                       "one gauge value per change and one for the plan: \(window.values)")
        XCTAssertTrue(window.values.allSatisfy { $0 >= 1 && $0 <= 64 }, "\(window.values)")
        XCTAssertGreaterThanOrEqual(try metrics.expectCounter("sheaf_window_changes_total",
                                                              [("direction", "shrink"), ("client", "upstream")]).totalValue, 1)
    }

    func testTransportFailuresAreCountedWithoutAStatus() async throws {
        let server = try TestServer()
        let base = server.baseURL
        server.stop()
        let metrics = TestMetrics()
        let hooks = Hooks(metrics: MetricsHook(factory: metrics))
        var configuration = ClientConfiguration()
        configuration.retry.maxAttempts = 2
        let client = try SheafClient(baseURL: base, transport: AsyncTransportAdapter(AsyncHTTPClientTransport(client: sharedHTTPClient)),
                                     configuration: configuration, hooks: hooks)
        do {
            _ = try await client.fetchAll(Item.self, path: "/anchor?n=30&per_page=10")
            XCTFail("no server")
        } catch {
            XCTAssertEqual(error.error.code, .transport)
        }
        hooks.flush()
        hooks.close()
        let failed = [("origin", base), ("method", "GET"), ("status_class", "error")]
        XCTAssertGreaterThanOrEqual(try metrics.expectCounter("sheaf_failures_total", failed).totalValue, 2)
        XCTAssertGreaterThanOrEqual(try metrics.expectCounter("sheaf_events_total", [("origin", base), ("event", "offline"),
                                                                                       ("transport_error", "connect")]).totalValue, 1)
        XCTAssertEqual(metrics.counterTotal(label: "sheaf_pages_total"), 0)
    }

    /// What the hook reads from records' text, on the texts the core writes.
    func testReadingRecords() {
        XCTAssertEqual(MetricsHook.plannedWindow("u: the 3 pages are addressed and their count is known: 8 in flight; the list as read: {}"), 8)
        XCTAssertEqual(MetricsHook.plannedWindow("u: the pages are addressed, their count unknown: a window of 8 adapting up to 64 in flight ahead of the end; ..."), 8)
        XCTAssertEqual(MetricsHook.plannedWindow("u: each page names the next (a link or a cursor): one at a time; ..."), 1)
        XCTAssertEqual(MetricsHook.windowChange("window 8 → 4: the server refused a request with 8 in flight")?.1, 4)
        XCTAssertEqual(MetricsHook.windowChange("window 12 → 16: answers come as fast as the best (3 ms)")?.0, 12)
        XCTAssertEqual(MetricsHook.origin("HTTPS://Api.Example.com:8443/v1/items?page=2"), "https://api.example.com:8443")
        XCTAssertEqual(MetricsHook.origin("http://user@host/x"), "http://host")
        XCTAssertEqual(MetricsHook.origin(nil), "unknown")
        XCTAssertEqual(MetricsHook.statusClass(0), "error")
        XCTAssertEqual(MetricsHook.statusClass(404), "4xx")
    }
}

final class CombinedHooksTests: XCTestCase {
    /// One `Hooks` feeding both, as docs/guides/swift.md shows.
    func testOneHooksForLoggerAndMetrics() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "sheaf.test") { _ in CapturingLogHandler(store: store) }
        let testMetrics = TestMetrics()

        let log = LoggerHook(logger: logger)
        let metrics = MetricsHook(dimensions: [("client", "upstream")], factory: testMetrics)
        let hooks = Hooks(logLevel: .debug,
                          onLog: { log.log($0); metrics.record($0) },
                          onEvent: { log.log($0); metrics.record($0) })

        let client = try makeClient(server, hooks: hooks)
        _ = try await client.fetchAll(Item.self, path: "/anchor?n=50&per_page=10")
        hooks.flush()
        hooks.close()
        XCTAssertEqual(store.all.filter { $0.metadata["sheaf.kind"] == "request" }.count, 5)
        XCTAssertEqual(testMetrics.counterTotal(label: "sheaf_pages_total"), 5)
    }
}
