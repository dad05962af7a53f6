import Dispatch
import Synchronization

/// A run's snapshots taken one at a time by the caller (a pull iterator) instead of a callback.
///
/// `push` is called from the run's snapshot callback with the snapshot, or with what the caller
/// will want of it prepared on the run's thread (`Element`): it holds at most `capacity` untaken
/// and blocks while they are all there (the run then holds back its fetching, so memory stays
/// bounded by the window). `next` takes them in order, waiting as long as the caller allows.
/// Once the run has finished (`finish`) and everything was taken, `next` says `.end`.
public final class SnapshotQueue<Element: Sendable>: Sendable {
    public enum Next: Sendable {
        case snapshot(Element)
        /// The run has finished and every snapshot was taken.
        case end
        /// Nothing within the time allowed.
        case pending
    }

    private struct State {
        /// At most `capacity` long: taking from the front is cheap enough.
        var snapshots: [Element] = []
        var finished = false
        var closed = false
    }

    private let state = Mutex(State())
    /// Counts what `next` may take: snapshots, and once finished, the end (kept signalled).
    private let ready = DispatchSemaphore(value: 0)
    /// Counts free places. Starts at 0 and is raised to `capacity`: a semaphore released below
    /// its initial value traps in libdispatch, and snapshots may be left untaken.
    private let space = DispatchSemaphore(value: 0)

    public init(capacity: Int) {
        for _ in 0..<max(1, capacity) { space.signal() }
    }

    /// Queues `snapshot`, waiting for a free place; false once the queue is closed (the run
    /// then stops, as when a callback asks to).
    public func push(_ snapshot: Element) -> Bool {
        guard !state.withLock({ $0.closed }) else { return false }
        space.wait()
        let queued = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.snapshots.append(snapshot)
            return true
        }
        if queued { ready.signal() }
        return queued
    }

    /// The run has finished: after the snapshots queued so far, `next` says `.end`.
    public func finish() {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { ready.signal() }
    }

    /// Takes the next snapshot, waiting at most `timeoutMilliseconds` (nil: as long as it takes).
    public func next(timeoutMilliseconds: Int?) -> Next {
        let timeout: DispatchTime = timeoutMilliseconds.map { .now() + .milliseconds(max(0, $0)) } ?? .distantFuture
        guard ready.wait(timeout: timeout) == .success else { return .pending }
        let taken = state.withLock { state -> Element? in
            state.snapshots.isEmpty ? nil : state.snapshots.removeFirst()
        }
        guard let taken else {
            ready.signal() // the end stays visible to later calls
            return .end
        }
        space.signal()
        return .snapshot(taken)
    }

    /// The caller stops taking: a waiting or later `push` returns false, untaken snapshots are
    /// dropped. Idempotent.
    public func close() {
        let first = state.withLock { state -> Bool in
            defer {
                state.closed = true
                state.snapshots.removeAll()
            }
            return !state.closed
        }
        if first { space.signal() } // wakes a push waiting for a place (the run has one producer)
    }
}
