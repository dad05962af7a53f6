/// One page as read from a response: its items (verbatim byte ranges) and its signals.
struct Page: Sendable {
    /// The response body the ranges point into.
    var body: [UInt8]
    /// Each item's bytes in `body`, in order.
    var items: [Range<Int>]
    /// Each item's identity key (same order), when the list de-duplicates.
    let identities: [IdentityKey?]
    /// Each item's value of the sync field (same order), when the list syncs (`ListDescription.until`,
    /// `.since`); nil for an item without it.
    var syncValues: [SyncValue?] = []
    /// Each item's value of the range filter's field (same order), when the list is split
    /// (`ListDescription.split`); nil for an item without it.
    var rangeValues: [SyncValue?] = []
    /// The absolute URL of the next page, when the page names one (a next link, a header's page
    /// number or a cursor, made into a URL).
    var next: String? = nil
    /// What the page says of more pages: true (there are more), false (this is the last), nil
    /// (it says nothing).
    var more: Bool? = nil
    /// The server's total item count, when the page reports one.
    var total: Int? = nil
    /// The number of pages, when the page reports it.
    var pageCount: Int? = nil
    /// The addressing value (page number or offset) of the last page, from a Link rel="last".
    var lastPosition: Int? = nil
    /// The response headers, for the end-of-list check of signals nobody read.
    var headers: [HTTPHeader] = []
    /// The URL the page was fetched from.
    var url: String = ""

    /// A page with no items (a page the server says is past the end).
    static let empty = Page(body: [], items: [], identities: [])
}

/// The identity of an item: its JSON value at the identity pointer, in a canonical byte form.
struct IdentityKey: Hashable, Sendable {
    let bytes: [UInt8]
}

extension Page {
    /// The page with only the items in `range` (a split list's page kept to its piece's range);
    /// `endsList`: it names no next page and says nothing of more (its piece ends with it).
    func part(_ range: Range<Int>, endsList: Bool) -> Page {
        var part = range == items.indices ? self
            : Page(body: body, items: Array(items[range]), identities: identities.isEmpty ? [] : Array(identities[range]))
        if range != items.indices {
            if !syncValues.isEmpty { part.syncValues = Array(syncValues[range]) }
            if !rangeValues.isEmpty { part.rangeValues = Array(rangeValues[range]) }
            part.total = total
            part.pageCount = pageCount
            part.lastPosition = lastPosition
            part.headers = headers
            part.url = url
            part.next = next
            part.more = more
        }
        if endsList {
            part.next = nil
            part.more = false
        }
        return part
    }
}
