#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the current thread is doing for Sheaf, kept per thread: whether it runs a foreign
/// callback (so blocking calls made from it refuse instead of deadlocking), and whose callbacks
/// it serves (so an object that waits for its own callbacks to end does not wait for itself).
/// The one answer to "am I inside a callback?".
package enum CallbackContext {
    private static let callbackKey = makeKey()
    private static let ownerKey = makeKey()

    private static func makeKey() -> pthread_key_t {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }

    /// Whether the current thread is inside a Sheaf callback (snapshot, request, hook or transport).
    package static var isInsideCallback: Bool {
        let marked: UnsafeMutableRawPointer? = pthread_getspecific(callbackKey)
        return marked != nil
    }

    /// One owner a thread serves, and the one it served when it began to (a group's callback
    /// runs inside a member list's delivery: the thread serves both).
    private struct Serving {
        var owner: UnsafeMutableRawPointer
        var outer: UnsafeMutableRawPointer?
    }

    /// Whether the current thread is serving `owner`'s callbacks (its snapshot callback, its
    /// hooks, its completion), however deep inside them, and inside another owner's served in
    /// them.
    package static func isServing(_ owner: AnyObject) -> Bool {
        let target = Unmanaged.passUnretained(owner).toOpaque()
        var at: UnsafeMutableRawPointer? = pthread_getspecific(ownerKey)
        while let node = at?.assumingMemoryBound(to: Serving.self).pointee {
            if node.owner == target { return true }
            at = node.outer
        }
        return false
    }

    /// Runs `body` with the current thread marked as inside a callback (of `owner`, when given;
    /// otherwise of whichever owner it serves already).
    package static func run<T>(for owner: AnyObject? = nil, _ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(callbackKey)
        pthread_setspecific(callbackKey, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(callbackKey, previous) }
        return try owner.map { owner in try serving(owner, body) } ?? body()
    }

    /// Runs `body` with the current thread serving `owner`, not marked as inside a callback (a
    /// Swift hook, which may block: nothing of Sheaf waits for it but its own client's flush).
    package static func serving<T>(_ owner: AnyObject, _ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(ownerKey)
        // On this frame, for as long as `body` runs: the thread's chain points at it only then.
        var node = Serving(owner: Unmanaged.passUnretained(owner).toOpaque(), outer: previous)
        return try withUnsafeMutablePointer(to: &node) { pointer in
            pthread_setspecific(ownerKey, UnsafeRawPointer(pointer))
            defer { pthread_setspecific(ownerKey, previous) }
            return try body()
        }
    }
}
