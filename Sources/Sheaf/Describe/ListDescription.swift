/// What a list endpoint is and how it paginates. Pure data: a convention is a value of it, not
/// code. Every part left at `.detect` is decided from the first page (see `Detector`).
public struct ListDescription: Sendable {
    /// The path (with an optional query), resolved against the client's base URL.
    public var path: String
    /// Query parameters added to every page request, in order.
    public var query: [(name: String, value: String)] = []
    /// How the pages are reached.
    public var paging: Paging = .detect
    /// Where each signal is read; a signal not in the table is `.detect` (identity: `.none`).
    public var signals: [Signal: SignalSource] = [:]
    /// Stop after this many items (the outcome is then `.finished(.itemLimit)`); nil means no limit.
    public var maxItems: Int? = nil
    /// Stop after this many pages (`.finished(.pageBudget)`); nil means no budget (the page cap
    /// of the client's configuration still applies, as a failure).
    public var maxPages: Int? = nil
    /// Stop before sending more than this many requests, retries and redirects included
    /// (`.finished(.requestBudget)`); nil means no budget.
    public var maxRequests: Int? = nil
    /// End the whole list after this many milliseconds, whatever is in flight (a failure with
    /// `.deadline`); nil means none.
    public var deadlineMilliseconds: Int? = nil
    /// Go on where the run that made this token stopped (its description must be this one).
    public var resume: ResumeToken? = nil
    /// Run exactly this partition of the list (`SheafClient.partitions`): its URL, description
    /// and range replace the path, query, paging and signals; with a resume token, the run goes
    /// on from the token's page, still within the range.
    public var partition: Partition? = nil
    /// The preset the description started from, for display.
    public var preset: String? = nil
    /// Stop at the first item at or below this bound (a newest-first list, synced incrementally).
    public var until: SyncBound? = nil
    /// Ask the server only for items since a stored value, and record the greatest delivered.
    public var since: SinceFilter? = nil
    /// The upper end of a poll (what a later run got to): items of the sync field above its value,
    /// or at it and not in its `seen`, are left out, so that a range read again is the same range
    /// (a stream's batch replayed after a crash). Not part of the JSON form.
    public var through: SyncState? = nil
    /// The range filter a cursor list takes on the field its items are ordered by: with it, the
    /// list is read as pieces of that range walked side by side (see `RangeFilter`).
    public var split: RangeFilter? = nil
    /// The method and body each page is asked for with; nil: a GET (see `ListRequest`).
    public var request: ListRequest? = nil
    /// Whether the endpoint only reads (a POST that queries): its pages are then retried as a
    /// GET's are. A GraphQL query is a read; a mutation never is.
    public var readOnly = false
    /// The GraphQL connection the list is (set with `readGraphQL`): its answers' `errors` fail it.
    public internal(set) var graphQL: GraphQLConnection? = nil

    public init(path: String) {
        self.path = path
    }

    /// Where `signal` is read, defaults applied.
    public func source(of signal: Signal) -> SignalSource {
        signals[signal] ?? (signal == .identity ? .none : .detect)
    }

    /// Sets where `signal` is read, refusing a source it cannot come from.
    public mutating func read(_ signal: Signal, from source: SignalSource) throws(SheafError) {
        try signal.check(source)
        signals[signal] = source
    }
}

/// How page k of a list is reached.
public enum Paging: Sendable, Equatable {
    /// Decided from the first page's signals.
    case detect
    /// One response; nothing is followed or checked.
    case single
    /// The next signal (a link or a cursor made into one) is followed page by page.
    case next
    /// Page k is `parameter=first+k`.
    case pageNumber(Numbering)
    /// Page k is `parameter=first+k×served`, where `served` is the size of page one.
    case offset(Numbering)
    /// The next page is `parameter=<cursor>`, the cursor read from each page.
    case cursor(parameter: String, size: PageSize?)

    /// An addressing parameter, its first value and an optional page size.
    public struct Numbering: Sendable, Equatable {
        public var parameter: String
        public var first: Int
        public var size: PageSize?

        public init(parameter: String, first: Int, size: PageSize? = nil) {
            self.parameter = parameter
            self.first = first
            self.size = size
        }
    }

    /// A page-size parameter, and the size sent with it (nil: named, not sent).
    public struct PageSize: Sendable, Equatable {
        public var parameter: String
        public var value: Int?

        public init(parameter: String, value: Int?) {
            self.parameter = parameter
            self.value = value
        }
    }

    /// The page-size parameter, whichever the kind.
    var size: PageSize? {
        switch self {
        case .pageNumber(let numbering), .offset(let numbering): numbering.size
        case .cursor(_, let size): size
        case .detect, .single, .next: nil
        }
    }

    /// Checks the values a caller may have got wrong (`Paging.described` judges them, as it
    /// does for the C setter and the description JSON).
    package func validated() throws(SheafError) -> Paging {
        do throws(DescriptionRefusal) {
            return try Paging.described(kind: kindName, parameter: parameter, first: first ?? 0,
                                        sizeParameter: size?.parameter, size: size?.value)
        } catch {
            throw error.asError
        }
    }
}

/// What a list reads from each page.
public enum Signal: String, Sendable, Hashable, CaseIterable {
    case items, next, cursor, total
    case pageCount = "page_count"
    case hasMore = "has_more"
    case isLast = "is_last"
    case identity

    /// Refuses a source this signal cannot come from (see `judge`).
    func check(_ source: SignalSource) throws(SheafError) {
        do throws(DescriptionRefusal) {
            try judge(source)
        } catch {
            throw error.asError
        }
    }
}

/// Where a signal is read.
public enum SignalSource: Sendable, Equatable {
    /// The list has no such signal.
    case none
    /// Decided from the first page.
    case detect
    /// A JSON pointer into the page body.
    case body(JSONPointer)
    /// A response header.
    case header(String)
    /// A relation type of the Link header.
    case link(String)
    /// A JSON pointer inside each item (identity).
    case item(JSONPointer)
    /// A JSON pointer inside the page's last item (a cursor such as Stripe's `starting_after`).
    case lastItem(JSONPointer)

    var kindName: String {
        switch self {
        case .none: "none"
        case .detect: "detect"
        case .body: "body"
        case .header: "header"
        case .link: "link"
        case .item: "item"
        case .lastItem: "last_item"
        }
    }

    /// The pointer, header name or relation, as text.
    var whereText: String? {
        switch self {
        case .none, .detect: nil
        case .body(let pointer), .item(let pointer), .lastItem(let pointer): pointer.description
        case .header(let name): name
        case .link(let relation): relation
        }
    }
}

extension Paging {
    /// Whether page k can be addressed (page numbers or offsets).
    var isNumbered: Bool {
        switch self {
        case .pageNumber, .offset: true
        default: false
        }
    }

    /// The first page number or offset.
    var first: Int? {
        switch self {
        case .pageNumber(let numbering), .offset(let numbering): numbering.first
        default: nil
        }
    }
}

extension ListDescription {
    /// Rejects a description that cannot run.
    func check() throws(SheafError) {
        _ = try paging.validated()
        for (name, value) in [("max items", maxItems), ("max pages", maxPages), ("max requests", maxRequests),
                              ("the deadline", deadlineMilliseconds)] {
            if let value, value < 0 { throw SheafError(.invalidArgument, "\(name) must not be negative") }
        }
        do throws(DescriptionRefusal) {
            try DescriptionReading.checkSyncFields(self)
        } catch {
            throw SheafError(.invalidArgument, "the description's \(error.field): \(error.message)")
        }
        if let since, since.parameter.isEmpty {
            throw SheafError(.invalidArgument, "the since filter needs the name of its query parameter")
        }
        if source(of: .identity) == .none, let named = until?.seen != nil ? "until" : since?.seen != nil ? "since" : nil {
            throw SheafError(.invalidArgument, "the description's /\(named)/seen names items by their identity: describe it "
                             + "(\"signals\": {\"identity\": {\"source\": \"item\", \"where\": \"/id\"}})")
        }
        if through != nil, syncField == nil {
            throw SheafError(.invalidArgument, "a poll's end (through) is a value of the list's sync field: describe until or since")
        }
        if syncField?.tokens.isEmpty == true {
            throw SheafError(.invalidArgument, "a sync field is a JSON pointer to a field inside each item, not the item itself")
        }
        if split != nil, graphQL?.nested.isEmpty == false {
            throw SheafError(.invalidArgument, "a list read in pieces of its range filter does not complete nested connections; split it or complete them, not both")
        }
        let cursor = source(of: .cursor)
        switch paging {
        case .cursor:
            if cursor == .none { throw SheafError(.invalidArgument, "cursor paging needs a cursor signal to read") }
        case .detect:
            break
        default:
            if cursor != .none, cursor != .detect {
                throw SheafError(.invalidArgument, "a cursor signal needs cursor paging (the parameter it is sent in)")
            }
        }
    }
}
