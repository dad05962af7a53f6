import Synchronization

/// Counts one list's HTTP requests, for progress reports.
final class RequestCounters: Sendable {
    private let made = Atomic<Int>(0)
    private let outstanding = Atomic<Int>(0)

    /// Requests sent to the transport so far, retries and redirects included.
    var requestsMade: Int { made.load(ordering: .relaxed) }
    /// Requests at the transport now.
    var inFlight: Int { outstanding.load(ordering: .relaxed) }

    /// The most requests the list may send (its request budget); nil: no limit.
    let budget: Int?

    init(budget: Int? = nil) {
        self.budget = budget
    }

    /// Counts one request about to be sent; false (nothing counted) when the budget is spent.
    func started() -> Bool {
        let count = made.add(1, ordering: .relaxed).newValue
        if let budget, count > budget {
            made.subtract(1, ordering: .relaxed)
            return false
        }
        outstanding.add(1, ordering: .relaxed)
        return true
    }

    func finished() {
        outstanding.subtract(1, ordering: .relaxed)
    }
}
