import Dispatch

/// A one-shot timer that can be stopped, and whose stopping releases its body at once (an
/// `asyncAfter` would keep every pending deadline of a long list until it fired). Its body runs
/// on the global queue.
///
/// Every deadline waits on the process's one clock thread (`DeadlineClock`): a request's timeout
/// is set and stopped for each request a transport without timeouts of its own sends, and a
/// timer source of its own per request cost two wake-ups of libdispatch's manager thread (a fifth
/// of the CPU of a list read from memory: `sheaf_bench fetch --transport memory`, P5's pages).
final class Deadline: Sendable {
    private let id: UInt64
    private let clock: DeadlineClock

    /// Starts at once.
    init(after milliseconds: Int, on clock: DeadlineClock = .shared, _ body: @escaping @Sendable () -> Void) {
        self.clock = clock
        id = clock.schedule(after: milliseconds, body)
    }

    /// Stops the timer unless its body was already handed to the global queue; the body is
    /// released here.
    func cancel() { clock.cancel(id) }
}

/// One thread that waits for the earliest of every pending deadline, in a heap. Setting a
/// deadline wakes it only when the new one comes before the one it waits for; stopping one never
/// wakes it (the entry stays in the heap, without its body, until it comes up or the heap is
/// compacted).
final class DeadlineClock: @unchecked Sendable {
    // Safe to share: `state` is read and written only with `lock` held.
    static let shared = DeadlineClock()

    private struct Entry {
        var at: UInt64
        var id: UInt64
        func before(_ other: Entry) -> Bool { (at, id) < (other.at, other.id) }
    }

    private struct State {
        /// A min-heap by time (then by the order they were set), holding stopped entries too.
        var heap: [Entry] = []
        /// The bodies of the deadlines not yet fired or stopped.
        var bodies: [UInt64: @Sendable () -> Void] = [:]
        var lastID: UInt64 = 0
        var started = false
        /// What the clock thread waits for (`.max`: nothing); 0 while it is not waiting.
        var sleepsUntil: UInt64 = 0

        mutating func push(_ entry: Entry) {
            heap.append(entry)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].before(heap[parent]) else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popFirst() {
            heap.swapAt(0, heap.count - 1)
            heap.removeLast()
            siftDown(from: 0)
        }

        mutating func siftDown(from start: Int) {
            var parent = start
            while true {
                var first = parent
                let left = 2 * parent + 1, right = left + 1
                if left < heap.count, heap[left].before(heap[first]) { first = left }
                if right < heap.count, heap[right].before(heap[first]) { first = right }
                guard first != parent else { return }
                heap.swapAt(parent, first)
                parent = first
            }
        }

        /// Drops the stopped entries: once they are most of the heap, so that a long run of
        /// requests answered well within their timeouts keeps a heap as long as those in flight.
        mutating func compactIfMostlyStopped() {
            guard heap.count > 64, heap.count > 2 * bodies.count else { return }
            heap.removeAll { bodies[$0.id] == nil }
            for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
        }
    }

    private let lock = Lock()
    private var state = State()

    init() {}

    /// Sets a deadline `milliseconds` from now (0 or less: at once); returns its id.
    func schedule(after milliseconds: Int, _ body: @escaping @Sendable () -> Void) -> UInt64 {
        let at = Lock.nanoseconds(afterMilliseconds: milliseconds)
        let (id, startThread) = lock.withLock { () -> (UInt64, Bool) in
            state.lastID += 1
            state.bodies[state.lastID] = body
            state.push(Entry(at: at, id: state.lastID))
            if at < state.sleepsUntil { lock.signal() }
            let first = !state.started
            state.started = true
            return (state.lastID, first)
        }
        if startThread { start() }
        return id
    }

    /// Stops deadline `id` (nothing if it fired already).
    func cancel(_ id: UInt64) {
        let body = lock.withLock { () -> (@Sendable () -> Void)? in
            defer { state.compactIfMostlyStopped() }
            return state.bodies.removeValue(forKey: id)
        }
        _ = body // released here, outside the lock: what it holds may take locks as it goes
    }

    /// Deadlines not yet fired or stopped, and entries in the heap (for tests).
    var counts: (pending: Int, entries: Int) { lock.withLock { (state.bodies.count, state.heap.count) } }

    private func start() {
        if !startDetachedThread({ [self] in run() }) {
            // No thread to be had: the clock waits on one of libdispatch's instead.
            DispatchQueue(label: "sheaf.deadlines").async { [self] in run() }
        }
    }

    /// The clock thread: hands each deadline that has come to the global queue, then waits for
    /// the next one (or for one to be set, when none is pending).
    private func run() {
        lock.withLock {
            while true {
                guard let first = state.heap.first else {
                    state.sleepsUntil = .max
                    lock.wait()
                    state.sleepsUntil = 0
                    continue
                }
                guard let body = state.bodies[first.id] else {
                    state.popFirst() // stopped
                    continue
                }
                if first.at <= Lock.nanosecondsNow() {
                    state.popFirst()
                    state.bodies[first.id] = nil
                    DispatchQueue.global().async(execute: body)
                    continue
                }
                state.sleepsUntil = first.at
                _ = lock.wait(untilNanoseconds: first.at)
                state.sleepsUntil = 0
            }
        }
    }
}
