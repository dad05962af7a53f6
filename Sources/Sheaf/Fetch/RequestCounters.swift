import Synchronization

/// Counts one list's HTTP requests, for progress reports.
final class RequestCounters: Sendable {
    private let made = Atomic<Int>(0)
    private let outstanding = Atomic<Int>(0)
    /// What the budget is charged: requests made, and those reserved for pages planned and not
    /// sent yet.
    private let charged = Atomic<Int>(0)

    private let notModified = Atomic<Int>(0)

    /// Requests sent to the transport so far, retries and redirects included.
    var requestsMade: Int { made.load(ordering: .relaxed) }
    /// Of those, the answers a 304 revalidated from the response cache.
    var requestsRevalidated: Int { notModified.load(ordering: .relaxed) }
    /// Requests at the transport now.
    var inFlight: Int { outstanding.load(ordering: .relaxed) }

    /// The most requests the list may send (its request budget); nil: no limit.
    let budget: Int?

    init(budget: Int? = nil) {
        self.budget = budget
    }

    /// Counts one request about to be sent; false (nothing counted) when the budget is spent.
    func started() -> Bool {
        guard reserve() else { return false }
        startedReserved()
        return true
    }

    /// Charges the budget for a page's first request when the plan asks for the page, before it
    /// is sent: pages take the budget in the plan's order, whatever order their fetches start in
    /// (a page planned later must not spend the request of one planned before it). False when the
    /// budget is spent.
    func reserve() -> Bool {
        let count = charged.add(1, ordering: .relaxed).newValue
        if let budget, count > budget {
            charged.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Sends a request `reserve` charged.
    func startedReserved() {
        made.add(1, ordering: .relaxed)
        outstanding.add(1, ordering: .relaxed)
    }

    /// Gives back what `reserve` charged for a request never sent (its fetch was abandoned first).
    func unreserve() {
        charged.subtract(1, ordering: .relaxed)
    }

    /// Counts an answer served from the cache after a 304.
    func revalidated() {
        notModified.add(1, ordering: .relaxed)
    }

    func finished() {
        outstanding.subtract(1, ordering: .relaxed)
    }
}
