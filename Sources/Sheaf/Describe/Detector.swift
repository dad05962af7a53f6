/// Decides, from a list's first response, every part of its description left to detection; and,
/// at the end of a run, finds the signals of "more" that the description did not read.
///
/// Pure: bytes and headers in, a description or an error out.
package enum Detector {
    /// A description with nothing left to detect, and what detection decided.
    package struct Resolution: Sendable {
        var description: ListDescription
        var detected: Set<Signal>
        var pagingDetected: Bool
        /// Page one promises more items but shows no way to them: the paging stays `.detect`
        /// until the run has tried the usual page parameters (`PagingProbe`).
        var needsProbe = false
    }

    // MARK: The usual places (checked in this order)

    static let itemKeys = ["results", "items", "data", "value", "values", "members", "records", "entries",
                           "content", "elements", "rows", "list", "objects"]
    static let nextPointers = ["/next", "/next_page", "/nextPage", "/next_url", "/nextUrl", "/next_link", "/nextLink",
                               "/@odata.nextLink", "/links/next", "/_links/next/href", "/links/next/href",
                               "/paging/next", "/pagination/next", "/meta/next"]
    /// Cursor fields and the query parameter each is sent back in.
    static let cursorPointers: [(pointer: String, parameter: String)] = [
        ("/next_cursor", "cursor"), ("/nextCursor", "cursor"), ("/response_metadata/next_cursor", "cursor"),
        ("/nextPageToken", "pageToken"), ("/next_page_token", "page_token"), ("/meta/after_cursor", "page[after]"),
        ("/meta/next_cursor", "cursor"), ("/pagination/next_cursor", "cursor")]
    static let hasMorePointers = ["/has_more", "/hasMore", "/has_next", "/hasNext", "/meta/has_more", "/pagination/has_more"]
    static let isLastPointers = ["/isLast", "/is_last", "/last"]
    static let totalHeaders = ["X-Total-Count", "X-Total", "Content-Range"]
    static let totalPointers = ["/total", "/count", "/total_count", "/totalCount", "/totalItems", "/total_items",
                                "/totalResults", "/total_results", "/@odata.count", "/meta/total", "/meta/total_count",
                                "/meta/count", "/totalElements", "/page/totalElements", "/pagination/total", "/hits/total"]
    static let pageCountPointers = ["/pages", "/totalPages", "/total_pages", "/page/totalPages", "/meta/total_pages",
                                    "/meta/pages", "/pagination/pages", "/pagination/total_pages"]
    static let pageParameters: Set<String> = ["page", "_page", "page[number]", "pageNumber", "page_number", "p", "pg"]
    static let offsetParameters: Set<String> = ["offset", "$skip", "skip", "startAt", "start", "from", "page[offset]", "_start"]

    // MARK: Resolving a description

    /// Resolves the `.detect` parts of `description` from the first response.
    /// - Throws: `.badPage` for a body that is not JSON, `.undetected` when the items cannot be
    ///   decided (the message names the candidates and the options). Addressing that page one
    ///   does not show is left to a probe (`Resolution.needsProbe`): deciding it takes requests.
    static func resolve(_ description: ListDescription, _ response: HTTPResponse, url: String) throws(SheafError) -> Resolution {
        var resolved = description
        var detected = Set<Signal>()
        let undecided = Signal.allCases.filter { description.source(of: $0) == .detect }
        guard !undecided.isEmpty || description.paging == .detect else {
            return Resolution(description: description, detected: [], pagingDetected: false)
        }
        let body = response.body
        let links = LinkHeader(response.headers)
        return try body.withUnsafeBufferPointer { (buffer) throws(SheafError) -> Resolution in
            let document = try Document(buffer, url: url)
            func decide(_ signal: Signal, _ find: () throws(SheafError) -> SignalSource) throws(SheafError) {
                guard description.source(of: signal) == .detect else { return }
                let source = try find()
                resolved.signals[signal] = source
                if source != .none { detected.insert(signal) }
            }
            try decide(.items) { () throws(SheafError) in .body(try document.items()) }
            try decide(.next) {
                if links.has("next") { return .link("next") }
                if let pointer = nextPointers.first(where: { document.isTextOrNull($0) }) { return .body(JSONPointer(pointer)!) }
                if response.headers.first(named: "X-Next-Page") != nil { return .header("X-Next-Page") }
                return .none
            }
            var cursorParameter: String?
            try decide(.cursor) {
                guard resolved.source(of: .next) == .none else { return .none }
                guard let found = cursorPointers.first(where: { document.isTextOrNull($0.pointer) }) else { return .none }
                cursorParameter = found.parameter
                return .body(JSONPointer(found.pointer)!)
            }
            try decide(.hasMore) { document.firstBoolean(hasMorePointers).map { .body(JSONPointer($0)!) } ?? .none }
            try decide(.isLast) { document.firstBoolean(isLastPointers).map { .body(JSONPointer($0)!) } ?? .none }
            try decide(.total) {
                if let name = totalHeaders.first(where: { name in
                    response.headers.first(named: name).flatMap { HeaderCount.parse($0.trimmingSpaces, allowsContentRange: true)?.value } != nil
                }) { return .header(name) }
                if document.exactTotal("/hits/total/value") { return .body(JSONPointer("/hits/total/value")!) }
                return totalPointers.first(where: { document.isCount($0) }).map { .body(JSONPointer($0)!) } ?? .none
            }
            try decide(.pageCount) {
                if response.headers.first(named: "X-Total-Pages") != nil { return .header("X-Total-Pages") }
                if let pointer = pageCountPointers.first(where: { document.isCount($0) }) { return .body(JSONPointer(pointer)!) }
                return links.has("last") ? .link("last") : .none
            }
            // Stripe's shape: has_more and items with ids, and nothing else to follow.
            var stripeLike = false
            if resolved.source(of: .next) == .none, resolved.source(of: .cursor) == .none,
               case .body(let flag) = resolved.source(of: .hasMore), flag.description == "/has_more",
               description.source(of: .cursor) == .detect, document.lastItemHas("/id", items: resolved.source(of: .items)) {
                resolved.signals[.cursor] = .lastItem(JSONPointer("/id")!)
                detected.insert(.cursor)
                stripeLike = true
            }
            var pagingDetected = false
            var needsProbe = false
            if description.paging == .detect {
                if let paging = try detectPaging(resolved, response: response, url: url, document: document,
                                                 cursorParameter: stripeLike ? "starting_after" : cursorParameter) {
                    resolved.paging = paging
                    pagingDetected = true
                } else {
                    needsProbe = true
                }
            }
            if detected.contains(.pageCount), resolved.source(of: .pageCount) == .link("last") {
                // A last link means nothing without page numbers or offsets to read it by.
                switch resolved.paging {
                case .pageNumber, .offset: break
                default:
                    resolved.signals[.pageCount] = SignalSource.none
                    detected.remove(.pageCount)
                }
            }
            return Resolution(description: resolved, detected: detected, pagingDetected: pagingDetected, needsProbe: needsProbe)
        }
    }

    /// How pages are reached, from the signals of the first page; nil when it promises more
    /// items but shows no way to them.
    private static func detectPaging(_ resolved: ListDescription, response: HTTPResponse, url: String,
                                     document: Document, cursorParameter: String?) throws(SheafError) -> Paging? {
        let page = try PageReader(resolved).read(response, from: url)
        if let next = page.next, resolved.source(of: .next) != .none {
            return infer(from: url, to: next, served: page.items.count) ?? .next
        }
        if resolved.source(of: .cursor) != .none, let cursorParameter {
            return .cursor(parameter: cursorParameter, size: nil)
        }
        if page.more == false { return .next }
        // An approximate total (Elasticsearch's "gte") is no count, but it does promise more.
        let moreKnown = page.total.map { $0 > page.items.count } ?? false
            || page.pageCount.map { $0 > 1 } ?? false || page.more == true
            || document.count("/hits/total/value").map { $0 > page.items.count } ?? false
        guard moreKnown else { return .next }
        // More is promised, and no page names the next: the addressing must come from the request
        // or from the body's echo of it.
        for (name, value) in URLText.queryPairs(url) {
            guard let number = Int(value), number >= 0 else { continue }
            if pageParameters.contains(name) { return .pageNumber(.init(parameter: name, first: number)) }
            if offsetParameters.contains(name) { return .offset(.init(parameter: name, first: number)) }
        }
        for (pointer, parameter) in [("/page", "page"), ("/page_number", "page"), ("/pageNumber", "pageNumber")] {
            if let number = document.integer(pointer) { return .pageNumber(.init(parameter: parameter, first: number)) }
        }
        for (pointer, parameter) in [("/offset", "offset"), ("/startAt", "startAt"), ("/skip", "skip"), ("/from", "from")] {
            if let number = document.integer(pointer) { return .offset(.init(parameter: parameter, first: number)) }
        }
        return nil
    }

    /// Page k's addressing, when `next` differs from `url` in one integer query parameter by one
    /// page (page numbers) or by the items served (offsets).
    static func infer(from url: String, to next: String, served: Int) -> Paging? {
        guard URLText.withoutQuery(url) == URLText.withoutQuery(next) else { return nil }
        let current = Dictionary(URLText.queryPairs(url), uniquingKeysWith: { first, _ in first })
        let following = URLText.queryPairs(next)
        var pageFits: [(String, Int)] = []
        var offsetFits: [(String, Int)] = []
        for (name, value) in following where current[name] != value {
            guard let number = Int(value) else { return nil } // something else changes: a cursor
            let now = current[name].flatMap { Int($0) }
            if now.map({ number == $0 + 1 }) ?? (number == 1 || number == 2) { pageFits.append((name, now ?? number - 1)) }
            if served > 0, now.map({ number == $0 + served }) ?? (number == served) { offsetFits.append((name, now ?? 0)) }
        }
        // A parameter that vanished makes it something else than a plain step.
        if current.keys.contains(where: { name in !following.contains { $0.0 == name } }) { return nil }
        let pages = pageFits.count > 1 ? pageFits.filter { pageParameters.contains($0.0) } : pageFits
        let offsets = offsetFits.count > 1 ? offsetFits.filter { offsetParameters.contains($0.0) } : offsetFits
        switch (pages.first, offsets.first) {
        case (let page?, nil) where pages.count == 1:
            return .pageNumber(.init(parameter: page.0, first: page.1))
        case (nil, let offset?) where offsets.count == 1:
            return .offset(.init(parameter: offset.0, first: offset.1))
        case (let page?, let offset?) where pages.count == 1 && offsets.count == 1:
            if page.0 == offset.0 { return .pageNumber(.init(parameter: page.0, first: page.1)) } // one item a page: the same URLs
            if offsetParameters.contains(offset.0), !pageParameters.contains(page.0) {
                return .offset(.init(parameter: offset.0, first: offset.1))
            }
            return .pageNumber(.init(parameter: page.0, first: page.1))
        default:
            return nil
        }
    }

    // MARK: Never silently short

    /// Query parameters that name the page size a list is asked for.
    static let sizeParameters: Set<String> = ["per_page", "limit", "page_size", "pageSize", "size", "count", "_limit",
                                              "max_results", "maxResults", "page[size]", "$top", "top", "perPage"]

    /// Page sizes APIs serve by default: a page of one of these, saying nothing of more, may be
    /// the first of several as well as the whole list.
    static let usualPageSizes: Set<Int> = [10, 20, 25, 30, 50, 100, 200, 250, 500, 1000]

    /// Whether a list that ended after page one, `page`, ended without anything confirming it:
    /// its paging was detected (not described), nothing on the page could have said more (no
    /// next link, cursor, total, page count or has-more is read), and the page is full: as many
    /// items as the page size its URL asks for, or, asked for none, one of the usual sizes. A
    /// server that pages by a parameter the request did not name answers exactly this way, so
    /// the end is reported as not confirmed (`SHEAF_STOP_UNCONFIRMED`), never as a plain end.
    static func endIsUnconfirmed(_ page: Page, pages: Int, _ resolved: ListDescription) -> Bool {
        guard pages == 1, resolved.paging == .next else { return false }
        let says: [Signal] = [.next, .cursor, .total, .pageCount, .hasMore, .isLast]
        guard says.allSatisfy({ resolved.source(of: $0) == SignalSource.none }) else { return false }
        let count = page.items.count
        guard count >= 10 else { return false }
        if let asked = URLText.queryPairs(page.url).first(where: { sizeParameters.contains($0.0) }) {
            return Int(asked.1) == count
        }
        return usualPageSizes.contains(count)
    }

    /// A signal of more on the last page that `description` does not read, or a total above the
    /// items that arrived; nil when the page agrees the list ended.
    static func unfollowed(_ page: Page, _ description: ListDescription, itemCount: Int) -> SheafError? {
        let headers = page.headers
        let read = { (signal: Signal, source: SignalSource) in description.source(of: signal) == source }
        var seen: (signal: String, hint: String)?
        page.body.withUnsafeBufferPointer { buffer in
            guard let document = try? Document(buffer, url: page.url) else { return }
            if !read(.next, .link("next")), LinkHeader(headers).has("next") {
                seen = ("Link rel=\"next\"", "--next link:next")
            } else if let value = headers.first(named: "X-Next-Page")?.trimmingSpaces, !value.isEmpty,
                      !read(.next, .header("X-Next-Page")) {
                seen = ("X-Next-Page: \(value.prefix(40))", "--next header:X-Next-Page")
            } else if let pointer = nextPointers.first(where: { document.nonEmptyText($0) != nil && !read(.next, .body(JSONPointer($0)!)) }) {
                seen = ("a next link at \"\(pointer)\"", "--next \(pointer)")
            } else if let found = cursorPointers.first(where: { document.nonEmptyText($0.pointer) != nil && !read(.cursor, .body(JSONPointer($0.pointer)!)) }) {
                seen = ("a cursor at \"\(found.pointer)\"", "--paging cursor:\(found.parameter) --cursor \(found.pointer)")
            } else if let pointer = hasMorePointers.first(where: { document.boolean($0) == true && !read(.hasMore, .body(JSONPointer($0)!)) }) {
                seen = ("\"\(pointer.dropFirst())\": true", "--has-more \(pointer) with a next signal or cursor")
            } else if let pointer = isLastPointers.first(where: { document.boolean($0) == false && !read(.isLast, .body(JSONPointer($0)!)) }) {
                seen = ("\"\(pointer.dropFirst())\": false", "--is-last \(pointer)")
            } else if description.source(of: .total) == .none {
                for name in totalHeaders {
                    if let total = headers.first(named: name).flatMap({ HeaderCount.parse($0.trimmingSpaces, allowsContentRange: true)?.value }),
                       total > itemCount {
                        seen = ("\(name): \(total) (\(itemCount) items arrived)", "--total header:\(name) and a way to address pages")
                        return
                    }
                }
                if let pointer = (totalPointers + ["/hits/total/value"]).first(where: { (document.count($0) ?? 0) > itemCount }) {
                    seen = ("a total of \(document.count(pointer)!) at \"\(pointer)\" (\(itemCount) items arrived)",
                            "--total \(pointer) and a way to address pages")
                }
            }
        }
        guard let seen else { return nil }
        return SheafError(.notFollowed,
                          "\(page.url): the last page signals more items (\(seen.signal)) that the list's description does not follow; "
                          + "\(itemCount) items were delivered. Follow it with \(seen.hint), or leave the list to detection",
                          url: page.url, signal: seen.signal, hint: seen.hint)
    }
}

/// A validated JSON body, asked about by pointer.
private struct Document {
    let scanner: JSONScanner
    let root: Range<Int>
    let url: String

    init(_ buffer: UnsafeBufferPointer<UInt8>, url: String) throws(SheafError) {
        scanner = JSONScanner(buffer)
        var none: [JSONScanner.Target] = [.init(pointer: JSONPointer("")!, collectsElements: false)]
        do throws(JSONSyntaxError) {
            try scanner.scanDocument(&none)
        } catch {
            throw SheafError(.badPage, "\(url): the body is not valid JSON: \(error)", url: url, jsonOffset: error.offset)
        }
        root = none[0].range!
        self.url = url
    }

    private func value(_ pointer: String) -> Range<Int>? {
        JSONPointer(pointer).flatMap { scanner.locate($0, in: root) }
    }

    private func first(_ range: Range<Int>) -> UInt8 { scanner.bytes[range.lowerBound] }

    func isTextOrNull(_ pointer: String) -> Bool {
        guard let range = value(pointer) else { return false }
        return first(range) == UInt8(ascii: "\"") || first(range) == UInt8(ascii: "n")
    }

    func nonEmptyText(_ pointer: String) -> String? {
        guard let range = value(pointer), first(range) == UInt8(ascii: "\""),
              let text = try? scanner.decodeString(at: range.lowerBound), !text.isEmpty else { return nil }
        return text
    }

    func boolean(_ pointer: String) -> Bool? {
        guard let range = value(pointer) else { return nil }
        switch first(range) {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: return nil
        }
    }

    func firstBoolean(_ pointers: [String]) -> String? {
        pointers.first { boolean($0) != nil }
    }

    func count(_ pointer: String) -> Int? {
        value(pointer).flatMap { scanner.nonNegativeInteger(at: $0) }
    }

    func isCount(_ pointer: String) -> Bool { count(pointer) != nil }

    func integer(_ pointer: String) -> Int? { count(pointer) }

    /// Elasticsearch's total is exact only with "relation": "eq"; "gte" is a lower bound.
    func exactTotal(_ pointer: String) -> Bool {
        guard isCount(pointer), let relation = nonEmptyText(String(pointer.dropLast("/value".count)) + "/relation") else { return false }
        return relation == "eq"
    }

    func lastItemHas(_ pointer: String, items: SignalSource) -> Bool {
        guard case .body(let itemsPointer) = items, let array = scanner.locate(itemsPointer, in: root),
              first(array) == UInt8(ascii: "["), let last = elements(array).last else { return false }
        return scanner.locate(JSONPointer(pointer)!, in: last) != nil
    }

    /// The items array: the body itself, the one array among the top-level members (and those of
    /// `_embedded`, `hits` or `data` objects), or the one of those under a usual key.
    func items() throws(SheafError) -> JSONPointer {
        if first(root) == UInt8(ascii: "[") { return JSONPointer("")! }
        guard first(root) == UInt8(ascii: "{") else {
            throw SheafError(.undetected, "\(url): the body is neither an array nor an object of one", url: url,
                             hint: "--paging single for a single value")
        }
        var candidates: [(pointer: String, key: String)] = []
        for (key, range) in members(root) {
            let escaped = "/" + JSONPointer.escaping(key)
            if first(range) == UInt8(ascii: "[") {
                candidates.append((escaped, key))
            } else if first(range) == UInt8(ascii: "{"), ["_embedded", "hits", "data"].contains(key) {
                for (inner, innerRange) in members(range) where first(innerRange) == UInt8(ascii: "[") {
                    candidates.append((escaped + "/" + JSONPointer.escaping(inner),
                                       key == "_embedded" ? "_embedded" : inner))
                }
            }
        }
        if candidates.count == 1 { return JSONPointer(candidates[0].pointer)! }
        let usual = candidates.filter { Detector.itemKeys.contains($0.key) || $0.key == "_embedded" }
        if let firstKey = Detector.itemKeys.first(where: { key in usual.contains { $0.key == key } }),
           usual.filter({ $0.key == firstKey || $0.key == "_embedded" }).count == 1,
           let chosen = usual.first(where: { $0.key == firstKey }) {
            return JSONPointer(chosen.pointer)!
        }
        if usual.count == 1 { return JSONPointer(usual[0].pointer)! }
        if candidates.isEmpty {
            throw SheafError(.undetected, "\(url): the first page has no array of items", url: url,
                             hint: "--items POINTER, or --paging single for a single object")
        }
        let names = candidates.map { "\"\($0.pointer)\"" }.joined(separator: ", ")
        throw SheafError(.undetected, "\(url): the first page has several arrays that could be the items (\(names)); choose one",
                         url: url, hint: "--items " + candidates.map(\.pointer).joined(separator: " or --items "))
    }

    /// The members of the object at `range`, in order.
    private func members(_ range: Range<Int>) -> [(String, Range<Int>)] {
        var result: [(String, Range<Int>)] = []
        var index = scanner.skipWhitespace(range.lowerBound + 1)
        while index < range.upperBound, scanner.bytes[index] == UInt8(ascii: "\"") {
            guard let keyEnd = try? scanner.skipString(at: index),
                  let key = try? scanner.decodeString(at: index) else { break }
            index = scanner.skipWhitespace(scanner.skipWhitespace(keyEnd) + 1)
            guard let end = try? scanner.skipValue(at: index, depth: 0) else { break }
            result.append((key, index..<end))
            index = scanner.skipWhitespace(end)
            if index < range.upperBound, scanner.bytes[index] == UInt8(ascii: ",") { index = scanner.skipWhitespace(index + 1) }
        }
        return result
    }

    private func elements(_ range: Range<Int>) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var index = scanner.skipWhitespace(range.lowerBound + 1)
        while index < range.upperBound, scanner.bytes[index] != UInt8(ascii: "]") {
            guard let end = try? scanner.skipValue(at: index, depth: 0) else { break }
            result.append(index..<end)
            index = scanner.skipWhitespace(end)
            if index < range.upperBound, scanner.bytes[index] == UInt8(ascii: ",") { index = scanner.skipWhitespace(index + 1) }
        }
        return result
    }
}
