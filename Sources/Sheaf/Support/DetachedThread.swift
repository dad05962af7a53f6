#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` on a thread of its own that nobody joins (the library's long-lived threads:
/// `BlockingWorkers`, `DeadlineClock`). Returns false, without running `body`, when the system
/// gives no thread.
package func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let result = pthread_create(&thread, &attributes, { context in
        Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, context)
    pthread_attr_destroy(&attributes)
    guard result == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        return false
    }
    return true
}

private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }
}
