import XCTest
@testable import Sheaf

/// A transport that records every request and answers with `answer`.
private final class Recorder: Transport, @unchecked Sendable {
    private let lock = Lock()
    private var requests: [HTTPRequest] = []
    private let answer: @Sendable (HTTPRequest) -> Result<HTTPResponse, TransportError>

    init(_ answer: @escaping @Sendable (HTTPRequest) -> Result<HTTPResponse, TransportError> = { _ in
        .success(HTTPResponse(status: 200, body: Array("{}".utf8)))
    }) {
        self.answer = answer
    }

    var sent: [HTTPRequest] { lock.withLock { requests } }

    func send(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask {
        lock.withLock { requests.append(request) }
        completion(answer(request))
        return FinishedTransportTask()
    }
}

final class RequestTests: XCTestCase {
    func testABaseURLIsAPrefixOfEveryRelativePath() throws {
        let client = try SheafClient(baseURL: "https://api.example.com/v2?tenant=7", transport: Recorder())
        XCTAssertEqual(try client.url(forPath: "items"), "https://api.example.com/v2/items?tenant=7")
        XCTAssertEqual(try client.url(forPath: "/items?a=1"), "https://api.example.com/v2/items?tenant=7&a=1")
        XCTAssertEqual(try client.url(forPath: "", query: [("q", "a b")]), "https://api.example.com/v2?tenant=7&q=a%20b")
        XCTAssertEqual(try client.url(forPath: "../v1/old"), "https://api.example.com/v1/old?tenant=7")
        XCTAssertEqual(try client.url(forPath: "https://api.example.com/other"), "https://api.example.com/other")
        // Found by the parsers fuzzer (corpus/parsers/request-crash-relative-path-to-another-host):
        // with its "/" dropped, "/http://n" was an absolute URL, and a colon in the first
        // segment made a scheme of it.
        XCTAssertEqual(try client.url(forPath: "/http://evil.example/x"), "https://api.example.com/v2/http://evil.example/x?tenant=7")
        XCTAssertEqual(try client.url(forPath: "//https://evil.example"), "https://api.example.com/v2/https://evil.example?tenant=7")
        XCTAssertEqual(try client.url(forPath: "users:1"), "https://api.example.com/v2/users:1?tenant=7")
        let slash = try SheafClient(baseURL: "https://api.example.com/v2/", transport: Recorder())
        XCTAssertEqual(try slash.url(forPath: "/items"), "https://api.example.com/v2/items")
    }

    func testASegmentIsEscapedWhole() {
        var request = Request(path: "users")
        request.appendSegment("a/b c?d")
        request.appendSegment("repos")
        XCTAssertEqual(request.path, "users/a%2Fb%20c%3Fd/repos")
    }

    func testASegmentGoesBeforeTheQueryOrFragmentThePathCarries() throws {
        // Found by the parsers fuzzer (corpus/parsers/request-path-with-query): appended after
        // the query, the id became part of a query value, and DELETE items?force=1 + "42" went
        // to the collection.
        var request = Request(method: "DELETE", path: "items?force=1")
        request.appendSegment("42")
        request.appendSegment("a?b")
        XCTAssertEqual(request.path, "items/42/a%3Fb?force=1")
        var fragment = Request(path: "/items/#top")
        fragment.appendSegment("..")
        XCTAssertEqual(fragment.path, "/items/%2E%2E#top")
        var query = Request(path: "?q=1")
        query.appendSegment("x")
        XCTAssertEqual(query.path, "x?q=1")

        let recorder = Recorder()
        let client = try SheafClient(baseURL: "https://api.example.com/v2?tenant=7", transport: recorder)
        request.query = [Request.FormField("why", "a/b")]
        _ = try client.send(request)
        XCTAssertEqual(recorder.sent.map(\.url), ["https://api.example.com/v2/items/42/a%3Fb?tenant=7&force=1&why=a%2Fb"])

        // A stray "%" in the path is escaped alone: the segment after it is sent escaped once.
        var stray = Request(path: "files/100%")
        stray.appendSegment("a:b@c")
        _ = try client.send(stray)
        XCTAssertEqual(recorder.sent.last?.url, "https://api.example.com/v2/files/100%25/a%3Ab%40c?tenant=7")

        // Found by the fuzzer too (corpus/parsers/request-crash-segment-as-host): after an empty
        // authority, a segment became the host.
        var authority = Request(path: "https://")
        authority.appendSegment("evil.example")
        XCTAssertEqual(authority.path, "https:///evil.example")
        XCTAssertThrowsError(try client.makeRequest(authority))
        XCTAssertEqual(recorder.sent.count, 2)
    }

    func testAURLWithUserInformationIsNeverSent() throws {
        // Found by the parsers fuzzer (corpus/parsers/request-crash-absolute-path-with-userinfo):
        // a path (like a next link or a redirect) could name user:password@, which the base URL
        // may not: the transport sends it as a credential of its own, and messages showed it.
        var configuration = ClientConfiguration()
        configuration.crossOrigin = .followWithoutCredentials
        let recorder = Recorder()
        let client = try SheafClient(baseURL: "https://api.example.com/", credential: .bearer("tok-123456"),
                                     transport: recorder, configuration: configuration)
        for path in ["https://user:hunter2@api.example.com/x", "https://hunter2@cdn.example.net/x", "https://@\u{1}", "https://:hunter2@api.example.com/"] {
            XCTAssertThrowsError(try client.send(Request(path: path)), path) { error in
                let error = error as? SheafError
                XCTAssertEqual(error?.code, .invalidArgument, path)
                XCTAssertFalse("\(error?.message ?? "") \(error?.url ?? "")".contains("hunter2"), path)
            }
        }
        XCTAssertEqual(recorder.sent.count, 0)
    }

    func testTheClientsCredentialIsTheOnlyOneSent() throws {
        // Found by the parsers fuzzer (corpus/parsers/request-caller-authorization): a request's
        // Authorization header went out beside the client's, two credentials in one request.
        let cases: [(Credential, String, String)] = [
            (.bearer("tok-123456"), "Authorization", "Bearer tok-123456"),
            (.basic(user: "Aladdin", password: "open sesame"), "Authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
            (.apiKeyHeader(name: "X-Key", value: "k-987654"), "X-Key", "k-987654"),
        ]
        for (credential, name, value) in cases {
            let recorder = Recorder()
            let client = try SheafClient(baseURL: "https://api.example.com/", credential: credential,
                                         headers: [HTTPHeader(name: name.uppercased(), value: "from-the-client-headers")],
                                         transport: recorder)
            var request = Request(path: "x")
            request.headers = [HTTPHeader(name: name.lowercased(), value: "from-the-request")]
            _ = try client.send(request)
            let sent = try XCTUnwrap(recorder.sent.first)
            XCTAssertEqual(sent.headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value), [value], "\(credential)")
        }
        // Without a credential, a caller's Authorization is the one sent.
        let recorder = Recorder()
        var request = Request(path: "x")
        request.headers = [HTTPHeader(name: "Authorization", value: "Custom abc")]
        _ = try SheafClient(baseURL: "https://api.example.com/", transport: recorder).send(request)
        XCTAssertEqual(recorder.sent.first?.headers.filter { $0.name == "Authorization" }.map(\.value), ["Custom abc"])
    }

    func testEachCredentialIsSentOnlyToItsOriginAndHiddenInMessages() throws {
        let cases: [(Credential, String?, String)] = [
            (.bearer("tok-123456"), "Bearer tok-123456", "tok-123456"),
            (.basic(user: "Aladdin", password: "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", "open sesame"),
            (.apiKeyHeader(name: "X-Key", value: "k-987654"), nil, "k-987654"),
            (.apiKeyQuery(name: "appid", value: "q-555555"), nil, "q-555555"),
        ]
        for (credential, authorization, secret) in cases {
            var configuration = ClientConfiguration()
            configuration.crossOrigin = .followWithoutCredentials
            let client = try SheafClient(baseURL: "https://api.example.com/", credential: credential,
                                         headers: [HTTPHeader(name: "Cookie", value: "c=1")], transport: Recorder(),
                                         configuration: configuration)
            let own = try client.request(for: "https://api.example.com/x")
            XCTAssertEqual(own.headers.first(named: "Authorization"), authorization)
            XCTAssertTrue(own.url.contains(secret) || own.headers.contains { $0.value.contains(secret) || $0.value == authorization },
                          "\(credential) is sent")
            let foreign = try client.request(for: "https://cdn.example.net/x")
            XCTAssertFalse(foreign.url.contains(secret))
            XCTAssertNil(foreign.headers.first(named: "Authorization"))
            XCTAssertNil(foreign.headers.first(named: "Cookie"))
            XCTAssertFalse(foreign.headers.contains { $0.value.contains(secret) })
            XCTAssertThrowsError(try client.request(for: "http://api.example.com/x"), "never https to http")
            XCTAssertFalse(client.redactor.redact("see \(secret) and \(authorization ?? "")").contains(secret))
        }
        let refusing = try SheafClient(baseURL: "https://api.example.com/", credential: .bearer("t"), transport: Recorder())
        XCTAssertThrowsError(try refusing.request(for: "https://cdn.example.net/x")) { error in
            XCTAssertEqual((error as? SheafError)?.code, .crossOrigin)
        }
    }

    func testAnotherOriginGetsNoSecretQueryParameterButTheBuiltInNamesGoAsTheyAre() throws {
        var configuration = ClientConfiguration()
        configuration.crossOrigin = .followWithoutCredentials
        let client = try SheafClient(baseURL: "https://api.example.com/", credential: .apiKeyQuery(name: "appid", value: "q-555555"),
                                     secretParameters: ["session"], transport: Recorder(), configuration: configuration)
        // A redirect's Location (or a next link) that echoes the key and a parameter marked secret.
        let echoed = "?AppID=q-555555&page=2&session=s-1&app%69d=q-555555&signature=presigned"
        XCTAssertEqual(try client.request(for: "https://cdn.example.net/x" + echoed).url,
                       "https://cdn.example.net/x?page=2&signature=presigned")
        XCTAssertEqual(try client.request(for: "https://cdn.example.net/x?session=s-1").url, "https://cdn.example.net/x")
        let own = try client.request(for: "https://api.example.com/x?session=s-1").url
        XCTAssertTrue(own.contains("session=s-1") && own.contains("appid=q-555555"), own)
    }

    func testOnlyRequestsTheLibraryRetriesMayBeResentByTheTransport() throws {
        let client = try SheafClient(baseURL: "https://api.example.com/", transport: Recorder())
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"] {
            let template = FetchTemplate(method: method, isRetriable: Request(method: method, path: "x").isRetriable)
            XCTAssertTrue(try client.request(for: "https://api.example.com/x", template).mayResend, method)
        }
        for method in ["POST", "PATCH"] {
            let template = FetchTemplate(method: method, isRetriable: Request(method: method, path: "x").isRetriable)
            XCTAssertFalse(try client.request(for: "https://api.example.com/x", template).mayResend, method)
        }
    }

    func testCredentialsAndHeadersThatCannotBeSentAreRefused() {
        // (an API key header that frames the message, too: it went out as Content-Length or Host)
        let bad: [Credential] = [.bearer(""), .bearer("a\nb"), .basic(user: "a:b", password: "c"),
                                 .apiKeyHeader(name: "X Key", value: "v"), .apiKeyQuery(name: "k", value: ""),
                                 .apiKeyHeader(name: "Content-Length", value: "0"), .apiKeyHeader(name: "host", value: "h")]
        for credential in bad {
            XCTAssertThrowsError(try SheafClient(baseURL: "https://a.example/", credential: credential, transport: Recorder()),
                                 "\(credential)")
        }
        XCTAssertThrowsError(try SheafClient(baseURL: "https://a.example/", headers: [HTTPHeader(name: "X", value: "a\r\nb: c")],
                                             transport: Recorder()))
        for request in [Request(method: "GE T", path: "x"), {
            var get = Request(path: "x")
            get.body = .bytes([1], contentType: "application/octet-stream")
            return get
        }()] {
            XCTAssertThrowsError(try request.validated())
        }
    }

    func testHeadersThatFrameTheMessageAreTheTransportsAndRefusedFromCallers() throws {
        // A caller's Content-Length: 0 on a POST left its body on a keep-alive connection, read
        // by the server as a second request.
        for name in ["Content-Length", "content-length", "Transfer-Encoding", "TRANSFER-ENCODING", "Host", "Connection"] {
            let header = HTTPHeader(name: name, value: "0")
            XCTAssertThrowsError(try SheafClient(baseURL: "https://a.example/", headers: [header], transport: Recorder()), name) {
                XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument)
                XCTAssertTrue(($0 as? SheafError)?.message.contains(name) == true, "\($0)")
            }
            let recorder = Recorder()
            var request = Request(method: "POST", path: "x")
            request.body = .bytes(Array("GET /admin HTTP/1.1\r\n\r\n".utf8), contentType: "text/plain")
            request.headers = [HTTPHeader(name: "X-Fine", value: "1"), header]
            XCTAssertThrowsError(try SheafClient(baseURL: "https://a.example/", transport: recorder).makeRequest(request), name) {
                XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument)
                XCTAssertTrue(($0 as? SheafError)?.message.contains(name) == true, "\($0)")
            }
            XCTAssertTrue(recorder.sent.isEmpty)
        }
        for value in ["a\u{0}b", "a\rb", "a\nb"] {
            XCTAssertThrowsError(try HeaderRules.check(HTTPHeader(name: "X-Fine", value: value)))
            XCTAssertThrowsError(try HeaderRules.check(HTTPHeader(name: "X-Fine" + value, value: "v")))
        }
        // Any other header goes out as given.
        let recorder = Recorder()
        let client = try SheafClient(baseURL: "https://a.example/", headers: [HTTPHeader(name: "X-Client", value: "c")],
                                     transport: recorder)
        var request = Request(method: "POST", path: "x")
        request.headers = [HTTPHeader(name: "X-Content-Length-Note", value: "r"), HTTPHeader(name: "Idempotency-Key", value: "k")]
        _ = try client.send(request)
        let sent = try XCTUnwrap(recorder.sent.first)
        XCTAssertEqual(sent.headers.first(named: "X-Client"), "c")
        XCTAssertEqual(sent.headers.first(named: "x-content-length-note"), "r")
        XCTAssertEqual(sent.headers.first(named: "Idempotency-Key"), "k")
    }

    func testSecretParametersAreHiddenInEverySpellingOfAURL() {
        let redactor = Redactor([], parameters: Redactor.secretParameters + ["session"])
        XCTAssertEqual(redactor.redact("GET https://a.example/x?API_KEY=abc&page=2: HTTP 401"),
                       "GET https://a.example/x?API_KEY=<redacted>&page=2: HTTP 401")
        XCTAssertEqual(redactor.redact(#"{"next":"/x?page=3&session=zz9\"}"#), #"{"next":"/x?page=3&session=<redacted>\"}"#)
        XCTAssertEqual(redactor.redact("/x?monkey=1&key="), "/x?monkey=1&key=", "only whole names, and a value to hide")
        let echoed = redactor.addingSecretValues(in: "https://a.example/x?token=t0k3n-value&n=123456")
        XCTAssertEqual(echoed.redact(#"{"query":[["token","t0k3n-value"],["n","123456"]]}"#),
                       #"{"query":[["token","<redacted>"],["n","123456"]]}"#)
    }

    func testOnlyIdempotentMethodsAreRetriedUnlessTheCallerSaysSo() throws {
        let unavailable: Result<HTTPResponse, TransportError> = .success(HTTPResponse(status: 503))
        let timeout: Result<HTTPResponse, TransportError> = .failure(TransportError(.timeout, "slow"))
        func decision(_ request: Request, _ result: Result<HTTPResponse, TransportError>) -> AnswerPolicy.Decision {
            let template = FetchTemplate(method: request.method, isRetriable: request.isRetriable, deliversFailures: true)
            return AnswerPolicy(ClientConfiguration(), redactor: Redactor([]), template: template)
                .decide(result, url: "https://a.example/x", method: request.method, attempt: 1, redirects: 0) { _, _ in 5 }
        }
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"] {
            XCTAssertEqual(decision(Request(method: method, path: "x"), unavailable), .retry(afterMilliseconds: 5), method)
        }
        for method in ["POST", "PATCH"] {
            XCTAssertEqual(decision(Request(method: method, path: "x"), unavailable), .deliver(HTTPResponse(status: 503)), method)
            guard case .fail(let error) = decision(Request(method: method, path: "x"), timeout) else {
                return XCTFail("\(method): a timeout is not retried")
            }
            XCTAssertEqual(error.code, .transport, method)
            var optedIn = Request(method: method, path: "x")
            optedIn.retriesUnsafeMethod = true
            XCTAssertEqual(decision(optedIn, unavailable), .retry(afterMilliseconds: 5))
            var keyed = Request(method: method, path: "x")
            keyed.headers = [HTTPHeader(name: "idempotency-key", value: "k1")]
            XCTAssertEqual(decision(keyed, timeout), .retry(afterMilliseconds: 5))
        }
    }

    func testRedirectsChangeTheMethodOnlyWhereHTTPSaysSo() {
        let policy = AnswerPolicy(ClientConfiguration(), redactor: Redactor([]))
        func redirect(_ status: Int, _ method: String) -> AnswerPolicy.Decision {
            policy.decide(.success(HTTPResponse(status: status, headers: [HTTPHeader(name: "Location", value: "/y")])),
                          url: "https://a.example/x", method: method, attempt: 1, redirects: 0) { _, _ in 0 }
        }
        XCTAssertEqual(redirect(303, "POST"), .redirect(to: "https://a.example/y", method: "GET"))
        XCTAssertEqual(redirect(303, "PUT"), .redirect(to: "https://a.example/y", method: "GET"))
        XCTAssertEqual(redirect(303, "HEAD"), .redirect(to: "https://a.example/y", method: "HEAD"))
        XCTAssertEqual(redirect(302, "POST"), .redirect(to: "https://a.example/y", method: "GET"))
        XCTAssertEqual(redirect(302, "PUT"), .redirect(to: "https://a.example/y", method: "PUT"))
        XCTAssertEqual(redirect(307, "POST"), .redirect(to: "https://a.example/y", method: "POST"))
        XCTAssertEqual(redirect(308, "PATCH"), .redirect(to: "https://a.example/y", method: "PATCH"))
    }

    func testASentRequestCarriesItsBodyHeadersAndAnswer() throws {
        let recorder = Recorder { _ in .success(HTTPResponse(status: 422, body: Array(#"{"detail":[{"loc":["body","n"],"msg":"bad"}]}"#.utf8))) }
        let client = try SheafClient(baseURL: "https://a.example/api", headers: [HTTPHeader(name: "X-Default", value: "1")],
                                     transport: recorder)
        var request = Request(method: "POST", path: "forms")
        request.body = .form([Request.FormField("a b", "c&d")])
        request.headers = [HTTPHeader(name: "x-default", value: "2")]
        let run = try client.makeRequest(request)
        try run.start()
        let (response, error) = try run.wait()
        XCTAssertEqual(response?.status, 422)
        XCTAssertEqual(error?.code, .http)
        XCTAssertEqual(error?.serverMessage, "body.n: bad")
        let sent = try XCTUnwrap(recorder.sent.first)
        XCTAssertEqual(recorder.sent.count, 1, "a POST is not retried")
        XCTAssertEqual(sent.url, "https://a.example/api/forms")
        XCTAssertEqual(String(decoding: sent.body, as: UTF8.self), "a%20b=c%26d")
        XCTAssertEqual(sent.headers.first(named: "Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(sent.headers.filter { $0.name.lowercased() == "x-default" }.map(\.value), ["2"])
    }

    func testADownloadFromATransportThatDoesNotStreamIsWrittenByTheCore() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sheaf-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let body = Array((0..<10_000).map { UInt8($0 % 251) })
        let recorder = Recorder { request in
            request.url.hasSuffix("/missing") ? .success(HTTPResponse(status: 404, body: Array(#"{"message":"gone"}"#.utf8)))
                : .success(HTTPResponse(status: 200, headers: [HTTPHeader(name: "Content-Length", value: "10000")], body: body))
        }
        let client = try SheafClient(baseURL: "https://a.example/", transport: recorder)
        let destination = folder + "/x/file.bin"
        let run = try client.makeRequest(Request(path: "file"), downloadingTo: destination)
        try run.start()
        let (response, error) = try run.wait()
        XCTAssertNil(error)
        XCTAssertEqual(response?.body, [], "the body is in the file")
        XCTAssertEqual(FileManager.default.contents(atPath: destination).map(Array.init), body)
        XCTAssertTrue(run.progress == (10_000, 10_000))
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination + ".part"))

        let failing = try client.makeRequest(Request(path: "missing"), downloadingTo: destination)
        try failing.start()
        XCTAssertEqual(try failing.wait().error?.serverMessage, "message: gone")
        XCTAssertEqual(FileManager.default.contents(atPath: destination).map(Array.init), body, "the old file stays")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination + ".part"))
        XCTAssertThrowsError(try client.makeRequest(Request(path: "file"), downloadingTo: folder)) { error in
            XCTAssertEqual((error as? SheafError)?.code, .invalidArgument)
        }
    }

    func testADownloadMadeButNeverSentLeavesNoPartFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sheaf-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let client = try SheafClient(baseURL: "https://a.example/", transport: Recorder { _ in .success(HTTPResponse(status: 200)) })
        let destination = folder + "/file.bin"
        do {
            let run = try client.makeRequest(Request(path: "file"), downloadingTo: destination)
            let made = try FileManager.default.contentsOfDirectory(atPath: folder)
            XCTAssertEqual(made.count, 1)
            XCTAssertTrue(made.allSatisfy { $0.hasPrefix(".file.bin.sheaf-") }, "\(made)")
            _ = run
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), [])
    }

    func testAPartOfTheFileAnsweringARequestForAllOfItIsRefusedAndNothingKept() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sheaf-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let recorder = Recorder { request in
            let whole = request.url.hasSuffix("/whole")
            return .success(HTTPResponse(status: 206, headers: [
                HTTPHeader(name: "Content-Range", value: whole ? "bytes 0-999/1000" : "bytes 0-999/200000"),
                HTTPHeader(name: "Content-Length", value: "1000")], body: Array(repeating: 7, count: 1000)))
        }
        let client = try SheafClient(baseURL: "https://a.example/", transport: recorder)
        let destination = folder + "/file.bin"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: destination, contents: Data("old".utf8)))
        let run = try client.makeRequest(Request(path: "part"), downloadingTo: destination)
        try run.start()
        let error = try run.wait().error
        XCTAssertEqual(error?.code, .transport)
        XCTAssertTrue(error?.message.contains("part of the file (Content-Range: bytes 0-999/200000)") == true, "\(String(describing: error))")
        XCTAssertEqual(FileManager.default.contents(atPath: destination), Data("old".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), ["file.bin"])
        // A 206 that holds all of the file is the file.
        let whole = try client.makeRequest(Request(path: "whole"), downloadingTo: destination)
        try whole.start()
        XCTAssertNil(try whole.wait().error)
        XCTAssertEqual(FileManager.default.contents(atPath: destination), Data(repeating: 7, count: 1000))
    }

    func testAResumedRangeIsAppendedOnlyWhenItCarriesTheValidatorItWasAskedFor() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sheaf-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = "Tue, 01 Sep 2026 10:00:00 GMT", second = "Wed, 02 Sep 2026 10:00:00 GMT"
        func header(_ name: String, _ value: String) -> HTTPHeader { HTTPHeader(name: name, value: value) }
        /// A transfer of 10 bytes broken after 4, resumed by a 206 with `lastModified`.
        func resumed(_ lastModified: String) throws -> (FileDownload, [HTTPHeader], Bool) {
            let download = try FileDownload(destination: folder + "/file.bin")
            XCTAssertTrue(download.begin(status: 200, headers: [header("Content-Length", "10"), header("Last-Modified", first)]))
            XCTAssertTrue([UInt8]([0, 1, 2, 3]).withUnsafeBytes { download.write($0) })
            let asked = download.resumeHeaders()
            XCTAssertTrue(download.begin(status: 206, headers: [header("Content-Range", "bytes 4-9/10"), header("Content-Length", "6"),
                                                               header("Last-Modified", lastModified)]))
            return (download, asked, [UInt8]([4, 5, 6, 7, 8, 9]).withUnsafeBytes { download.write($0) })
        }
        let (same, asked, appended) = try resumed(first)
        XCTAssertEqual(asked, [header("Range", "bytes=4-"), header("If-Range", first)])
        XCTAssertTrue(appended)
        try same.complete()
        XCTAssertEqual(FileManager.default.contents(atPath: folder + "/file.bin"), Data([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]))

        let (changed, _, spliced) = try resumed(second)
        XCTAssertFalse(spliced, "a range of another version is not appended")
        XCTAssertEqual(changed.writeFailure?.code, .transport)
        XCTAssertTrue(changed.writeFailure?.message.contains("changed on the server") == true)
        XCTAssertThrowsError(try changed.complete())
        changed.abandon()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), ["file.bin"])
    }
}
