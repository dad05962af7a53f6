import Dispatch

/// A run's snapshots taken one at a time by the caller (a pull iterator) instead of a callback.
///
/// `push` is called from the run's snapshot callback with the snapshot, or with what the caller
/// will want of it prepared on the run's thread (`Element`), and never blocks: a shared worker
/// thread must never wait for a caller who may never come back (0.2.0 parked one per stalled
/// list, and libdispatch's pool stopped every list at 256). The bound is the run's own: a run
/// made with `acknowledgesSnapshots` counts a snapshot as pending until `next` hands it out
/// (through the take handler, `ListRun.snapshotTaken`), and holds back its fetching while a window
/// of them wait. `next` takes them in order, waiting as long as the caller allows. Once the run
/// has finished (`finish`) and everything was taken, `next` says `.end`.
package final class SnapshotQueue<Element: Sendable>: Sendable {
    package enum Next: Sendable {
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
        var onTake: (@Sendable () -> Void)?
        var onClose: (@Sendable () -> Void)?
        var onReady: (@Sendable () -> Void)?
    }

    private let state = Locked(State())
    /// Counts what `next` may take: snapshots, and once finished, the end (kept signalled).
    private let ready = DispatchSemaphore(value: 0)

    package init() {}

    /// Calls `taken` each time `next` hands out a snapshot, and `closed` once when the caller
    /// stops taking (set once, before the run starts).
    package func whenTaken(_ taken: @escaping @Sendable () -> Void, closed: @escaping @Sendable () -> Void) {
        state.withLock {
            $0.onTake = taken
            $0.onClose = closed
        }
    }

    /// Calls `ready` after each snapshot queued and once at the end, without a lock held: what
    /// an event loop needs to take with `next(timeoutMilliseconds: 0)` (set once, before the run
    /// starts).
    package func whenReady(_ ready: @escaping @Sendable () -> Void) {
        state.withLock { $0.onReady = ready }
    }

    /// Queues `snapshot` without waiting; false once the queue is closed (the run then stops, as
    /// when a callback asks to).
    package func push(_ snapshot: Element) -> Bool {
        let (queued, onReady) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            guard !state.closed else { return (false, nil) }
            state.snapshots.append(snapshot)
            return (true, state.onReady)
        }
        guard queued else { return false }
        ready.signal()
        onReady?()
        return true
    }

    /// The run has finished: after the snapshots queued so far, `next` says `.end`.
    package func finish() {
        let (first, onReady) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            defer { state.finished = true }
            return (!state.finished, state.onReady)
        }
        if first {
            ready.signal()
            onReady?()
        }
    }

    /// Takes the next snapshot, waiting at most `timeoutMilliseconds` (nil: as long as it takes).
    package func next(timeoutMilliseconds: Int?) -> Next {
        let timeout: DispatchTime = timeoutMilliseconds.map { .now() + .milliseconds(max(0, $0)) } ?? .distantFuture
        guard ready.wait(timeout: timeout) == .success else { return .pending }
        let (taken, onTake) = state.withLock { state -> (Element?, (@Sendable () -> Void)?) in
            (state.snapshots.isEmpty ? nil : state.snapshots.removeFirst(), state.onTake)
        }
        guard let taken else {
            ready.signal() // the end stays visible to later calls
            return .end
        }
        onTake?()
        return .snapshot(taken)
    }

    /// The caller stops taking: a later `push` returns false, untaken snapshots are dropped.
    /// Idempotent.
    package func close() {
        let onClose = state.withLock { state -> (@Sendable () -> Void)? in
            defer {
                state.closed = true
                state.snapshots.removeAll()
                state.onTake = nil
                state.onClose = nil
                state.onReady = nil
            }
            return state.closed ? nil : state.onClose
        }
        onClose?()
    }
}
