/// One page as read from a response body: its items (verbatim byte ranges) and its signals.
struct Page: Sendable {
    /// The response body the ranges point into.
    let body: [UInt8]
    /// Each item's bytes in `body`, in order.
    let items: [Range<Int>]
    /// Each item's identity key (same order), when the list de-duplicates.
    let identities: [IdentityKey?]
    /// The absolute URL of the next page, when the page names one.
    let next: String?
    /// The server's total item count, when the page reports one.
    let total: Int?

    /// A page with no items (a page the server says is past the end).
    static let empty = Page(body: [], items: [], identities: [], next: nil, total: nil)
}

/// The identity of an item: its JSON value at the identity pointer, in a canonical byte form.
struct IdentityKey: Hashable, Sendable {
    let bytes: [UInt8]
}
