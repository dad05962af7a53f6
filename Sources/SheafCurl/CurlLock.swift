#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A pthread mutex paired with one condition variable.
///
/// `Synchronization.Mutex` has no condition variable, and the event loop's shutdown handshake
/// needs one, so this small class wraps the pthread primitives instead.
final class CurlLock: @unchecked Sendable {
    // Safe to share: the mutex and condition live at fixed heap addresses for the whole lifetime
    // of the object and are only ever used through the pthread functions, which are thread-safe.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
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
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Blocks until the condition is signalled; call only with the mutex held (inside `withLock`).
    func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// Wakes every thread blocked in `wait`.
    func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
