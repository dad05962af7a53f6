/// The one way a run's snapshots reach a consumer that takes them (pulling from C, Python's
/// iterators, the Swift `AsyncSequence`): the run pushes, the consumer takes in order with a
/// blocking `next(timeoutMilliseconds:)` or an async `next()`.
///
/// `push` never blocks: a shared worker thread must never wait for a caller who may never come
/// back (0.2.0 parked one per stalled list, and libdispatch's pool stopped every list at 256).
/// Back-pressure is the consumer's credit, kept by the run: a run made with
/// `acknowledgesSnapshots` counts a snapshot as pending until it is taken (the take handler,
/// `ListRun.snapshotTaken`), and holds back its fetching while a window of pages waits. Once the
/// run has finished (`finish`) and everything was taken, `next` says `.end`. A waiter wakes on an
/// event (a push, the end, a close), never by polling.
package final class SnapshotChannel<Element: Sendable>: Sendable {
    package enum Next: Sendable {
        case snapshot(Element)
        /// The run has finished and every snapshot was taken (or the consumer closed the channel).
        case end
        /// Nothing within the time allowed.
        case pending
    }

    private struct State {
        /// At most a window of pages long: taking from the front is cheap enough.
        var snapshots: [Element] = []
        var finished = false
        var closed = false
        /// Async `next()` calls waiting for a push, the end or a close.
        var waiters: [CheckedContinuation<Void, Never>] = []
        var onTake: (@Sendable () -> Void)?
        var onClose: (@Sendable () -> Void)?
        var onReady: (@Sendable () -> Void)?

        var hasNext: Bool { !snapshots.isEmpty || finished || closed }

        /// Takes what is next (the state says there is something): a snapshot, or the end.
        mutating func take() -> (Next, (@Sendable () -> Void)?) {
            snapshots.isEmpty || closed ? (.end, nil) : (.snapshot(snapshots.removeFirst()), onTake)
        }
    }

    private let state = Locked(State())

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

    /// Queues `snapshot` without waiting; false once the channel is closed (the run then stops,
    /// as when a callback asks to).
    package func push(_ snapshot: Element) -> Bool {
        changing { state in
            guard !state.closed else { return false }
            state.snapshots.append(snapshot)
            return true
        }
    }

    /// The run has finished: after the snapshots queued so far, `next` says `.end`.
    package func finish() {
        changing { $0.finished = true }
    }

    /// Takes the next snapshot, waiting at most `timeoutMilliseconds` (nil: as long as it takes).
    package func next(timeoutMilliseconds: Int?) -> Next {
        let (next, onTake) = state.withLock(when: \.hasNext, timeoutMilliseconds: timeoutMilliseconds) { state, ready in
            ready ? state.take() : (.pending, nil)
        }
        onTake?()
        return next
    }

    /// Takes the next snapshot, suspending until there is one (or the end). The caller cancels
    /// by ending the run (which finishes the channel) or by closing it.
    package func next() async -> Next {
        while true {
            let taken = state.withLock { state in state.hasNext ? state.take() : nil }
            if let (next, onTake) = taken {
                onTake?()
                return next
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if !state.hasNext { state.waiters.append(continuation) }
                    return state.hasNext
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// The caller stops taking: a later `push` returns false, untaken snapshots are dropped, and
    /// `next` says `.end`. Idempotent.
    package func close() {
        let onClose = changing { state -> (@Sendable () -> Void)? in
            defer {
                state.closed = true
                state.snapshots.removeAll()
                state.onTake = nil
                state.onClose = nil
            }
            return state.closed ? nil : state.onClose
        }
        onClose?()
    }

    /// Changes the state (`change` returns whether anything changed, or what the caller needs),
    /// then wakes every waiter, blocking or async, and tells the event loop, with no lock held.
    private func changing<Result>(_ change: (inout State) -> Result) -> Result {
        let (result, waiters, onReady) = state.withLock { state in
            let result = change(&state)
            defer { state.waiters = [] }
            return (result, state.waiters, state.closed ? nil : state.onReady)
        }
        state.changed()
        waiters.forEach { $0.resume() }
        onReady?()
        return result
    }
}
