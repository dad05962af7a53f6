import Synchronization

/// Counts one list's HTTP requests, for progress reports.
final class RequestCounters: Sendable {
    private let made = Atomic<Int>(0)
    private let outstanding = Atomic<Int>(0)

    /// Requests sent to the transport so far, retries and redirects included.
    var requestsMade: Int { made.load(ordering: .relaxed) }
    /// Requests at the transport now.
    var inFlight: Int { outstanding.load(ordering: .relaxed) }

    func started() {
        made.add(1, ordering: .relaxed)
        outstanding.add(1, ordering: .relaxed)
    }

    func finished() {
        outstanding.subtract(1, ordering: .relaxed)
    }
}
