import AsyncHTTPClient
import Sheaf
import SheafAsyncHTTPClient
import XCTest

struct Item: Decodable, Sendable, Equatable {
    let id: Int
    let name: String
}

/// A client shared by the tests, as a server would share its own, configured for Sheaf.
let sharedHTTPClient = HTTPClient(eventLoopGroupProvider: .singleton,
                                  configuration: AsyncHTTPClientTransport.configuration())

func makeClient(_ server: TestServer, configuration: ClientConfiguration = ClientConfiguration(),
                credential: Credential? = nil, hooks: Hooks? = nil) throws -> SheafClient {
    try SheafClient(baseURL: server.baseURL, credential: credential,
                    transport: AsyncTransportAdapter(AsyncHTTPClientTransport(client: sharedHTTPClient)),
                    configuration: configuration, hooks: hooks)
}

final class AsyncHTTPClientTransportTests: XCTestCase {
    func testWholePaginatedListInOrder() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server)
        let items = try await client.fetchAll(Item.self, path: "/anchor?n=537&per_page=20")
        XCTAssertEqual(items.items, (0..<537).map { Item(id: $0, name: "item-\($0)") })
        XCTAssertEqual(items.stopReason, .complete)
        // 27 pages, each asked for once.
        let requests = try await server.requests()
        XCTAssertEqual(requests, 27)
    }

    func testListWithoutTotalFollowsLinks() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server)
        let items = try await client.fetchAll(Item.self, path: "/drf?n=95&page_size=10")
        XCTAssertEqual(items.items.map(\.id), Array(0..<95))
    }

    func test503ThenOKIsRetried() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server)
        // Page 2's first request answers 503 (Retry-After: 0), its second 200.
        let items = try await client.fetchAll(Item.self, path: "/anchor?n=30&per_page=10&fail=2:1:503")
        XCTAssertEqual(items.items.map(\.id), Array(0..<30))
        let requests = try await server.requests()
        XCTAssertEqual(requests, 4)
    }

    func testBodyOverTheCapIsTooLarge() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient)
        // 100 items of 1000 bytes each: about 100 kB against a cap of 10 kB.
        let request = HTTPRequest(url: server.baseURL + "/anchor?n=100&per_page=100&pad=1000", timeoutMilliseconds: 10_000,
                                  maxBodyBytes: 10_000)
        do {
            let response = try await transport.send(request)
            XCTFail("answered \(response.status) with \(response.body.count) bytes")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .tooLarge, "\(error)")
        }
        // Under the cap, the same answer is whole.
        var roomy = request
        roomy.maxBodyBytes = 1 << 20
        let response = try await transport.send(roomy)
        XCTAssertEqual(response.status, 200)
        XCTAssertGreaterThan(response.body.count, 100_000)

        // Through the client: the list fails as a body too large, not retried.
        var configuration = ClientConfiguration()
        configuration.maxBodyBytes = 10_000
        let client = try makeClient(server, configuration: configuration)
        do {
            let items = try await client.fetchAll(Item.self, path: "/anchor?n=100&per_page=100&pad=1000")
            XCTFail("got \(items.count) items")
        } catch {
            XCTAssertEqual(error.error.code, .bodyTooLarge, "\(error.error)")
        }
    }

    func testTimeoutIsATimeout() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient)
        let started = ContinuousClock.now
        do {
            _ = try await transport.send(HTTPRequest(url: server.baseURL + "/anchor?n=10&latency_ms=3000",
                                                     timeoutMilliseconds: 300))
            XCTFail("answered")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .timeout, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
    }

    func testRefusedConnectionIsAConnectFailure() async throws {
        let server = try TestServer()
        let url = server.baseURL + "/anchor"
        server.stop()
        let started = ContinuousClock.now
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient)
        do {
            _ = try await transport.send(HTTPRequest(url: url, timeoutMilliseconds: 5_000))
            XCTFail("answered")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .connect, "\(error)")
        }
        // At once, not after the timeout: Sheaf retries it itself.
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
    }

    func testUnknownHostIsANameResolutionFailure() async throws {
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient)
        let started = ContinuousClock.now
        do {
            _ = try await transport.send(HTTPRequest(url: "http://sheaf-test.invalid/anchor", timeoutMilliseconds: 10_000))
            XCTFail("answered")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .dns, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
    }

    func testCancellingTheTaskCancelsTheList() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server)
        let started = ContinuousClock.now
        let task = Task { try await client.fetchAll(Item.self, path: "/anchor?n=100&per_page=10&latency_ms=5000") }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        do {
            let items = try await task.value
            XCTFail("got \(items.count) items")
        } catch let failure as ListFailure<Item> {
            XCTAssertEqual(failure.error.code, .cancelled, "\(failure.error)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3))
    }

    func testErrorMapping() {
        XCTAssertEqual(AsyncHTTPClientTransport.mapError(HTTPClientError.deadlineExceeded).kind, .timeout)
        XCTAssertEqual(AsyncHTTPClientTransport.mapError(HTTPClientError.connectTimeout).kind, .timeout)
        XCTAssertEqual(AsyncHTTPClientTransport.mapError(HTTPClientError.remoteConnectionClosed).kind, .connect)
        XCTAssertEqual(AsyncHTTPClientTransport.mapError(HTTPClientError.invalidURL).kind, .other)
        XCTAssertEqual(AsyncHTTPClientTransport.mapError(TransportError(.tls, "kept")).kind, .tls)
    }
}

final class TLSMappingTests: XCTestCase {
    /// TLS spoken to a server that speaks plain HTTP fails its handshake: a TLS failure.
    func testHandshakeFailureIsATLSFailure() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient)
        let started = ContinuousClock.now
        do {
            _ = try await transport.send(HTTPRequest(url: "https://127.0.0.1:\(server.port)/anchor", timeoutMilliseconds: 5_000))
            XCTFail("answered")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .tls, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3))
    }
}

final class CompressionTests: XCTestCase {
    /// A compressed answer is decoded, and the cap is on the decoded bytes: a gzip bomb is
    /// refused as too large without being inflated whole.
    func testCompressedAnswersDecodedAndCapped() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient, requestsCompression: true)
        let small = try await transport.send(HTTPRequest(url: server.baseURL + "/req/gzip-bomb?size=5000",
                                                         timeoutMilliseconds: 10_000, maxBodyBytes: 1 << 20))
        XCTAssertEqual(small.status, 200)
        XCTAssertEqual(small.body, [UInt8](repeating: 0, count: 5000))

        // 200 MB of zeros (about 200 kB on the wire) against the request's cap of 1 MiB...
        do {
            let response = try await transport.send(HTTPRequest(url: server.baseURL + "/req/gzip-bomb?size=200000000",
                                                                 timeoutMilliseconds: 10_000, maxBodyBytes: 1 << 20))
            XCTFail("answered \(response.status) with \(response.body.count) bytes")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .tooLarge, "\(error)")
        }
        // ...and against the client's decompression limit (its maxBodyBytes, 64 MiB).
        do {
            let response = try await transport.send(HTTPRequest(url: server.baseURL + "/req/gzip-bomb?size=200000000",
                                                                 timeoutMilliseconds: 10_000, maxBodyBytes: 1 << 30))
            XCTFail("answered \(response.status) with \(response.body.count) bytes")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .tooLarge, "\(error)")
        }
    }
}

final class StallAndCutTests: XCTestCase {
    /// A download's body that stops coming fails after the stall timeout, not never.
    func testStalledBodyTimesOut() async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient)
        var request = HTTPRequest(url: "http://127.0.0.1:\(server.port)/download")
        request.stallTimeoutMilliseconds = 400
        let started = ContinuousClock.now
        do {
            let response = try await transport.send(request)
            XCTFail("answered \(response.status) with \(response.body.count) bytes")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .timeout, "\(error)")
        }
        let took = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(took, .milliseconds(400))
        XCTAssertLessThan(took, .seconds(3))
    }

    /// A connection closed in the middle of the body is a connection failure (libcurl's partial
    /// file), worth another attempt.
    func testBodyCutShortIsAConnectFailure() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(client: sharedHTTPClient)
        do {
            let response = try await transport.send(HTTPRequest(url: server.baseURL + "/req/download?size=100000&key=cut&cut=1000",
                                                                 timeoutMilliseconds: 5_000))
            XCTFail("answered \(response.status) with \(response.body.count) bytes")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .connect, "\(error)")
        }
    }
}
