#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Marks the threads that are running foreign callbacks, so blocking calls made from them can
/// refuse instead of deadlocking.
package enum CallbackContext {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether the current thread is inside a Sheaf callback (snapshot or transport).
    package static var isInsideCallback: Bool { pthread_getspecific(key) != nil }

    /// Runs `body` with the current thread marked as inside a callback.
    package static func run<T>(_ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}
