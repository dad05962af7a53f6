/// Reads a response according to a resolved list description (nothing left to detect).
struct PageReader: Sendable {
    let paging: Paging
    let items: JSONPointer
    let next: SignalSource
    let cursor: SignalSource
    let total: SignalSource
    let pageCount: SignalSource
    let hasMore: SignalSource
    let isLast: SignalSource
    let identity: JSONPointer?
    /// The field an incremental sync compares, read from each item.
    let syncField: JSONPointer?
    /// The field a split list is ordered by, read from each item.
    let rangeField: JSONPointer?
    /// A GraphQL connection's edges, read for the items when it has no `nodes`.
    let edges: JSONPointer?

    /// - Parameter description: a description whose `.detect` parts count as absent (the
    ///   detector resolves them before a run reads pages).
    init(_ description: ListDescription) {
        paging = description.paging
        func resolved(_ signal: Signal) -> SignalSource {
            let source = description.source(of: signal)
            return source == .detect ? .none : source
        }
        if case .body(let pointer) = description.source(of: .items) { items = pointer } else { items = JSONPointer("")! }
        next = resolved(.next)
        cursor = resolved(.cursor)
        total = resolved(.total)
        pageCount = resolved(.pageCount)
        hasMore = resolved(.hasMore)
        isLast = resolved(.isLast)
        if case .item(let pointer) = description.source(of: .identity) { identity = pointer } else { identity = nil }
        syncField = description.syncField
        rangeField = description.split?.field
        edges = description.graphQL?.edges
    }

    /// Whether pages of this list say where the list ends (a next signal or an end flag).
    var pagesSignalTheEnd: Bool {
        [next, cursor, hasMore, isLast].contains { $0 != .none }
    }

    /// Parses `response`, fetched from `url`; a failure names the URL and the JSON location.
    func read(_ response: HTTPResponse, from url: String) throws(SheafError) -> Page {
        try read(response.body, headers: response.headers, from: url)
    }

    func read(_ body: [UInt8], headers: [HTTPHeader] = [], from url: String) throws(SheafError) -> Page {
        // The body pointers, items first; `slot` remembers where each signal's target is.
        var targets = [JSONScanner.Target(pointer: items, collectsElements: true)]
        var slots: [Signal: Int] = [:]
        if let edges { targets.append(.init(pointer: edges, collectsElements: true)) }
        for (signal, source) in [(Signal.next, next), (.cursor, cursor), (.total, total), (.pageCount, pageCount),
                                 (.hasMore, hasMore), (.isLast, isLast)] {
            if case .body(let pointer) = source {
                slots[signal] = targets.count
                targets.append(.init(pointer: pointer, collectsElements: false))
            }
        }
        return try body.withUnsafeBufferPointer { (buffer) throws(SheafError) -> Page in
            let scanner = JSONScanner(buffer)
            do throws(JSONSyntaxError) {
                try scanner.scanDocument(&targets)
            } catch {
                throw SheafError(.badPage, "\(url): the body is not valid JSON: \(error)", url: url, jsonOffset: error.offset)
            }
            var elements = targets[0].elements
            if targets[0].range == nil, let edges, let range = targets[1].range, buffer[range.lowerBound] == UInt8(ascii: "[") {
                elements = try targets[1].elements.map { (edge) throws(SheafError) -> Range<Int> in
                    guard let node = scanner.locate(GraphQLConnection.node, in: edge) else {
                        throw SheafError(.badPage, "\(url): an edge at \"\(edges)\" has no node", url: url, jsonPointer: edges.description)
                    }
                    return node
                }
            } else if targets[0].range.map({ buffer[$0.lowerBound] }) != UInt8(ascii: "[") {
                let what = targets[0].range == nil ? "nothing" : "a value that is not an array"
                throw SheafError(.badPage, "\(url): expected the items array at \"\(items)\", found \(what)", url: url,
                                 jsonPointer: items.description)
            }
            let context = Context(scanner: scanner, headers: headers, url: url, targets: targets, slots: slots)
            var page = Page(body: body, items: elements, identities: identities(of: elements, scanner))
            if let syncField {
                page.syncValues = elements.map { element in scanner.locate(syncField, in: element).flatMap { SyncValue(scanner, $0) } }
            }
            if let rangeField {
                page.rangeValues = elements.map { element in scanner.locate(rangeField, in: element).flatMap { SyncValue(scanner, $0) } }
            }
            page.headers = headers
            page.url = url
            page.total = try context.count(.total, total, allowsContentRange: true)
            page.pageCount = try context.count(.pageCount, pageCount)
            if case .link(let relation) = pageCount, let last = LinkHeader(headers).target(relation, resolvedAgainst: url) {
                page.lastPosition = position(in: last)
            }
            let hasMore = try context.flag(.hasMore, self.hasMore)
            let isLast = try context.flag(.isLast, self.isLast)
            var saysEnd = hasMore == false || isLast == true
            if !saysEnd {
                page.next = try nextURL(context, lastItem: elements.last)
                // An empty or absent next link or cursor is the end, where one is read.
                if page.next == nil, next != .none || cursor != .none { saysEnd = true }
            }
            if saysEnd {
                page.more = false
            } else if page.next != nil || hasMore == true || isLast == false {
                page.more = true
            }
            return page
        }
    }

    // MARK: Signals

    /// The next page's URL: from the next signal, or the cursor made into the paging parameter.
    private func nextURL(_ context: Context, lastItem: Range<Int>?) throws(SheafError) -> String? {
        if next != .none, let text = try context.text(.next, next, lastItem: nil, allowsNumber: paging.parameter != nil) {
            if let number = Int(text) {
                // A header (or field) holding a page number, as GitLab's X-Next-Page ("page" is
                // GitLab's parameter, for when detection has not named one yet).
                guard let parameter = paging.parameter ?? (next == .header("X-Next-Page") ? "page" : nil) else {
                    throw SheafError(.badPage, "\(context.url): the next page at \(describe(next)) is a number, but no page parameter is known",
                                     url: context.url, hint: "--paging page:NAME")
                }
                return URLText.settingQuery(context.url, parameter, to: String(number))
            }
            if case .link = next { return text } // resolved by the Link reader
            guard let resolved = URLText.resolve(text, against: context.url) else {
                throw SheafError(.badPage, "\(context.url): the next link at \(describe(next)) is not a URL", url: context.url,
                                 jsonPointer: next.pointerText)
            }
            return resolved
        }
        if case .cursor(let parameter, _) = paging, parameter.hasPrefix(GraphQLConnection.bodyPrefix) {
            // A cursor in a body keeps its JSON type: a string, a number, or an array (search_after).
            guard let value = try context.json(.cursor, cursor, lastItem: lastItem) else { return nil }
            guard let url = URLText.settingQuery(context.url, parameter, to: value) else {
                throw SheafError(.badPage, "\(context.url): cannot send the cursor in \(parameter)", url: context.url)
            }
            return url
        }
        if cursor != .none, let value = try context.text(.cursor, cursor, lastItem: lastItem, allowsNumber: true) {
            guard case .cursor(let parameter, _) = paging else { return nil }
            guard let url = URLText.settingQuery(context.url, parameter, to: value) else {
                throw SheafError(.badPage, "\(context.url): cannot send the cursor in \(parameter)", url: context.url)
            }
            return url
        }
        return nil
    }

    /// The addressing value in `url` (its page number or offset).
    func position(in url: String) -> Int? {
        guard let parameter = paging.parameter else { return nil }
        return URLText.queryValue(url, parameter).flatMap { Int($0) }
    }

    private func identities(of elements: [Range<Int>], _ scanner: JSONScanner) -> [IdentityKey?] {
        guard let identity else { return [] }
        return elements.map { element in scanner.locate(identity, in: element).map { IdentityKey(scanner, $0) } }
    }

    private func describe(_ source: SignalSource) -> String {
        switch source {
        case .header(let name): "header \(name)"
        case .link(let relation): "Link rel=\"\(relation)\""
        default: "\"\(source.whereText ?? "")\""
        }
    }

    /// One page's scan results, read signal by signal.
    private struct Context {
        let scanner: JSONScanner
        let headers: [HTTPHeader]
        let url: String
        let targets: [JSONScanner.Target]
        let slots: [Signal: Int]

        /// The raw text of a signal: a string or a number from the body, a header value, or a
        /// Link target; nil when absent, null or empty.
        /// - Parameter allowsNumber: whether a JSON number is a value (a page number, a numeric
        ///   cursor) rather than a bad page.
        func text(_ signal: Signal, _ source: SignalSource, lastItem: Range<Int>?, allowsNumber: Bool) throws(SheafError) -> String? {
            switch source {
            case .body:
                return try bodyText(signal, range: targets[slots[signal]!].range, pointer: source.pointerText,
                                    allowsNumber: allowsNumber)
            case .lastItem(let pointer):
                guard let lastItem else { return nil }
                return try bodyText(signal, range: scanner.locate(pointer, in: lastItem), pointer: pointer.description,
                                    allowsNumber: allowsNumber)
            case .header(let name):
                let value = headers.first(named: name)?.trimmingSpaces ?? ""
                return value.isEmpty ? nil : value
            case .link(let relation):
                return LinkHeader(headers).target(relation, resolvedAgainst: url)
            case .none, .detect, .item:
                return nil
            }
        }

        /// A signal as JSON text, for a parameter sent in a body: a body value as it is (a string,
        /// number, array or object), a header's as a string; nil when absent, null or empty.
        func json(_ signal: Signal, _ source: SignalSource, lastItem: Range<Int>?) throws(SheafError) -> String? {
            let range: Range<Int>?
            switch source {
            case .body: range = targets[slots[signal]!].range
            case .lastItem(let pointer): range = lastItem.flatMap { scanner.locate(pointer, in: $0) }
            default: return try text(signal, source, lastItem: lastItem, allowsNumber: false).map { JSONText.quote($0) }
            }
            guard let range else { return nil }
            let text = String(decoding: scanner.bytes[range], as: UTF8.self)
            guard text != "null", text != "\"\"", text != "false", text != "true" else {
                if text == "null" || text == "\"\"" { return nil }
                throw SheafError(.badPage, "\(url): the \(signal.rawValue) at \"\(source.whereText ?? "")\" is a boolean, not a cursor",
                                 url: url, jsonPointer: source.pointerText)
            }
            return text
        }

        private func bodyText(_ signal: Signal, range: Range<Int>?, pointer: String?, allowsNumber: Bool) throws(SheafError) -> String? {
            guard let range else { return nil }
            switch scanner.bytes[range.lowerBound] {
            case UInt8(ascii: "n"):
                return nil
            case UInt8(ascii: "\""):
                let text = (try? scanner.decodeString(at: range.lowerBound)) ?? ""
                return text.isEmpty ? nil : text
            case UInt8(ascii: "-") where allowsNumber, UInt8(ascii: "0")...UInt8(ascii: "9") where allowsNumber:
                return String(decoding: scanner.bytes[range], as: UTF8.self)
            default:
                throw SheafError(.badPage, "\(url): the \(signal.rawValue) at \"\(pointer ?? "")\" is neither a string nor null",
                                 url: url, jsonPointer: pointer)
            }
        }

        /// A non-negative count (a total or a page count); nil when absent or null.
        func count(_ signal: Signal, _ source: SignalSource, allowsContentRange: Bool = false) throws(SheafError) -> Int? {
            switch source {
            case .body(let pointer):
                guard let range = targets[slots[signal]!].range, scanner.bytes[range.lowerBound] != UInt8(ascii: "n") else { return nil }
                guard let value = scanner.nonNegativeInteger(at: range) else {
                    throw SheafError(.badPage, "\(url): the \(signal.rawValue) at \"\(pointer)\" is not a non-negative integer in range",
                                     url: url, jsonPointer: pointer.description)
                }
                return value
            case .header(let name):
                guard let value = headers.first(named: name)?.trimmingSpaces, !value.isEmpty else { return nil }
                if let count = HeaderCount.parse(value, allowsContentRange: allowsContentRange) { return count.value }
                throw SheafError(.badPage, "\(url): the header \(name) (\"\(value.prefix(80))\") is not a count in range", url: url)
            default:
                return nil
            }
        }

        /// A boolean flag; nil when absent or null.
        func flag(_ signal: Signal, _ source: SignalSource) throws(SheafError) -> Bool? {
            switch source {
            case .body(let pointer):
                guard let range = targets[slots[signal]!].range else { return nil }
                switch scanner.bytes[range.lowerBound] {
                case UInt8(ascii: "t"): return true
                case UInt8(ascii: "f"): return false
                case UInt8(ascii: "n"): return nil
                default:
                    throw SheafError(.badPage, "\(url): the \(signal.rawValue) at \"\(pointer)\" is not a boolean",
                                     url: url, jsonPointer: pointer.description)
                }
            case .header(let name):
                guard let value = headers.first(named: name)?.trimmingSpaces.lowercased(), !value.isEmpty else { return nil }
                switch value {
                case "true", "1", "yes": return true
                case "false", "0", "no": return false
                default: throw SheafError(.badPage, "\(url): the header \(name) is not a boolean", url: url)
                }
            default:
                return nil
            }
        }
    }
}

/// A count in a header: a plain non-negative integer, or the complete length of a
/// Content-Range ("items 0-24/573", "0-24/573", "*/573"); "/*" is an unknown length.
enum HeaderCount {
    case known(Int)
    case unknown

    var value: Int? {
        if case .known(let value) = self { return value }
        return nil
    }

    static func parse(_ text: String, allowsContentRange: Bool) -> HeaderCount? {
        if let value = digits(Substring(text)) { return .known(value) }
        guard allowsContentRange, let slash = text.lastIndex(of: "/") else { return nil }
        let length = text[text.index(after: slash)...]
        if length == "*" { return .unknown }
        return digits(length).map { .known($0) }
    }

    private static func digits(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text) // nil past Int.max: out of range, never a trap
    }
}

extension IdentityKey {
    /// Strings compare by the code units they denote (so "\u0061" equals "a", and the lone
    /// surrogates "\ud800" and "\udbff" differ from each other and from "\ufffd"); other values
    /// by their bytes.
    init(_ scanner: JSONScanner, _ range: Range<Int>) {
        if scanner.bytes[range.lowerBound] == UInt8(ascii: "\""),
           let text = try? scanner.decodeUTF8(at: range.lowerBound, marksLoneSurrogates: true) {
            self.init(bytes: [UInt8(ascii: "s")] + text)
        } else {
            self.init(bytes: Array(scanner.bytes[range]))
        }
    }
}

extension Paging {
    /// The query parameter that addresses pages (page number, offset or cursor).
    var parameter: String? {
        switch self {
        case .pageNumber(let numbering), .offset(let numbering): numbering.parameter
        case .cursor(let parameter, _): parameter
        case .detect, .single, .next: nil
        }
    }
}

extension SignalSource {
    var pointerText: String? {
        switch self {
        case .body(let pointer), .item(let pointer), .lastItem(let pointer): pointer.description
        default: nil
        }
    }
}
