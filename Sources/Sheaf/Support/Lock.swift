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
        let conditionStatus = pthread_cond_init(condition, nil)
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

    /// Wakes every thread blocked in `wait`.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }
}

/// A value only reachable with its lock held: `Synchronization.Mutex`'s shape on a `Lock`.
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
}
