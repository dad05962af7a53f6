#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex paired with one condition variable: the one lock every part of Sheaf uses.
///
/// Why not `Synchronization.Mutex`: on Linux it is a futex that ThreadSanitizer does not model,
/// so a TSan build reports every access made under it as a race and hides the real ones. pthread
/// mutexes are what TSan intercepts, and uncontended they cost the same (measured with
/// `bench/run.py`, see the README's Performance section). The condition variable serves the
/// curl event loop's shutdown handshake.
package final class Lock: @unchecked Sendable {
    // Safe to share: the mutex and condition live at fixed heap addresses for the whole lifetime
    // of the object and are only ever used through the pthread functions, which are thread-safe.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        let mutexStatus = pthread_mutex_init(mutex, nil)
        precondition(mutexStatus == 0, "pthread_mutex_init failed (\(mutexStatus))")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if canImport(Darwin)
        // Darwin's condition variables time out on the wall clock alone (Lock.waitClock).
        #else
        // Timed waits measure on the monotonic clock: a change of the wall clock moves no deadline.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        let conditionStatus = pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        precondition(conditionStatus == 0, "pthread_cond_init failed (\(conditionStatus))")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deinitialize(count: 1)
        condition.deallocate()
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the mutex held.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Blocks until the condition is signalled; call only with the mutex held (inside `withLock`).
    package func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// Blocks until the condition is signalled or `deadline` (from `deadline(afterMilliseconds:)`)
    /// passes; returns false once it has passed. Call only with the mutex held.
    package func wait(until deadline: timespec) -> Bool {
        var deadline = deadline
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }

    /// As `wait(until:)`, the end given as the wait clock's nanoseconds (of `nanosecondsNow`).
    package func wait(untilNanoseconds nanoseconds: UInt64) -> Bool {
        wait(until: Self.timespecAt(nanoseconds))
    }

    /// Now, on the clock a timed wait measures on, in nanoseconds.
    package static func nanosecondsNow() -> UInt64 {
        var now = timespec()
        clock_gettime(waitClock, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// The clock a timed wait measures on.
    #if canImport(Darwin)
    private static let waitClock = CLOCK_REALTIME
    #else
    private static let waitClock = CLOCK_MONOTONIC
    #endif

    /// The moment `milliseconds` from now, for `wait(untilNanoseconds:)`: at once for 0 or less,
    /// and no further than some 31 years (a longer wait is as good as forever, and cannot wrap).
    package static func nanoseconds(afterMilliseconds milliseconds: Int) -> UInt64 {
        nanosecondsNow() + UInt64(min(max(0, milliseconds), 1_000_000_000_000)) * 1_000_000
    }

    /// The same moment, for `wait(until:)`.
    package static func deadline(afterMilliseconds milliseconds: Int) -> timespec {
        timespecAt(nanoseconds(afterMilliseconds: milliseconds))
    }

    private static func timespecAt(_ nanoseconds: UInt64) -> timespec {
        let limit = min(nanoseconds, UInt64(Int64.max))
        return timespec(tv_sec: .init(limit / 1_000_000_000), tv_nsec: .init(limit % 1_000_000_000))
    }

    /// Wakes every thread blocked in `wait`.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// Wakes one thread blocked in `wait` (when every waiter waits for the same thing, and one
    /// of them is enough to take it).
    package func signal() {
        pthread_cond_signal(condition)
    }
}

/// A value only reachable with its lock held: `Synchronization.Mutex`'s shape on a `Lock`, and
/// a way to wait for it to change (`withLock(when:timeoutMilliseconds:_:)`, `changed()`).
package final class Locked<State>: @unchecked Sendable {
    // Safe to share: `state` is read and written only inside `lock.withLock`.
    private let lock = Lock()
    private var state: State

    package init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the lock held and the state lent to it for changing.
    @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try lock.withLock { () throws(Failure) -> Result in try body(&state) }
    }

    /// Waits until `ready(state)` holds (the lock released while waiting, woken by `changed()`),
    /// at most `timeoutMilliseconds` (nil: as long as it takes), then runs `body` with the lock
    /// held and whether `ready` held.
    package func withLock<Result>(when ready: (State) -> Bool, timeoutMilliseconds: Int?,
                                  _ body: (inout State, Bool) -> Result) -> Result {
        lock.withLock {
            let deadline = timeoutMilliseconds.map(Lock.nanoseconds(afterMilliseconds:))
            var isReady = ready(state)
            while !isReady {
                if let deadline {
                    guard lock.wait(untilNanoseconds: deadline) else { break }
                } else {
                    lock.wait()
                }
                isReady = ready(state)
            }
            return body(&state, isReady || ready(state))
        }
    }

    /// Wakes the threads waiting in `withLock(when:...)` to look at the state again (with
    /// `wakingOne`, one of them: when they all wait for the same thing and one can take it).
    package func changed(wakingOne: Bool = false) {
        if wakingOne { lock.signal() } else { lock.broadcast() }
    }
}
