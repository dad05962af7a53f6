/// What a list endpoint is and how it paginates. Pure data: new conventions add values.
public struct ListDescription: Sendable {
    /// The path (with an optional query), resolved against the client's base URL.
    public var path: String
    /// Query parameters added to every page request, in order.
    public var query: [(name: String, value: String)] = []
    /// Where the items are; the empty pointer means the body is the array.
    public var items = JSONPointer("")!
    /// How page k is requested.
    public var addressing: PageAddressing = .none
    /// Where the next page's link comes from.
    public var next: NextSource = .none
    /// Where the total item count comes from.
    public var total: TotalSource = .none
    /// The identity of an item for de-duplication; nil keeps every item.
    public var identity: JSONPointer? = nil
    /// Stop after this many items (the outcome is then `.limitReached`); nil means no limit.
    public var maxItems: Int? = nil

    public init(path: String) {
        self.path = path
    }
}

/// How page k of a list is requested.
public enum PageAddressing: Sendable, Equatable {
    /// Only the first request is built; later pages come from next links.
    case none
    /// A page-number parameter, counting from `firstPage`, with an optional page-size parameter.
    case pageNumber(parameter: String, firstPage: Int, sizeParameter: String?, pageSize: Int?)
    /// An offset/limit pair (not supported yet).
    case offsetLimit(offsetParameter: String, limitParameter: String, limit: Int)
    /// A cursor parameter fed from the "next" value (not supported yet).
    case cursor(parameter: String)
}

/// Where "next" comes from.
public enum NextSource: Sendable, Equatable {
    case none
    /// A JSON pointer to a URL string (absolute or relative to the page) or null.
    case bodyPointer(JSONPointer)
    /// The Link header's rel="next" (not supported yet).
    case linkHeader
}

/// Where the total item count comes from.
public enum TotalSource: Sendable, Equatable {
    case none
    /// A JSON pointer to a non-negative integer.
    case bodyPointer(JSONPointer)
    /// A response header such as X-Total-Count (not supported yet).
    case header(String)
}

extension ListDescription {
    /// Rejects the parts of the description this version cannot run yet.
    func checkSupported() throws(SheafError) {
        switch addressing {
        case .none, .pageNumber: break
        case .offsetLimit: throw SheafError(.unsupported, "offset/limit addressing is not supported yet")
        case .cursor: throw SheafError(.unsupported, "cursor addressing is not supported yet")
        }
        if next == .linkHeader { throw SheafError(.unsupported, "next links from the Link header are not supported yet") }
        if case .header = total { throw SheafError(.unsupported, "totals from a response header are not supported yet") }
        if case .pageNumber(_, let first, _, let size) = addressing {
            guard first >= 0 else { throw SheafError(.invalidArgument, "the first page number must be 0 or more") }
            if let size, size <= 0 { throw SheafError(.invalidArgument, "the page size must be positive") }
        }
        if let maxItems, maxItems < 0 { throw SheafError(.invalidArgument, "max items must not be negative") }
    }
}
