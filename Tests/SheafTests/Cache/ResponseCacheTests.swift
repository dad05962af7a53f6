import Foundation
import Synchronization
import XCTest
@testable import Sheaf

/// A GitHub-shaped list (issue 44): every page carries a weak ETag of its body and a
/// Last-Modified; a request whose If-None-Match names the page's current tag is answered 304,
/// which costs no point; everything else costs one. `rename` changes chosen items.
private final class ConditionalAPI: Sendable {
    let api: FakeAnchorAPI
    private let state = Mutex((points: 0, notModified: 0, renamed: [Int: String](), conditional: 0))

    init(count: Int) { api = FakeAnchorAPI(count: count) }

    var points: Int { state.withLock { $0.points } }
    var notModified: Int { state.withLock { $0.notModified } }
    /// Requests that carried validators.
    var conditional: Int { state.withLock { $0.conditional } }
    func resetCounts() { state.withLock { $0.points = 0; $0.notModified = 0; $0.conditional = 0 } }
    func rename(_ id: Int, _ name: String) { state.withLock { $0.renamed[id] = name } }

    func reply(_ request: HTTPRequest) -> ScriptedReply {
        let renamed = state.withLock { $0.renamed }
        var body = api.body(request.url)
        for (id, name) in renamed { body = body.replacingOccurrences(of: #""id":\#(id),"name":"item-\#(id)""#, with: #""id":\#(id),"name":"\#(name)""#) }
        let tag = "W/\"\(body.utf8.reduce(UInt64(1469598103934665603)) { ($0 ^ UInt64($1)) &* 1099511628211 })\""
        let asked = request.headers.first(named: "If-None-Match")
        let unchanged = asked == tag
        let left = state.withLock { state -> Int in
            if asked != nil || request.headers.first(named: "If-Modified-Since") != nil { state.conditional += 1 }
            if unchanged { state.notModified += 1 } else { state.points += 1 }
            return 5_000 - state.points
        }
        let headers = [("ETag", tag), ("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT"), ("Cache-Control", "private, max-age=60"),
                       ("Vary", "Accept, Authorization"), ("X-RateLimit-Remaining", String(left)),
                       ("X-RateLimit-Reset", "3600"), ("Date", "Thu, 03 Dec 2026 06:00:00 GMT")]
            .map { HTTPHeader(name: $0.0, value: $0.1) }
        if unchanged { return .status(304, headers: headers) }
        return .json(body, headers: headers)
    }
}

final class ResponseCacheTests: XCTestCase {
    private var folder = ""

    override func setUp() {
        folder = NSTemporaryDirectory() + "sheaf-cache-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/cache"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: (folder as NSString).deletingLastPathComponent)
    }

    private func client(_ transport: ScriptedTransport, token: String = scriptedToken,
                        cache: ResponseCache? = nil) throws -> SheafClient {
        var configuration = ClientConfiguration()
        configuration.retry.baseDelayMilliseconds = 0
        configuration.window = 8
        configuration.cache = try cache ?? ResponseCache(folder: folder)
        return try SheafClient(baseURL: scriptedBase, credential: .bearer(token), transport: transport,
                               configuration: configuration)
    }

    private func run(_ client: SheafClient) throws -> (items: [UInt8], revalidated: Int) {
        let run = try client.makeList(anchorList())
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        return (run.prefixJSON(), run.requestsRevalidated)
    }

    // MARK: Re-syncs

    /// The second run of a 20-page list revalidates every page: 20 answers of 304, no point
    /// spent, the same items; with 3 pages changed, exactly those 3 are paid for.
    func testAReSyncCostsOnlyThePagesThatChanged() throws {
        let server = ConditionalAPI(count: 200)
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in server.reply(request) }
        let first = try run(client(transport))
        XCTAssertEqual(server.points, 20)
        XCTAssertEqual(server.conditional, 0, "nothing stored yet")
        XCTAssertEqual(first.revalidated, 0)

        server.resetCounts()
        let again = try run(client(transport))
        XCTAssertEqual(server.points, 0, "every page unchanged")
        XCTAssertEqual(server.notModified, 20)
        XCTAssertEqual(again.revalidated, 20)
        XCTAssertEqual(again.items, first.items, "the stored pages, byte for byte")

        server.resetCounts()
        for id in [25, 101, 199] { server.rename(id, "changed-\(id)") }
        let changed = try run(client(transport))
        XCTAssertEqual(server.points, 3, "the three changed pages, and no other")
        XCTAssertEqual(changed.revalidated, 17)
        let names = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(changed.items)) as? [[String: Any]]).map { $0["name"] as? String }
        XCTAssertEqual(names[25], "changed-25")
        XCTAssertEqual(names[199], "changed-199")
        XCTAssertEqual(names[24], "item-24")
        XCTAssertEqual(itemIDs(changed.items), Array(0..<200))

        // The changed pages are stored anew: the run after costs nothing again.
        server.resetCounts()
        _ = try run(client(transport))
        XCTAssertEqual(server.points, 0)
    }

    /// An entry is keyed by the credential: another token's requests find nothing stored, and
    /// no token, URL or page text is written to the folder.
    func testOneCredentialsAnswersNeverAnswerAnothersAndNoSecretIsOnDisk() throws {
        let server = ConditionalAPI(count: 50)
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in server.reply(request) }
        _ = try run(client(transport, token: "token-of-alice-0123456789"))
        server.resetCounts()
        _ = try run(client(transport, token: "token-of-bob-9876543210"))
        XCTAssertEqual(server.conditional, 0, "bob's requests carried no validator of alice's pages")
        XCTAssertEqual(server.points, 5)
        server.resetCounts()
        _ = try run(client(transport, token: "token-of-alice-0123456789"))
        XCTAssertEqual(server.notModified, 5, "alice's pages are still hers")

        let files = try FileManager.default.contentsOfDirectory(atPath: folder)
        XCTAssertGreaterThanOrEqual(files.count, 11, "a key and ten entries: \(files)")
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + file))
            // (The pages' own text holds their next links: the body is stored as it came.)
            for secret in ["token-of-alice", "token-of-bob", "Bearer", "X-RateLimit", "Date"] {
                XCTAssertNil(bytes.range(of: Data(secret.utf8)), "\(file) holds \(secret)")
            }
            var status = stat()
            XCTAssertEqual(lstat(folder + "/" + file, &status), 0)
            XCTAssertEqual(status.st_mode & 0o777, 0o600, file)
        }
        var status = stat()
        XCTAssertEqual(lstat(folder, &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o700)
    }

    // MARK: Hostile folders and entries

    /// Entries cut short, edited, renamed onto another's name, forged under another key, or
    /// replaced by a symbolic link are misses: the page is fetched whole, the list is right.
    func testDamagedRenamedForgedOrLinkedEntriesAreMisses() throws {
        let server = ConditionalAPI(count: 60)
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in server.reply(request) }
        let first = try run(client(transport))
        let entries = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("e-") }.sorted()
        XCTAssertEqual(entries.count, 6)
        let path = { (index: Int) in self.folder + "/" + entries[index] }
        // 0: cut short; 1: one byte of its body flipped; 2: holds entry 3's bytes.
        let whole = try Data(contentsOf: URL(fileURLWithPath: path(0)))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path(0)))
        var edited = try Data(contentsOf: URL(fileURLWithPath: path(1)))
        edited[edited.count - 40] ^= 0x01
        try edited.write(to: URL(fileURLWithPath: path(1)))
        try FileManager.default.removeItem(atPath: path(2))
        try FileManager.default.copyItem(atPath: path(3), toPath: path(2))
        // 4: a symbolic link to entry 5 (which stays as it is).
        try FileManager.default.removeItem(atPath: path(4))
        try FileManager.default.createSymbolicLink(atPath: path(4), withDestinationPath: path(5))

        server.resetCounts()
        let again = try run(client(transport))
        XCTAssertEqual(again.items, first.items)
        XCTAssertEqual(server.points, 4, "the four bad entries fetched whole")
        XCTAssertEqual(server.notModified, 2)

        // A forged folder: another cache's key in place of this one's. Every entry is a miss.
        server.resetCounts()
        try FileManager.default.removeItem(atPath: folder + "/key")
        try Data(repeating: 7, count: 32).write(to: URL(fileURLWithPath: folder + "/key"))
        chmod(folder + "/key", 0o600)
        _ = try run(client(transport))
        XCTAssertEqual(server.conditional, 0, "entries signed with another key are never read")
        // A key of the wrong size is replaced.
        try Data(repeating: 7, count: 5).write(to: URL(fileURLWithPath: folder + "/key"))
        _ = try ResponseCache(folder: folder)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: folder + "/key")).count, 32)
    }

    func testAFolderThatIsALinkAFileOrAnotherUsersIsRefusedAndAnOpenOneIsMadePrivate() throws {
        let parent = (folder as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent + "/real", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: parent + "/link", withDestinationPath: parent + "/real")
        XCTAssertThrowsError(try ResponseCache(folder: parent + "/link")) {
            XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument)
            XCTAssertTrue(($0 as? SheafError)?.message.contains("symbolic link") == true, "\($0)")
        }
        FileManager.default.createFile(atPath: parent + "/file", contents: Data())
        XCTAssertThrowsError(try ResponseCache(folder: parent + "/file")) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        XCTAssertThrowsError(try ResponseCache(folder: "")) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        XCTAssertThrowsError(try ResponseCache(folder: folder, maxBytes: 60_000)) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        XCTAssertThrowsError(try ResponseCache(folder: parent + "/file/below")) { XCTAssertEqual(($0 as? SheafError)?.code, .io) }
        chmod(parent + "/real", 0o755)
        _ = try ResponseCache(folder: parent + "/real/")
        var status = stat()
        XCTAssertEqual(stat(parent + "/real", &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o700, "tightened")
        if geteuid() == 0 {
            // root: a folder of another user's.
            try FileManager.default.createDirectory(atPath: parent + "/theirs", withIntermediateDirectories: true)
            XCTAssertEqual(chown(parent + "/theirs", 65534, 65534), 0)
            XCTAssertThrowsError(try ResponseCache(folder: parent + "/theirs")) {
                XCTAssertTrue(($0 as? SheafError)?.message.contains("another user") == true, "\($0)")
            }
        }
    }

    /// Over its size, the least recently used entries go (a hit counts as a use); an answer
    /// larger than an eighth of the cache is not stored.
    func testTheCacheStaysWithinItsSizeKeepingWhatWasUsedLast() throws {
        let cache = try ResponseCache(folder: folder, maxBytes: 1 << 18)
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 25_000)
        let response = HTTPResponse(status: 200, headers: [HTTPHeader(name: "ETag", value: "\"1\"")], body: body)
        let request = { (index: Int) in HTTPRequest(method: "GET", url: "https://api.test/\(index)", headers: [], body: [],
                                                    timeoutMilliseconds: 0, connectTimeoutMilliseconds: 0, maxBodyBytes: 1 << 20,
                                                    tls: TLSSettings()) }
        let names = (0..<30).map { cache.name(for: request($0))! }
        XCTAssertEqual(Set(names).count, 30)
        for (index, name) in names.enumerated() {
            XCTAssertTrue(cache.store(response, as: name))
            // The first stays in use.
            if index % 5 == 0 { XCTAssertNotNil(cache.load(names[0], maxBodyBytes: 1 << 20)) }
        }
        let bytes = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("e-") }
            .reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: folder + "/" + $1)[.size] as? Int) ?? 0) }
        XCTAssertLessThanOrEqual(bytes, 1 << 18)
        XCTAssertNotNil(cache.load(names[29], maxBodyBytes: 1 << 20), "the newest stays")
        XCTAssertNil(cache.load(names[1], maxBodyBytes: 1 << 20), "an old one unused since went")
        let large = HTTPResponse(status: 200, headers: response.headers, body: [UInt8](repeating: 0, count: 40_000))
        XCTAssertFalse(cache.store(large, as: names[1]))
    }

    func testWhatMayNotBeStoredIsNot() throws {
        let cache = try ResponseCache(folder: folder)
        let tagged = { (headers: [(String, String)]) in
            HTTPResponse(status: 200, headers: ([("ETag", "\"a\"")] + headers).map { HTTPHeader(name: $0.0, value: $0.1) }, body: [1])
        }
        XCTAssertTrue(cache.isStorable(tagged([])))
        XCTAssertFalse(cache.isStorable(HTTPResponse(status: 200, headers: [], body: [1])), "no validator")
        XCTAssertFalse(cache.isStorable(tagged([("Cache-Control", "private, No-Store")])))
        XCTAssertFalse(cache.isStorable(tagged([("Vary", "Accept, *")])))
        XCTAssertFalse(cache.isStorable(HTTPResponse(status: 206, headers: [HTTPHeader(name: "ETag", value: "\"a\"")], body: [1])))
        var request = HTTPRequest(method: "GET", url: "https://api.test/x", headers: [], body: [], timeoutMilliseconds: 0,
                                  connectTimeoutMilliseconds: 0, maxBodyBytes: 1 << 20, tls: TLSSettings())
        let name = try XCTUnwrap(cache.name(for: request))
        request.headers = [HTTPHeader(name: "Accept", value: "text/csv")]
        XCTAssertNotEqual(cache.name(for: request), name, "every request header is in the key")
        request.headers = [HTTPHeader(name: "If-None-Match", value: "\"mine\"")]
        XCTAssertNil(cache.name(for: request), "a caller's own conditional request is its own")
        request.headers = []
        request.method = "POST"
        XCTAssertNil(cache.name(for: request))

        // What a 304 carries replaces what was stored, but not the framing; per-answer headers
        // are never stored.
        XCTAssertTrue(cache.store(tagged([("Date", "x"), ("Set-Cookie", "s=1"), ("X-RateLimit-Remaining", "9"), ("Link", "<a>")]), as: name))
        let files = try FileManager.default.contentsOfDirectory(atPath: folder)
        let entry = try XCTUnwrap(cache.load(name, maxBodyBytes: 1 << 20), "\(files)")
        XCTAssertEqual(entry.response.headers.map { $0.name }.sorted(), ["ETag", "Link"])
        let merged = entry.answer(to: HTTPResponse(status: 304, headers: [HTTPHeader(name: "Link", value: "<b>"),
                                                                          HTTPHeader(name: "Content-Length", value: "0"),
                                                                          HTTPHeader(name: "X-RateLimit-Remaining", value: "8")]))
        XCTAssertEqual(merged.status, 200)
        XCTAssertEqual(merged.body, [1])
        XCTAssertEqual(merged.headers.first(named: "link"), "<b>")
        XCTAssertEqual(merged.headers.first(named: "x-ratelimit-remaining"), "8")
        XCTAssertNil(merged.headers.first(named: "content-length"))
        XCTAssertNil(cache.load(name, maxBodyBytes: 0), "an entry larger than the body cap is not read")
    }

    /// Two caches on one folder (as two processes would be), storing and loading the same
    /// entries at once: every load is nothing or a whole entry.
    func testTwoWritersOnOneFolderNeverShowHalfAnEntry() throws {
        let caches = [try ResponseCache(folder: folder), try ResponseCache(folder: folder)]
        let request = HTTPRequest(method: "GET", url: "https://api.test/shared", headers: [], body: [], timeoutMilliseconds: 0,
                                  connectTimeoutMilliseconds: 0, maxBodyBytes: 1 << 20, tls: TLSSettings())
        let name = try XCTUnwrap(caches[0].name(for: request))
        XCTAssertEqual(caches[1].name(for: request), name, "one key for the folder")
        let bad = Atomic<Int>(0)
        let whole = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 300) { index in
            let cache = caches[index % 2]
            if index % 3 == 0 {
                let fill = UInt8(index % 200)
                cache.store(HTTPResponse(status: 200, headers: [HTTPHeader(name: "ETag", value: "\"\(fill)\"")],
                                         body: [UInt8](repeating: fill, count: 5_000)), as: name)
            } else if let entry = cache.load(name, maxBodyBytes: 1 << 20) {
                let fill = entry.response.body.first ?? 255
                if entry.response.body.count != 5_000 || entry.response.body.contains(where: { $0 != fill })
                    || entry.response.headers.first(named: "etag") != "\"\(fill)\"" {
                    bad.add(1, ordering: .relaxed)
                } else {
                    whole.add(1, ordering: .relaxed)
                }
            }
        }
        XCTAssertEqual(bad.load(ordering: .relaxed), 0)
        XCTAssertGreaterThan(whole.load(ordering: .relaxed), 100, "most loads find an entry")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("t-") }, [],
                       "no write left behind")
    }

    // MARK: The hash

    func testSHA256AndHMACMatchTheirPublishedVectors() {
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        XCTAssertEqual(hex(SHA256.hash([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(hex(SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // Fed in pieces that straddle blocks: the same.
        var pieces = SHA256()
        let text = Array(String(repeating: "a", count: 1000).utf8)
        for start in stride(from: 0, to: 1000, by: 37) { pieces.update(text[start..<min(start + 37, 1000)]) }
        XCTAssertEqual(pieces.finish(), SHA256.hash(text))
        // RFC 4231, test cases 1 and 6.
        XCTAssertEqual(hex(HMACKey([UInt8](repeating: 0x0b, count: 20)).mac(Array("Hi There".utf8))),
                       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        XCTAssertEqual(hex(HMACKey([UInt8](repeating: 0xaa, count: 131)).mac(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))),
                       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }
}
