#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a list goes on after the items delivered so far: the page to fetch next, how many of
/// its items were delivered already (an item limit may cut a page), and how many items came
/// before it in every run of the list.
struct ResumePoint: Sendable, Equatable {
    /// The page to fetch next; nil once the list has ended.
    var url: String?
    /// Items of that page already delivered, to drop when it is fetched again.
    var skip = 0
    /// Items delivered before this point, over every run (for the check against a total).
    var itemsBefore = 0
}

/// A list's resume token: the description the run used (detected parts resolved) and where to
/// go on, bound to the list it came from by a fingerprint of its path and pinned description.
///
/// Its text is `sheaf-resume-1.` and the base64url of a small JSON object: printable, one line,
/// safe in a shell argument. It holds no credential: the values of secret query parameters are
/// left out (a resumed list sends its own again), and a credential is never part of a URL.
public struct ResumeToken: Sendable, Equatable, CustomStringConvertible {
    static let prefix = "sheaf-resume-1."

    /// FNV-1a of the list's path and pinned description (`ResumeToken.fingerprint`).
    var fingerprint: UInt64
    /// The paging as the run used it, with `first` the original first page number or offset.
    var paging: Paging
    /// The signals as the run read them; absent, a signal is detected, unless `resolved`.
    var signals: [Signal: SignalSource]
    /// Whether the run had read its first page: then what it did not read, no page has.
    var resolved: Bool
    /// The page size the list's first run was served (0: unknown): a resumed run may start on a
    /// short page, and must still count the pages before it right.
    var pageSize: Int
    var point: ResumePoint

    /// The token's text.
    public var description: String {
        var json = "{\"v\":1,\"f\":\"\(String(fingerprint, radix: 16))\",\"k\":\(JSONText.quote(paging.kindName))"
        json += ",\"p\":\(JSONText.quote(paging.parameter)),\"o\":\(paging.first ?? 0)"
        json += ",\"zp\":\(JSONText.quote(paging.size?.parameter)),\"z\":\(paging.size?.value ?? 0),\"r\":\(resolved ? 1 : 0),\"s\":{"
        // Every signal the table holds but what an absent one means: `.none` in a resolved token.
        // In an unresolved one an absent signal is detected, so `.none` (a list told that it has
        // no total, say) must be written, or the resumed run would detect what it was told to skip.
        json += Signal.allCases.compactMap { signal in
            signals[signal].flatMap { resolved && $0 == .none ? nil : $0 }.map { "\(JSONText.quote(signal.rawValue)):[\(JSONText.quote($0.kindName)),\(JSONText.quote($0.whereText ?? ""))]" }
        }.joined(separator: ",")
        json += "},\"w\":\(pageSize),\"u\":\(JSONText.quote(point.url)),\"i\":\(point.skip),\"n\":\(point.itemsBefore)}"
        return Self.prefix + Base64URL.encode(Array(json.utf8))
    }

    init(fingerprint: UInt64, paging: Paging, signals: [Signal: SignalSource], resolved: Bool, pageSize: Int,
         point: ResumePoint) {
        self.fingerprint = fingerprint
        self.paging = paging
        self.signals = signals
        self.resolved = resolved
        self.pageSize = pageSize
        self.point = point
    }

    /// The largest count, position or size a token may hold: 2^53, the largest integer every
    /// JSON reader keeps exact, far past any list, and far enough below `Int.max` that what a
    /// run adds to it (the items of its pages) cannot overflow. A token comes back from users
    /// and disk, so each number in it is checked against this before any arithmetic.
    static let largestNumber = 1 << 53

    /// Reads a token's text.
    /// - Throws: `.invalidArgument` for text that is not a resume token of this version, or one
    ///   with a number that is not an integer from 0 to `largestNumber` (it names which).
    public init(_ text: String) throws(SheafError) {
        let invalid = SheafError(.invalidArgument, "not a resume token of this version of Sheaf (they start with \"\(Self.prefix)\")")
        guard text.hasPrefix(Self.prefix), let bytes = Base64URL.decode(text.dropFirst(Self.prefix.count)) else { throw invalid }
        let fields = ["/v", "/f", "/k", "/p", "/o", "/zp", "/z", "/u", "/i", "/n", "/w", "/r"]
        var targets = (fields + Signal.allCases.flatMap { ["/s/\($0.rawValue)/0", "/s/\($0.rawValue)/1"] })
            .map { JSONScanner.Target(pointer: JSONPointer($0)!, collectsElements: false) }
        var outOfRange: SheafError?
        let read = bytes.withUnsafeBufferPointer { buffer -> ResumeToken? in
            let scanner = JSONScanner(buffer)
            guard (try? scanner.scanDocument(&targets)) != nil else { return nil }
            func string(_ index: Int) -> String? {
                guard let range = targets[index].range, buffer[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
                return try? scanner.decodeString(at: range.lowerBound)
            }
            func integer(_ index: Int) -> Int? { targets[index].range.flatMap { scanner.nonNegativeInteger(at: $0) } }
            /// The number at `index` when it is there and in range; records why not otherwise.
            func number(_ index: Int, _ name: String, required: Bool = true) -> Int?? {
                guard let range = targets[index].range else { return required ? nil : .some(nil) }
                guard let value = scanner.nonNegativeInteger(at: range), value <= Self.largestNumber else {
                    let written = String(decoding: buffer[range].prefix(40), as: UTF8.self)
                    outOfRange = SheafError(.invalidArgument, "the resume token's \(name) is out of range: \(written) "
                                            + "(a token holds whole numbers from 0 to 2^53); it was not made by Sheaf")
                    return nil
                }
                return .some(value)
            }
            guard integer(0) == 1, let fingerprint = string(1).flatMap({ UInt64($0, radix: 16) }), let kind = string(2),
                  let first = number(4, "first page number or offset") ?? nil, let size = number(6, "page size", required: false),
                  let skip = number(8, "items to skip") ?? nil, let itemsBefore = number(9, "items delivered before") ?? nil,
                  let pageSize = number(10, "page size served") ?? nil, [0, 1].contains(integer(11)),
                  let paging = Paging(kindName: kind, parameter: string(3), first: first, sizeParameter: string(5), size: size)
            else { return nil }
            var signals: [Signal: SignalSource] = [:]
            for (offset, signal) in Signal.allCases.enumerated() {
                let slot = fields.count + 2 * offset
                guard let kindName = string(slot) else {
                    if integer(11) == 1 { signals[signal] = SignalSource.none }
                    continue
                }
                guard let source = SignalSource(kindName: kindName, where: string(slot + 1) ?? ""),
                      (try? signal.check(source)) != nil else { return nil }
                signals[signal] = source
            }
            return ResumeToken(fingerprint: fingerprint, paging: paging, signals: signals, resolved: integer(11) == 1,
                               pageSize: pageSize,
                               point: ResumePoint(url: string(7), skip: skip, itemsBefore: itemsBefore))
        }
        if let outOfRange { throw outOfRange }
        guard let read, (try? read.paging.validated()) != nil else { throw invalid }
        self = read
    }

    /// The page number or offset that `url` (the token's page, secrets restored) gives the
    /// paging parameter, for numbered paging; nil when it names none (the run then starts at
    /// the token's first page number or offset).
    /// - Throws: `.invalidArgument` for a number outside 0 through `largestNumber`: the planner
    ///   counts pages from it, and a forged one near `Int.min` or `Int.max` would overflow.
    func position(in url: String) throws(SheafError) -> Int? {
        guard paging.isNumbered, let parameter = paging.parameter, let text = URLText.queryValue(url, parameter) else { return nil }
        if let value = Int(text), (0...Self.largestNumber).contains(value) { return value }
        let unsigned = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
        guard !unsigned.isEmpty, unsigned.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil // not a number: as a server may write it; the token's first position stands
        }
        throw SheafError(.invalidArgument, "the resume token's page names \(parameter)=\(text.prefix(40)), out of range "
                         + "(a page number or offset from 0 to 2^53); it was not made by Sheaf")
    }

    /// Where a resumed run of the list whose first URL is `firstURL` starts: the token's page,
    /// as far as the list may fetch it with its credential.
    ///
    /// A token is not signed: it must outlive the process, so no key of the process could sign
    /// it, and the credential must not go into it in any form. Anyone may edit one, and the
    /// fingerprint (a public hash) only binds what the list recomputes. What the token's page
    /// decides is bounded instead:
    /// - its origin (scheme, host, port) must be the list's, or the credential and the list's
    ///   secret query values would be sent elsewhere; the authority sent is the list's own, never
    ///   the token's spelling of it (two URL parsers must not disagree on the host);
    /// - its path must be the list's (a trailing "/" aside): the credential opens the whole
    ///   origin, and a token must not aim it at another resource. A next link to another path of
    ///   the origin is legitimate in some APIs (GitHub's Link of /orgs/NAME/repos names
    ///   /organizations/ID/repos), but nothing in a token can prove it came from one: with page
    ///   numbers, offsets or cursors the run resumes at the list's own path with the token's
    ///   page parameter, and with next links alone such a token is refused;
    /// - its query is not bound: next links rewrite it (cursors, skip tokens), on the same resource.
    /// - Throws: `.invalidArgument` for a page outside the list's origin or path.
    func startURL(forList firstURL: String) throws(SheafError) -> String {
        let listOrigin = Origin(firstURL)
        guard let url = point.url, var list = URLComponents(string: firstURL), let page = URLComponents(string: url),
              listOrigin != nil, Origin(url) == listOrigin, page.user == nil, page.password == nil else {
            throw SheafError(.invalidArgument, "the resume token's page is not on the list's origin \(listOrigin.map { "\($0)" } ?? firstURL) "
                             + "(the list was refused a link there, or the token was edited): a token goes on only where the list itself may")
        }
        let listPath = list.percentEncodedPath, pagePath = page.percentEncodedPath
        if pagePath == listPath || pagePath == listPath + "/" || pagePath + "/" == listPath {
            list.percentEncodedPath = pagePath
            list.percentEncodedQuery = page.percentEncodedQuery
            list.fragment = nil
            if let start = list.string { return start }
        }
        let resumesByParameter: Bool
        switch paging {
        case .pageNumber, .offset, .cursor: resumesByParameter = true
        default: resumesByParameter = false
        }
        if resumesByParameter, let parameter = paging.parameter, let value = URLText.queryValue(url, parameter),
           let start = URLText.settingQuery(firstURL, parameter, to: value) {
            return start
        }
        throw SheafError(.invalidArgument, "the resume token's page is not on the list's path \(listPath.isEmpty ? "/" : listPath); "
                         + "a list walked by next links alone resumes only on its own path (was the token edited?)")
    }

    /// What a token is bound to: the list's first URL (secret values hidden) and its description
    /// as pinned, not what a run detected nor how far it may go.
    static func fingerprint(_ description: ListDescription, firstURL: String, redactor: Redactor) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        // The body a list is asked with too: a token is not taken by the same query with another filter.
        let request = description.request.map { Array($0.method.utf8) + [0] + $0.body } ?? []
        for byte in Array(redactor.redact(firstURL).utf8) + [0] + description.json(resolution: nil, plan: nil) + request {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}

/// Base64 with the URL and file name alphabet, unpadded (RFC 4648 §5): text for a shell argument.
private enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().unicodeScalars.compactMap { scalar -> Character? in
            switch scalar {
            case "+": "-"
            case "/": "_"
            case "=": nil
            default: Character(scalar)
            }
        })
    }

    static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = String(text.unicodeScalars.map { scalar -> Character in
            switch scalar {
            case "-": "+"
            case "_": "/"
            default: Character(scalar)
            }
        })
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }
}

extension Paging {
    init?(kindName: String, parameter: String?, first: Int, sizeParameter: String?, size: Int?) {
        let pageSize = sizeParameter.map { PageSize(parameter: $0, value: size.flatMap { $0 > 0 ? $0 : nil }) }
        switch kindName {
        case "detect": self = .detect
        case "single": self = .single
        case "next": self = .next
        case "page_number", "offset":
            guard let parameter else { return nil }
            let numbering = Numbering(parameter: parameter, first: first, size: pageSize)
            self = kindName == "offset" ? .offset(numbering) : .pageNumber(numbering)
        case "cursor":
            guard let parameter else { return nil }
            self = .cursor(parameter: parameter, size: pageSize)
        default: return nil
        }
    }

    /// The same paging, starting at page number or offset `first`.
    func starting(at first: Int) -> Paging {
        switch self {
        case .pageNumber(var numbering):
            numbering.first = first
            return .pageNumber(numbering)
        case .offset(var numbering):
            numbering.first = first
            return .offset(numbering)
        default:
            return self
        }
    }
}

extension SignalSource {
    init?(kindName: String, where text: String) {
        switch kindName {
        case "none": self = .none
        case "detect": self = .detect
        case "header": self = .header(text)
        case "link": self = .link(text)
        case "body", "item", "last_item":
            guard let pointer = JSONPointer(text) else { return nil }
            self = kindName == "body" ? .body(pointer) : kindName == "item" ? .item(pointer) : .lastItem(pointer)
        default: return nil
        }
    }
}
