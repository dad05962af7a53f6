import Foundation
import Synchronization
@testable import Sheaf

/// A Stripe-shaped cursor list for a `ScriptedTransport`: `{"object":"list","data":[...],
/// "has_more":bool}`, newest first by `created` (then by id), `limit` (10 by default, at most
/// 100), `starting_after` (an id: the items after it in the list's order), and
/// `created[gt|gte|lt|lte]`. Items are `{"id":N,"created":T}`; items can be added while a run
/// reads the list (`insert`), and the filter can be ignored, as a server that does not know it
/// would.
final class FakeStripeAPI: Sendable {
    struct Item: Sendable, Equatable {
        let id: Int
        let created: Int
    }

    private struct State {
        /// Newest first.
        var items: [Item]
        var requests = 0
        var filtered = 0
    }

    private let state: Mutex<State>
    let ignoresFilter: Bool

    /// - Parameter created: each item's `created`, any order; ids are given from 1 in that order.
    init(created: [Int], ignoresFilter: Bool = false) {
        let items = created.enumerated().map { Item(id: $0.offset + 1, created: $0.element) }
        state = Mutex(State(items: Self.ordered(items)))
        self.ignoresFilter = ignoresFilter
    }

    private static func ordered(_ items: [Item]) -> [Item] {
        items.sorted { ($0.created, $0.id) > ($1.created, $1.id) }
    }

    /// Every item now, in the list's order.
    var items: [Item] { state.withLock { $0.items } }
    /// Requests answered, and those that carried a created filter.
    var requests: Int { state.withLock { $0.requests } }
    var filteredRequests: Int { state.withLock { $0.filtered } }

    /// Adds an item created at `created`, with the next id.
    func insert(created: Int) {
        state.withLock { state in
            let id = (state.items.map(\.id).max() ?? 0) + 1
            state.items = Self.ordered(state.items + [Item(id: id, created: created)])
        }
    }

    func reply(_ request: HTTPRequest) -> ScriptedReply {
        let query = URLComponents(string: request.url)?.queryItems ?? []
        func value(_ name: String) -> Int? { query.first { $0.name == name }?.value.flatMap { Int($0) } }
        let limit = min(max(value("limit") ?? 10, 1), 100)
        let bounds = ["created[gt]", "created[gte]", "created[lt]", "created[lte]"].map(value)
        return state.withLock { state -> ScriptedReply in
            state.requests += 1
            if bounds.contains(where: { $0 != nil }) { state.filtered += 1 }
            var start = 0
            if let after = value("starting_after") {
                guard let position = state.items.firstIndex(where: { $0.id == after }) else {
                    return .json(#"{"error":{"type":"invalid_request_error","message":"No such object: '\#(after)'"}}"#, status: 400)
                }
                start = position + 1
            }
            let kept = state.items[start...].filter { item in
                if ignoresFilter { return true }
                if let gt = bounds[0], item.created <= gt { return false }
                if let gte = bounds[1], item.created < gte { return false }
                if let lt = bounds[2], item.created >= lt { return false }
                if let lte = bounds[3], item.created > lte { return false }
                return true
            }
            let page = kept.prefix(limit)
            let data = page.map { #"{"id":\#($0.id),"created":\#($0.created),"object":"charge"}"# }.joined(separator: ",")
            return .json(#"{"object":"list","url":"/v1/charges","has_more":\#(kept.count > limit),"data":[\#(data)]}"#)
        }
    }
}

/// The Stripe preset, with the identity read from each item's id.
func stripeList(_ path: String = "/v1/charges", limit: Int = 100) throws -> ListDescription {
    var description = try Preset.named("stripe").applied(to: ListDescription(path: path))
    description.paging = .cursor(parameter: "starting_after", size: .init(parameter: "limit", value: limit))
    description.signals[.identity] = .item(JSONPointer("/id")!)
    return description
}
