#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ListPager {
    /// The next page's items, decoded (see `more()`): nil once the list has ended and every page
    /// was handed out, complete or stopped where its budgets say.
    /// - Throws: the failure that ended the list (after the pages before it), `.decoding` for an
    ///   item that is not an `Item`, `.cancelled` for a cancelled task.
    public func more<Item: Decodable & Sendable>(_ type: Item.Type, decoder: JSONDecoder = JSONDecoder()) async throws(SheafError) -> [Item]? {
        switch try await more() {
        case .page(let page):
            return try ItemDecoder<Item>(decoder: decoder).decode(page.delta.json, offset: page.delta.totalItems - page.delta.items)
        case .end(.failed(let error)):
            throw error
        case .end, .pending:
            return nil
        }
    }
}
