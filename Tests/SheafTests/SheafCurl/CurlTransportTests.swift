import Foundation
import XCTest
import Sheaf
import SheafCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

final class CurlTransportTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }

    // MARK: - Responses

    func testGetReturnsStatusHeadersAndBody() throws {
        let transport = CurlTransport()
        let request = HTTPRequest(url: server.url("/anchor?page=2&per_page=3&n=10"),
                                  headers: [HTTPHeader(name: "Authorization", value: "Bearer secret-token"),
                                            HTTPHeader(name: "Accept", value: "application/json")])
        let response = try CurlResults.one(transport, request).get()

        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers.first(named: "content-type"), "application/json")
        XCTAssertEqual(response.headers.first(named: "Server"), "sheaf-test-api")
        XCTAssertEqual(response.headers.first(named: "Content-Length"), String(response.body.count))
        let text = String(decoding: response.body, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix(#"{"items":[{"id":3,"name":"item-3"},"#), text)
        XCTAssertTrue(text.hasSuffix(#","total":10}"#), text)

        let log = try server.stats().log
        XCTAssertEqual(log.last?.path, "/anchor?page=2&per_page=3&n=10")
        XCTAssertEqual(log.last?.authorization, "Bearer secret-token")
    }

    func testFailingStatusIsAResponseAndRedirectsAreNotFollowed() throws {
        let transport = CurlTransport()
        let missing = try CurlResults.one(transport, HTTPRequest(url: server.url("/status?code=503&retry_after=7"))).get()
        XCTAssertEqual(missing.status, 503)
        XCTAssertEqual(missing.headers.first(named: "retry-after"), "7")

        let target = server.url("/anchor?page=1")
        let redirect = try CurlResults.one(transport, HTTPRequest(url: server.url("/redirect?to=\(target)&code=301"))).get()
        XCTAssertEqual(redirect.status, 301)
        XCTAssertEqual(redirect.headers.first(named: "Location"), target)
    }

    func testManyConcurrentRequestsOverlap() throws {
        let transport = CurlTransport()
        try server.reset()
        let count = 32
        let results = CurlResults()
        let start = Date()
        var tasks: [any TransportTask] = []
        for page in 1...count {
            let request = HTTPRequest(url: server.url("/anchor?page=\(page)&per_page=2&n=1000&latency_ms=200"))
            tasks.append(transport.send(request, completion: results.recorder(page)))
        }
        XCTAssertTrue(results.wait(for: count, seconds: 20), "only \(results.count) of \(count) answered")
        let elapsed = Date().timeIntervalSince(start)

        for (page, result) in results.all {
            let response = try result.get()
            XCTAssertEqual(response.status, 200)
            let text = String(decoding: response.body, as: UTF8.self)
            XCTAssertTrue(text.hasPrefix(#"{"items":[{"id":\#((page - 1) * 2),"#), text)
        }
        let stats = try server.stats()
        XCTAssertEqual(stats.requests, count)
        XCTAssertGreaterThanOrEqual(stats.maxInFlight, 16, "the requests were not concurrent")
        XCTAssertLessThan(elapsed, Double(count) * 0.2 / 2, "took \(elapsed) s")
        _ = tasks
    }

    func testCompletionMaySendAgainFromTheEventThread() throws {
        let transport = CurlTransport()
        let results = CurlResults()
        let url = server.url("/anchor?page=1&per_page=1")
        _ = transport.send(HTTPRequest(url: url)) { first in
            results.record(1, first)
            _ = transport.send(HTTPRequest(url: url), completion: results.recorder(2))
        }
        XCTAssertTrue(results.wait(for: 2, seconds: 10))
        XCTAssertEqual(results.all.map { try? $0.1.get().status }, [200, 200])
    }

    func testSendsMethodHeadersAndBody() throws {
        let raw = try CurlRawServer(response: "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        let transport = CurlTransport()
        let request = HTTPRequest(method: "PUT", url: raw.url("/things/7?x=1"),
                                  headers: [HTTPHeader(name: "X-Custom", value: "one two"),
                                            HTTPHeader(name: "Content-Type", value: "text/plain")],
                                  body: Array("hello\0body".utf8))
        let response = try CurlResults.one(transport, request).get()
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.body, Array("ok".utf8))

        let seen = raw.receivedRequest()
        XCTAssertTrue(seen.hasPrefix("PUT /things/7?x=1 HTTP/1.1\r\n"), seen)
        XCTAssertTrue(seen.contains("\r\nX-Custom: one two\r\n"), seen)
        XCTAssertTrue(seen.contains("\r\nContent-Length: 10\r\n"), seen)
        XCTAssertFalse(seen.lowercased().contains("expect:"), seen)
        XCTAssertTrue(seen.hasSuffix("\r\n\r\nhello\0body"), seen)
    }

    func testOnlyTheFinalResponseHeadersAreKept() throws {
        let raw = try CurlRawServer(response: "HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nX-Final: yes\r\nX-Folded: first\r\n  second\r\nContent-Length: 4\r\n"
            + "Connection: close\r\n\r\ndone")
        let response = try CurlResults.one(CurlTransport(), HTTPRequest(url: raw.url("/"))).get()
        XCTAssertEqual(response.status, 200)
        XCTAssertNil(response.headers.first(named: "Link"))
        XCTAssertEqual(response.headers.first(named: "X-Final"), "yes")
        XCTAssertEqual(response.headers.first(named: "X-Folded"), "first second")
        XCTAssertEqual(response.headers.map(\.name), ["X-Final", "X-Folded", "Content-Length", "Connection"])
        XCTAssertEqual(response.body, Array("done".utf8))
    }

    func testConnectionsAreReused() throws {
        let echo = try CurlPortEchoServer()
        defer { echo.stop() }
        let transport = CurlTransport()
        let first = try echo.clientPorts(transport, concurrent: 32)
        XCTAssertEqual(first.count, 32, "32 overlapping requests need 32 connections")
        let second = try echo.clientPorts(transport, concurrent: 32)
        XCTAssertTrue(second.isSubset(of: first), "new connections: \(second.subtracting(first).count)")
        let third = try echo.clientPorts(transport, concurrent: 1)
        XCTAssertTrue(third.isSubset(of: first))
    }

    func testConnectionCacheSizeIsHonoured() throws {
        let echo = try CurlPortEchoServer()
        defer { echo.stop() }
        let transport = CurlTransport(maxConnections: 4)
        let first = try echo.clientPorts(transport, concurrent: 16)
        let second = try echo.clientPorts(transport, concurrent: 16)
        XCTAssertLessThanOrEqual(second.intersection(first).count, 4)
    }

    // MARK: - Failures

    func testConnectionRefusedIsConnect() throws {
        let port = try CurlRawServer.closedPort()
        let request = HTTPRequest(url: "http://127.0.0.1:\(port)/anchor", timeoutMilliseconds: 5000)
        let error = try CurlResults.failure(CurlTransport(), request)
        XCTAssertEqual(error.kind, .connect, "\(error)")
        XCTAssertTrue(error.kind.isTransient)
    }

    func testUnknownHostIsDNS() throws {
        let request = HTTPRequest(url: "http://sheaf-test-host.invalid/", timeoutMilliseconds: 5000)
        let error = try CurlResults.failure(CurlTransport(), request)
        if error.kind == .timeout { throw XCTSkip("the resolver did not answer in time") }
        XCTAssertEqual(error.kind, .dns, "\(error)")
    }

    func testTimeout() throws {
        let request = HTTPRequest(url: server.url("/anchor?latency_ms=2000"), timeoutMilliseconds: 200)
        let start = Date()
        let error = try CurlResults.failure(CurlTransport(), request)
        XCTAssertEqual(error.kind, .timeout, "\(error)")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.5)
    }

    func testBodyCapWithContentLength() throws {
        let url = server.url("/anchor?page=1&per_page=10&pad=200")  // about 2.5 kB
        let error = try CurlResults.failure(CurlTransport(), HTTPRequest(url: url, maxBodyBytes: 1000))
        XCTAssertEqual(error.kind, .tooLarge, "\(error)")

        let fits = try CurlResults.one(CurlTransport(), HTTPRequest(url: url, maxBodyBytes: 100_000)).get()
        XCTAssertEqual(fits.status, 200)
        XCTAssertGreaterThan(fits.body.count, 2000)
    }

    func testBodyCapWithoutContentLength() throws {
        let body = String(repeating: "x", count: 5000)
        let response = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body
        let transport = CurlTransport()

        let tooSmall = try CurlRawServer(response: response)
        let error = try CurlResults.failure(transport, HTTPRequest(url: tooSmall.url("/"), maxBodyBytes: 4999))
        XCTAssertEqual(error.kind, .tooLarge, "\(error)")

        let exact = try CurlRawServer(response: response)
        let fits = try CurlResults.one(transport, HTTPRequest(url: exact.url("/"), maxBodyBytes: 5000)).get()
        XCTAssertEqual(fits.body.count, 5000)
    }

    func testAHugeContentLengthReservesNoMemoryUpFront() throws {
        // It used to reserve min(Content-Length, body cap) at the first byte: with a large cap,
        // a claimed 512 GiB body aborted the process. Now the body is cut short, a failure.
        let response = "HTTP/1.1 200 OK\r\nContent-Length: \(1 << 39)\r\nConnection: close\r\n\r\n[1,2,3]"
        let server = try CurlRawServer(response: response)
        let result = try CurlResults.one(CurlTransport(), HTTPRequest(url: server.url("/"), maxBodyBytes: ClientConfiguration.bodyCapLimit))
        guard case .failure(let error) = result else { return XCTFail("a body cut short must not be a response") }
        XCTAssertNotEqual(error.kind, .tooLarge, "\(error)")
    }

    func testResponseHeadersPastCurlsLimitAreNotATransientConnectionFailure() throws {
        // They were reported as a connection failure, and retried 4 times (curl error 56, "Too
        // large response headers", past libcurl's 300 KiB).
        let many = (0..<3000).map { "X-Header-\($0): " + String(repeating: "y", count: 90) + "\r\n" }.joined()
        let server = try CurlRawServer(response: "HTTP/1.1 200 OK\r\n\(many)Content-Length: 2\r\n\r\n[]")
        let error = try CurlResults.failure(CurlTransport(), HTTPRequest(url: server.url("/")))
        XCTAssertFalse(error.kind.isTransient, "\(error.kind): \(error)")
    }

    func testHeaderInjectionIsRefusedWithoutQuotingTheValue() throws {
        let request = HTTPRequest(url: server.url("/anchor"),
                                  headers: [HTTPHeader(name: "Authorization", value: "Bearer tok\r\nX-Evil: 1")])
        let error = try CurlResults.failure(CurlTransport(), request)
        XCTAssertEqual(error.kind, .other)
        XCTAssertFalse(error.description.contains("tok"), error.description)
    }

    // MARK: - Cancelling and closing

    func testCancelledRequestNeverCompletes() throws {
        let transport = CurlTransport()
        let results = CurlResults()
        // Cancelled while still queued, and while in flight.
        let queued = transport.send(HTTPRequest(url: server.url("/anchor?latency_ms=300")), completion: results.recorder(1))
        queued.cancel()
        let inFlight = transport.send(HTTPRequest(url: server.url("/anchor?latency_ms=300")), completion: results.recorder(2))
        Thread.sleep(forTimeInterval: 0.1)
        inFlight.cancel()
        inFlight.cancel()
        // A later request still works, and cancelling it after completion is a no-op.
        let later = transport.send(HTTPRequest(url: server.url("/anchor")), completion: results.recorder(3))
        XCTAssertTrue(results.wait(for: 1, seconds: 10))
        later.cancel()
        Thread.sleep(forTimeInterval: 0.6)
        XCTAssertEqual(results.all.map(\.0), [3])
        XCTAssertEqual(try results.all.first?.1.get().status, 200)
    }

    func testDroppingTheTransportFailsRequestsInFlight() throws {
        var transport: CurlTransport? = CurlTransport()
        let results = CurlResults()
        var tasks: [any TransportTask] = []
        for page in 1...4 {
            let request = HTTPRequest(url: server.url("/anchor?page=\(page)&latency_ms=2000"))
            tasks.append(transport!.send(request, completion: results.recorder(page)))
        }
        tasks[3].cancel()
        Thread.sleep(forTimeInterval: 0.2)
        let start = Date()
        transport = nil
        XCTAssertTrue(results.wait(for: 3, seconds: 1.5), "only \(results.count) answered")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.5)
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(results.all.map(\.0).sorted(), [1, 2, 3])
        for (_, result) in results.all {
            guard case .failure(let error) = result else { return XCTFail("expected a failure") }
            XCTAssertEqual(error.kind, .other)
            XCTAssertEqual(error.message, "transport closed")
        }
        for task in tasks { task.cancel() }  // after close: no-ops
    }

    func testDroppingTheLastReferenceInsideACompletion() throws {
        let holder = CurlTransportHolder(CurlTransport())
        let results = CurlResults()
        let slow = holder.transport!.send(HTTPRequest(url: server.url("/anchor?latency_ms=2000")),
                                          completion: results.recorder(2))
        _ = holder.transport!.send(HTTPRequest(url: server.url("/anchor?page=1"))) { result in
            holder.transport = nil  // the last reference goes away on the event thread
            results.record(1, result)
        }
        XCTAssertTrue(results.wait(for: 2, seconds: 1.5), "only \(results.count) answered")
        XCTAssertEqual(try results.all.first { $0.0 == 1 }?.1.get().status, 200)
        guard case .failure(let error)? = results.all.first(where: { $0.0 == 2 })?.1 else {
            return XCTFail("the slow request did not fail")
        }
        XCTAssertEqual(error.message, "transport closed")
        slow.cancel()
    }

    func testIdleTransportsComeAndGo() throws {
        for _ in 0..<20 {
            let transport = CurlTransport()
            _ = try CurlResults.one(transport, HTTPRequest(url: server.url("/anchor?page=1&per_page=1"))).get()
        }
        for _ in 0..<20 {
            _ = CurlTransport()
        }
    }
}

// MARK: - Helpers (private to these tests)

/// Holds a transport that a completion may drop.
private final class CurlTransportHolder: @unchecked Sendable {
    // Only touched by the test thread before the requests start, then by one completion.
    var transport: CurlTransport?
    init(_ transport: CurlTransport) { self.transport = transport }
}

/// Collects completions (tagged by the caller) and lets the test thread wait for them.
private final class CurlResults: @unchecked Sendable {
    // Every access to `results` holds `condition`.
    private let condition = NSCondition()
    private var results: [(Int, Result<HTTPResponse, TransportError>)] = []

    var count: Int { condition.lock(); defer { condition.unlock() }; return results.count }
    var all: [(Int, Result<HTTPResponse, TransportError>)] {
        condition.lock(); defer { condition.unlock() }; return results
    }

    func record(_ tag: Int, _ result: Result<HTTPResponse, TransportError>) {
        condition.lock()
        results.append((tag, result))
        condition.broadcast()
        condition.unlock()
    }

    func recorder(_ tag: Int) -> @Sendable (Result<HTTPResponse, TransportError>) -> Void {
        { self.record(tag, $0) }
    }

    /// Waits until at least `count` results arrived; false on timeout.
    func wait(for count: Int, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while results.count < count {
            if !condition.wait(until: deadline) { return results.count >= count }
        }
        return true
    }

    static func one(_ transport: CurlTransport, _ request: HTTPRequest) throws -> Result<HTTPResponse, TransportError> {
        let results = CurlResults()
        _ = transport.send(request, completion: results.recorder(0))
        guard results.wait(for: 1, seconds: 15) else {
            throw XCTSkip("no answer within 15 s")
        }
        Thread.sleep(forTimeInterval: 0.01)
        XCTAssertEqual(results.count, 1, "completion called more than once")
        return results.all[0].1
    }

    static func failure(_ transport: CurlTransport, _ request: HTTPRequest) throws -> TransportError {
        switch try one(transport, request) {
        case .success(let response):
            XCTFail("expected a failure, got status \(response.status)")
            return TransportError(.other, "unexpected success")
        case .failure(let error):
            return error
        }
    }
}

/// A keep-alive HTTP/1.1 server (Python) whose every answer is the client's port, after 100 ms.
private final class CurlPortEchoServer {
    private static let script = """
        import sys, threading, time
        from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                time.sleep(0.1)
                body = str(self.client_address[1]).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128
        server = Server(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
        server.serve_forever()
        """

    let port: Int
    private let process = Process()
    private let input = Pipe()

    init() throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [ProcessInfo.processInfo.environment["SHEAF_TEST_PYTHON"] ?? "python3",
                             "-c", CurlPortEchoServer.script]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            try? input.fileHandleForWriting.close()
            process.terminate()
            throw XCTSkip("the echo server did not start")
        }
        self.port = port
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// Sends `concurrent` overlapping requests and returns the client ports the server saw.
    func clientPorts(_ transport: CurlTransport, concurrent: Int) throws -> Set<Int> {
        let results = CurlResults()
        for tag in 0..<concurrent {
            _ = transport.send(HTTPRequest(url: "http://127.0.0.1:\(port)/"), completion: results.recorder(tag))
        }
        XCTAssertTrue(results.wait(for: concurrent, seconds: 15))
        return Set(try results.all.map { Int(String(decoding: try $0.1.get().body, as: UTF8.self)) ?? -1 })
    }
}

/// A one-shot loopback server: accepts one connection, reads the request, writes a canned answer.
private final class CurlRawServer: @unchecked Sendable {
    // `request` is guarded by `condition`; the rest is immutable after init.
    let port: Int
    private let listener: Int32
    private let condition = NSCondition()
    private var request: [UInt8] = []
    private var done = false

    init(response: String) throws {
        let (fd, port) = try CurlRawServer.openListener()
        listener = fd
        self.port = port
        let answer = Array(response.utf8)
        Thread.detachNewThread { [self] in serve(answer) }
    }

    deinit {
        close(listener)
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Everything received before the answer went out, as text.
    func receivedRequest() -> String {
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        return String(decoding: request, as: UTF8.self)
    }

    private func serve(_ answer: [UInt8]) {
        var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        let client = poll(&ready, 1, 15_000) == 1 ? accept(listener, nil, nil) : -1
        var received: [UInt8] = []
        if client >= 0 {
            var chunk = [UInt8](repeating: 0, count: 4096)
            // Read the head, then as many body bytes as Content-Length announces.
            while true {
                if let end = CurlRawServer.headEnd(received) {
                    let head = String(decoding: received[..<end], as: UTF8.self).lowercased()
                    let length = head.split(separator: "\r\n")
                        .first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if received.count >= end + 4 + length { break }
                }
                let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                received.append(contentsOf: chunk[0..<n])
            }
            answer.withUnsafeBytes { raw in
                var sent = 0
                while sent < raw.count {
                    let n = send(client, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                    if n <= 0 { break }
                    sent += n
                }
            }
            shutdown(client, Int32(SHUT_WR))
            close(client)
        }
        condition.lock()
        request = received
        done = true
        condition.broadcast()
        condition.unlock()
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    private static func openListener() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw XCTSkip("socket failed") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            close(fd)
            throw XCTSkip("bind/listen failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// A loopback port nothing listens on (bound, then closed without listening).
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw XCTSkip("socket failed") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
