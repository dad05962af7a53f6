// Fuzz target "parsers" (Entry.swift runs it): the small parsers a server or caller feeds, in three modes chosen by the
// input's first byte (the seeds under corpus/parsers are named after their mode):
// - 0x01, resume tokens (`resume-*` seeds): the rest is a list's path (first line) and a token,
//   as text ("sheaf-resume-1....") or as the JSON inside one (encoded here). A token that reads
//   holds only numbers from 0 to 2^53, reads back equal from its own text, and resumes a list
//   (a client whose transport records and never answers) only on the list's origin and path,
//   with the client's credential; the start URL `ResumeToken.startURL` gives obeys the same rule.
// - 0x02, the request builder (`request-*` seeds): the rest is fields split by 0xFF, each tagged
//   by its first byte: M method, B base URL, P path, S a segment, Q name=value (query), H name:value
//   (request header), C name:value (client header), A the client's credential (b bearer, u basic,
//   h NAME api key header, q NAME api key parameter, - none), X follow other origins. What is
//   sent keeps the origin the path gives (no segment or query value changes it), ends its path
//   with the segments, each one whole (never "." or "..", no "/", "?" or "#" unescaped), ends its
//   query with the pairs in order, carries only headers that are tokens without CR, LF, NUL or
//   framing (Content-Length, Transfer-Encoding, Host, Connection), and the credential header only
//   as the client's, on its origin alone.
// - 0x03, partitions (`partition-*` seeds): the rest is a partition's JSON text, as a worker gets
//   it from a plan. One that reads holds only numbers in range and no user information in its
//   URL, writes a text that reads back as the same text, and runs (a client on its origin whose
//   transport records and never answers) sending only to that origin, with the client's
//   credential; a client of another origin refuses it. One that does not read is refused with
//   invalidArgument.
// - 0x04, Arrow columns (`arrow-*` seeds): the rest is a JSON array of objects, as a snapshot's
//   delta. One that reads is JSON to the scanner too, has a row per element, and its columns hold
//   together as Arrow needs: every column of a struct as long as it, a list's and a string's
//   offsets rising from 0 to the length of what they index, as many validity bits and values as
//   rows, a null column's count its length. One that does not read names its item and leaves
//   nothing to free but the columns.
// - anything else, the small parsers: URL resolution and origins, Retry-After, JSON pointers, the
//   JSON scanner with pointer targets, server error fields, the redactor and percent-decoding.
//   Input: a first line (a URL, a header value, a pointer), the rest a body.
// Compiled with the core's sources by run.sh (one module: internal API is reachable). A property
// that fails stops the run with `fatalError`, which libFuzzer reports as a crash.

import FoundationEssentials

public func sheafFuzzParsers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch bytes.first {
    case 0x01: fuzzResumeToken(Array(bytes.dropFirst()))
    case 0x02: fuzzRequestBuilder(Array(bytes.dropFirst()))
    case 0x03: fuzzPartition(Array(bytes.dropFirst()))
    case 0x04: fuzzArrowColumns(Array(bytes.dropFirst()))
    default: fuzzSmallParsers(bytes, size)
    }
    return 0
}

private func fuzzSmallParsers(_ bytes: [UInt8], _ size: Int) {
    let parts = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
    let line = String(decoding: parts.first ?? [], as: UTF8.self)
    let body = parts.count > 1 ? Array(parts[1]) : []
    let base = "https://api.example.com:8443/v1/things?page=1"

    if let resolved = URLText.resolve(line, against: base) {
        _ = Origin(resolved)
        _ = URLText.queryPairs(resolved)
        _ = URLText.settingQuery(resolved, "page", to: line)
    }
    _ = Origin(line)
    _ = URLText.escapingInvalid(line)
    _ = URLText.percentDecoded(line)
    _ = URLText.hasUserInfo(line)
    _ = RetryPolicy().delayMilliseconds(afterAttempt: Int(size % 40), retryAfter: line, random: { $0.upperBound })
    _ = HeaderCount.parse(line, allowsContentRange: true)
    _ = LinkHeader(parsing: line).target("next", resolvedAgainst: base)
    _ = Redactor([line, "s3cret"]).redact(String(decoding: body, as: UTF8.self))

    if let pointer = JSONPointer(line) {
        _ = pointer.description
        body.withUnsafeBufferPointer { buffer in
            var targets = [JSONScanner.Target(pointer: pointer, collectsElements: true),
                           JSONScanner.Target(pointer: JSONPointer("/0/id")!, collectsElements: false)]
            let scanner = JSONScanner(buffer)
            if (try? scanner.scanDocument(&targets)) != nil {
                for element in targets[0].elements {
                    _ = IdentityKey(scanner, element)
                    _ = scanner.locate(pointer, in: element)
                }
                if let range = targets[1].range {
                    _ = scanner.nonNegativeInteger(at: range)
                    if scanner.bytes[range.lowerBound] == UInt8(ascii: "\"") {
                        _ = try? scanner.decodeUTF8(at: range.lowerBound, marksLoneSurrogates: true)
                    }
                }
            }
        }
    }
    _ = HTTPFailure.error(for: HTTPResponse(status: 400 + size % 200, body: body), url: base, attempts: 1 + size % 4,
                          redactor: Redactor(["s3cret"]))
}

// MARK: Shared

/// Stops the run: a property of the code under test does not hold.
private func violated(_ what: @autoclosure () -> String) -> Never {
    fatalError("property violated: \(what())")
}

/// A transport that records each request; it answers at once with `status`, or never (nil).
private final class RecordingTransport: Transport, @unchecked Sendable {
    private let lock = Lock()
    private var requests: [HTTPRequest] = []
    private let status: Int?

    init(answering status: Int?) {
        self.status = status
    }

    var sent: [HTTPRequest] { lock.withLock { requests } }

    func send(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask {
        lock.withLock { requests.append(request) }
        if let status { completion(.success(HTTPResponse(status: status, body: Array("{}".utf8)))) }
        return FinishedTransportTask()
    }
}

/// A path's last "/" dropped, to compare paths a trailing "/" aside.
private func trimmedPath(_ path: String) -> Substring {
    path.hasSuffix("/") ? path.dropLast() : Substring(path)
}

private func hasForbiddenByte(_ text: String) -> Bool {
    text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
}

/// Every header of a request as sent: a token name that does not frame the message, a value
/// without CR, LF or NUL (or another control character but tab).
private func checkSentHeaders(_ request: HTTPRequest) {
    for header in request.headers {
        if !HeaderRules.isToken(header.name) { violated("a header name that is not a token was sent: \(header.name.debugDescription)") }
        if hasForbiddenByte(header.name) || hasForbiddenByte(header.value) || HeaderRules.hasControl(header.value) {
            violated("a header with a control character was sent: \(header.name): \(header.value.debugDescription)")
        }
        if HeaderRules.framingHeaders.contains(header.name.lowercased()) { violated("a framing header was sent: \(header.name)") }
    }
}

// MARK: Resume tokens

private let resumeBase = "https://api.example.com:8443/"
private let resumeBearer = "fuzz-bearer-s3cret"

/// Input: a list's path (first line; empty: v1/things), then a token as text, or the JSON of one.
private func fuzzResumeToken(_ bytes: [UInt8]) {
    let parts = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
    let path = String(decoding: parts.first ?? [], as: UTF8.self)
    let rest = parts.count > 1 ? Array(parts[1]) : []
    let text: String
    if rest.starts(with: Array("sheaf-".utf8)) {
        text = String(decoding: rest, as: UTF8.self)
    } else {
        text = ResumeToken.prefix + Data(rest).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }
    let token: ResumeToken
    do {
        token = try ResumeToken(text)
    } catch {
        if error.code != .invalidArgument { violated("a token that does not read failed with \(error.code), not invalidArgument") }
        return
    }

    // Every number is in range before any arithmetic is done with it.
    let largest = ResumeToken.largestNumber
    for (name, value) in [("first", token.paging.first ?? 0), ("skip", token.point.skip),
                          ("itemsBefore", token.point.itemsBefore), ("pageSize", token.pageSize)] where !(0...largest).contains(value) {
        violated("the token's \(name) \(value) is out of 0...2^53")
    }
    if let size = token.paging.size?.value, !(1...largest).contains(size) { violated("the token's page size \(size) is out of 1...2^53") }
    if (try? token.paging.validated()) == nil { violated("a token read with paging that does not validate: \(token.paging)") }

    // Its own text reads back as the same token, and writes the same text again.
    let written = token.description
    if !written.hasPrefix(ResumeToken.prefix) || !written.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
        violated("a token's text is not printable ASCII with the prefix: \(written)")
    }
    guard let again = try? ResumeToken(written) else { violated("a token's own text does not read: \(written) (from \(text))") }
    if again != token {
        violated("a token reads back as another: \(token) (\(token.paging), \(token.signals), \(token.point)) became "
                 + "\(again.paging), \(again.signals), \(again.point)")
    }
    if again.description != written { violated("a token's text changed on a round trip: \(written) -> \(again.description)") }

    // Where it starts a list: the list's origin and path, or nowhere.
    let transport = RecordingTransport(answering: nil)
    var configuration = ClientConfiguration()
    configuration.timeoutMilliseconds = 0
    configuration.crossOrigin = .followWithoutCredentials // a token must not need the policy to stay home
    guard let client = try? SheafClient(baseURL: resumeBase, credential: .bearer(resumeBearer), transport: transport,
                                        configuration: configuration) else { violated("the fixed client is refused") }
    var list = ListDescription(path: path.isEmpty ? "v1/things" : path)
    guard let firstURL = try? client.firstURL(of: list), let listParts = URLComponents(string: firstURL),
          let listOrigin = Origin(firstURL) else { return }
    let listPath = trimmedPath(listParts.percentEncodedPath)
    func checkOnList(_ url: String, _ what: String) {
        guard let parts = URLComponents(string: url) else { violated("\(what) does not parse: \(url)") }
        if Origin(url) != listOrigin || parts.percentEncodedHost?.lowercased() != listParts.percentEncodedHost?.lowercased()
            || parts.port != listParts.port || parts.scheme?.lowercased() != listParts.scheme?.lowercased() {
            violated("\(what) \(url) is not on the list's origin \(listOrigin) (list \(firstURL), token page \(token.point.url ?? "nil"))")
        }
        if parts.user != nil || parts.password != nil { violated("\(what) \(url) carries user information") }
        if trimmedPath(parts.percentEncodedPath) != listPath {
            violated("\(what) \(url) is not on the list's path \(listPath) (list \(firstURL), token page \(token.point.url ?? "nil"))")
        }
    }
    if let start = try? token.startURL(forList: firstURL) { checkOnList(start, "startURL") }

    // The run itself, with the fingerprint forged (it is a public hash): whatever it sends is on
    // the list's origin and path, with the client's credential.
    var forged = token
    forged.fingerprint = ResumeToken.fingerprint(list, firstURL: firstURL, redactor: client.redactor)
    list.resume = forged
    guard let run = try? client.makeList(list, keepsItems: false) else { return }
    if !transport.sent.isEmpty { violated("a list sent a request before it started") }
    if (try? run.start()) == nil { violated("a list made with a token did not start") }
    run.cancel()
    _ = try? run.wait()
    for request in transport.sent {
        checkOnList(request.url, "a resumed list's request")
        checkSentHeaders(request)
        let authorization = request.headers.filter { $0.name.lowercased() == "authorization" }.map(\.value)
        if authorization != ["Bearer \(resumeBearer)"] { violated("a resumed list sent Authorization \(authorization)") }
    }
}

// MARK: Partitions

private func fuzzPartition(_ bytes: [UInt8]) {
    let partition: Partition
    do {
        partition = try Partition(json: bytes)
    } catch {
        if error.code != .invalidArgument { violated("a partition that does not read failed with \(error.code), not invalidArgument") }
        return
    }
    // Every number is in range before any arithmetic is done with it.
    let largest = ResumeToken.largestNumber
    for (name, value) in [("index", partition.index), ("count", partition.count), ("first_page", partition.firstPage),
                          ("pages", partition.pages), ("page_size", partition.pageSize),
                          ("items_expected", partition.itemsExpected ?? 0)] where !(0...largest).contains(value) {
        violated("the partition's \(name) \(value) is out of 0...2^53")
    }
    if partition.index >= partition.count { violated("a partition read with index \(partition.index) of \(partition.count)") }
    if let window = partition.window, !(1...64).contains(window) { violated("a partition read with window \(window)") }
    if URLText.hasUserInfo(partition.url) { violated("a partition read with user information in \(partition.url)") }
    guard let origin = Origin(partition.url) else { violated("a partition read with a URL of no origin: \(partition.url)") }

    // Its own text reads back, and writes the same text again.
    let written = partition.json
    guard let again = try? Partition(json: written) else {
        violated("a partition's own text does not read: \(String(decoding: written, as: UTF8.self))")
    }
    if again.json != written {
        violated("a partition's text changed on a round trip: \(String(decoding: written, as: UTF8.self)) -> \(again)")
    }

    // Run on a client of its origin: whatever it sends goes there, with the client's credential.
    let transport = RecordingTransport(answering: nil)
    var configuration = ClientConfiguration()
    configuration.timeoutMilliseconds = 0
    configuration.crossOrigin = .followWithoutCredentials // a partition must not need the policy to stay home
    var list = ListDescription(path: "/")
    list.partition = partition
    if let client = try? SheafClient(baseURL: "\(origin)/", credential: .bearer(resumeBearer), transport: transport,
                                     configuration: configuration),
       let run = try? client.makeList(list, keepsItems: false) {
        if (try? run.start()) == nil { violated("a partition's list did not start") }
        run.cancel()
        _ = try? run.wait()
        for request in transport.sent {
            if Origin(request.url) != origin { violated("a partition of \(origin) sent to \(request.url)") }
            checkSentHeaders(request)
            let authorization = request.headers.filter { $0.name.lowercased() == "authorization" }.map(\.value)
            if authorization != ["Bearer \(resumeBearer)"] { violated("a partition's list sent Authorization \(authorization)") }
        }
    }
    // A client of another origin refuses it before sending anything.
    let elsewhere = "https://elsewhere.example:9443/"
    let other = RecordingTransport(answering: 200)
    if Origin(elsewhere) != origin,
       let client = try? SheafClient(baseURL: elsewhere, credential: .bearer(resumeBearer), transport: other, configuration: configuration),
       (try? client.makeList(list, keepsItems: false)) != nil {
        violated("a partition of \(origin) was taken by a client of \(elsewhere)")
    }
    if !other.sent.isEmpty { violated("a client of another origin sent a partition's request") }
}

// MARK: The request builder

private let requestBase = "https://api.example.com:8443/v1/"

/// Input: fields split by 0xFF (never a byte of UTF-8 text), each tagged by its first byte.
private func fuzzRequestBuilder(_ bytes: [UInt8]) {
    var method = "GET", base = requestBase, path = "users", followsOtherOrigins = false
    var segments: [String] = [], query: [(String, String)] = [], headers: [HTTPHeader] = [], clientHeaders: [HTTPHeader] = []
    var credential: Credential? = .bearer("fuzz-bearer-s3cret")
    func pair(_ text: Substring, _ separator: Character) -> (String, String) {
        guard let mark = text.firstIndex(of: separator) else { return (String(text), "") }
        return (String(text[..<mark]), String(text[text.index(after: mark)...]))
    }
    for field in bytes.split(separator: 0xFF, omittingEmptySubsequences: true) {
        let tag = field.first!, text = Substring(String(decoding: field.dropFirst(), as: UTF8.self))
        switch tag {
        case UInt8(ascii: "M"): method = String(text)
        case UInt8(ascii: "B"): base = String(text)
        case UInt8(ascii: "P"): path = String(text)
        case UInt8(ascii: "S"): segments.append(String(text))
        case UInt8(ascii: "Q"): query.append(pair(text, "="))
        case UInt8(ascii: "H"): headers.append(HTTPHeader(name: pair(text, ":").0, value: pair(text, ":").1))
        case UInt8(ascii: "C"): clientHeaders.append(HTTPHeader(name: pair(text, ":").0, value: pair(text, ":").1))
        case UInt8(ascii: "X"): followsOtherOrigins = true
        case UInt8(ascii: "A"):
            let name = String(text.dropFirst())
            switch text.first {
            case "u": credential = .basic(user: "fuzz-user", password: "fuzz-basic-s3cret")
            case "h": credential = .apiKeyHeader(name: name, value: "fuzz-header-s3cret")
            case "q": credential = .apiKeyQuery(name: name, value: "fuzz-query-s3cret")
            case "-": credential = nil
            default: credential = .bearer("fuzz-bearer-s3cret")
            }
        default: break
        }
    }

    // Each segment is appended whole: escaped, never a step in the path.
    var request = Request(method: method, path: path)
    var appended: [String] = []
    /// A request path cut at its query or fragment: the segments go to the first part.
    func split(_ path: String) -> (String, Substring) {
        let end = path.firstIndex { $0 == "?" || $0 == "#" } ?? path.endIndex
        return (String(path[..<end]), path[end...])
    }
    for segment in segments {
        let (before, tail) = split(request.path)
        request.appendSegment(segment)
        let (after, newTail) = split(request.path)
        guard after.hasPrefix(before), newTail == tail else {
            violated("appendSegment changed the path around the segment: \(before)|\(tail) -> \(request.path)")
        }
        var added = after.dropFirst(before.count)
        // A "/" before it, unless the path is empty or ends with one (but "https://": no authority).
        if !before.isEmpty, !before.hasSuffix("/") || before.hasSuffix("://") {
            guard added.first == "/" else { violated("the segment \(segment.debugDescription) was not put after a /: \(request.path)") }
            added = added.dropFirst()
        }
        if added == "." || added == ".." { violated("the segment \(segment.debugDescription) became \(added)") }
        if added.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            violated("the segment \(segment.debugDescription) became \(added), with a /, ? or #")
        }
        if URLText.percentDecoded(String(added)) != segment { violated("the segment \(segment.debugDescription) became \(added)") }
        appended.append(String(added))
    }
    request.query = query.map { Request.FormField($0.0, $0.1) }
    request.headers = headers

    let transport = RecordingTransport(answering: 204)
    var configuration = ClientConfiguration()
    configuration.timeoutMilliseconds = 0
    configuration.crossOrigin = followsOtherOrigins ? .followWithoutCredentials : .refuse
    guard let client = try? SheafClient(baseURL: base, credential: credential, headers: clientHeaders, transport: transport,
                                        configuration: configuration) else { return }
    let run: RequestRun
    do {
        run = try client.makeRequest(request)
    } catch {
        if error.code != .invalidArgument { violated("a request that cannot be built failed with \(error.code)") }
        return
    }
    // Accepted: its method is a token and every header of it passes the rules.
    if !HeaderRules.isToken(method) { violated("the method \(method.debugDescription) was accepted") }
    // The origin the path alone gives (the base URL's, for a relative path); none, nothing is sent.
    let plain = try? client.url(forPath: path)
    let plainOrigin = plain.flatMap { Origin($0) }
    if let plain, let plainOrigin, !URLText.hasPrefixIgnoringCase(path, "http://"), !URLText.hasPrefixIgnoringCase(path, "https://"),
       plainOrigin != client.origin {
        violated("the relative path \(path.debugDescription) left the base URL's origin: \(plain)")
    }
    guard (try? run.start()) != nil else { violated("a request made did not start") }
    _ = try? run.wait()
    let sent = transport.sent
    if sent.count > 1 { violated("one request sent \(sent.count) times though answered 204") }
    guard let http = sent.first else { return } // refused at send time (another origin, no origin)
    guard let plainOrigin else { violated("a request was sent though its path alone has no origin: \(path.debugDescription) -> \(http.url)") }

    if http.method != method { violated("the method \(method) was sent as \(http.method)") }
    checkSentHeaders(http)
    guard let parts = URLComponents(string: http.url), let origin = Origin(http.url) else { violated("the URL sent does not parse: \(http.url)") }
    if origin != plainOrigin { violated("segments or query values moved the request from \(plainOrigin) to \(origin): \(http.url)") }
    if parts.user != nil || parts.password != nil { violated("the URL sent carries user information: \(http.url)") }

    // The segments are the path's last ones, in order (an empty one is no segment: "users" + ""
    // is "users/", and the next one follows that "/").
    let wanted = appended.filter { !$0.isEmpty }
    let components = parts.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    if !wanted.isEmpty, components.suffix(wanted.count) != wanted {
        violated("the segments \(segments) are not the end of the path sent: \(http.url) (request path \(request.path))")
    }

    // The query ends with the pairs in order (but an API key parameter, which the credential sets).
    var keyName: String?
    if case .apiKeyQuery(let name, _)? = credential { keyName = name }
    let sentPairs = URLText.queryPairs(http.url).filter { $0.0 != keyName }
    let wantedPairs = query.filter { $0.0 != keyName }
    if !sentPairs.suffix(wantedPairs.count).elementsEqual(wantedPairs, by: ==) {
        violated("the query \(wantedPairs) is not the end of the query sent: \(http.url)")
    }

    // The credential goes to its origin only, and only as the client's.
    let secrets = ["fuzz-bearer-s3cret", "fuzz-basic-s3cret", "fuzz-header-s3cret", "fuzz-query-s3cret",
                   "ZnV6ei11c2VyOmZ1enotYmFzaWMtczNjcmV0"] // base64("fuzz-user:fuzz-basic-s3cret")
    let authorization = http.headers.filter { $0.name.lowercased() == "authorization" }.map(\.value)
    if origin == client.origin {
        switch credential {
        case .bearer(let token)?:
            if authorization != ["Bearer \(token)"] { violated("Authorization sent as \(authorization), not the client's bearer token") }
        case .basic?:
            if authorization != ["Basic ZnV6ei11c2VyOmZ1enotYmFzaWMtczNjcmV0"] { violated("Authorization sent as \(authorization), not the client's") }
        case .apiKeyHeader(let name, let value)?:
            let values = http.headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
            if values != [value] { violated("the API key header \(name) sent as \(values), not the client's") }
        case .apiKeyQuery(let name, let value)?:
            let values = URLText.queryPairs(http.url).filter { $0.0 == name }.map(\.1)
            if values != [value] { violated("the API key parameter \(name) sent as \(values), not the client's") }
        case nil:
            break
        }
    } else {
        let carrying = http.headers.filter { HeaderRules.credentialHeaders.contains($0.name.lowercased()) }
        if !carrying.isEmpty { violated("credential headers sent to another origin: \(carrying)") }
        // (unless the input spells a secret itself, in a header or the path)
        let spelled = String(decoding: bytes, as: UTF8.self)
        for secret in secrets where !spelled.contains(secret) {
            if http.url.contains(secret) || http.headers.contains(where: { $0.value.contains(secret) }) {
                violated("the client's credential was sent to another origin \(origin)")
            }
        }
    }
}

private extension URLText {
    static func hasPrefixIgnoringCase(_ text: String, _ prefix: String) -> Bool {
        text.prefix(prefix.count).lowercased() == prefix
    }
}

// MARK: - Arrow columns

private func fuzzArrowColumns(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { buffer in
        let root = ArrowColumn(kind: .structure, known: false)
        let scanner = JSONScanner(buffer)
        let start = scanner.skipWhitespace(0)
        let isJSON = start < buffer.count && (try? scanner.skipValue(at: start, depth: 0)).map { scanner.skipWhitespace($0) == buffer.count } == true
        do throws(ArrowMismatch) {
            try ArrowColumns.read(buffer, into: root)
        } catch {
            guard error.item >= 0, !error.reason.isEmpty else { violated("a mismatch without its item or reason: \(error.message)") }
            return
        }
        guard isJSON else { violated("Arrow columns read bytes the scanner refuses") }
        checkColumn(root, rows: root.length, path: "")
    }
}

/// `column` holds together as an Arrow array of `rows` rows.
private func checkColumn(_ column: ArrowColumn, rows: Int, path: String) {
    guard column.length == rows else { violated("\(path): \(column.length) rows, its parent \(rows)") }
    guard column.nullCount <= rows else { violated("\(path): more nulls than rows") }
    guard column.validity.bits == rows else { violated("\(path): \(column.validity.bits) validity bits for \(rows) rows") }
    func offsets(ending end: Int) {
        column.offsets.withValues(Int32.self) { offsets in
            guard offsets.count == rows + 1, offsets.first == 0, Int(offsets.last!) == end,
                  zip(offsets, offsets.dropFirst()).allSatisfy({ $0 <= $1 }) else {
                violated("\(path): offsets \(Array(offsets.prefix(8))) do not rise from 0 to \(end) over \(rows) rows")
            }
        }
    }
    switch column.kind {
    case .null:
        guard column.nullCount == rows else { violated("\(path): a null column with \(column.nullCount) nulls of \(rows)") }
    case .boolean:
        guard column.flags.bits == rows else { violated("\(path): \(column.flags.bits) booleans for \(rows) rows") }
    case .int64, .float64:
        guard column.values.count == rows * 8 else { violated("\(path): \(column.values.count) value bytes for \(rows) rows") }
    case .utf8:
        offsets(ending: column.values.count)
        column.values.withValues(UInt8.self) { text in
            guard String(validating: text, as: UTF8.self) != nil else { violated("\(path): strings that are not UTF-8") }
        }
    case .list:
        offsets(ending: column.children[0].length)
        checkColumn(column.children[0], rows: column.children[0].length, path: path + "[]")
    case .structure:
        guard Set(column.names).count == column.names.count else { violated("\(path): a field name twice") }
        for (name, child) in zip(column.names, column.children) {
            checkColumn(child, rows: rows, path: path + "." + String(decoding: name, as: UTF8.self))
        }
    }
}
