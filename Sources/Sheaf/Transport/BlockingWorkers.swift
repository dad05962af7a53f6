#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Threads of the library's own for code that may block (foreign transports).
///
/// Swift's cooperative pool is only as wide as the core count, so blocking it would cap a
/// window of 8 at 2 requests on a 2-core machine. Here every job gets a thread: an idle one
/// if there is one, a new one otherwise; idle threads exit after a while.
package final class BlockingWorkers: Sendable {
    /// The process-wide pool.
    package static let shared = BlockingWorkers()

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var idle = 0
        var threads = 0
    }

    /// Idle workers wait on it for a job (`withLock(when:)`), woken one per job.
    private let state = Locked(State())
    private let idleSeconds: Int

    init(idleSeconds: Int = 10) {
        self.idleSeconds = idleSeconds
    }

    /// Runs `job` on a worker thread, marked as inside a callback.
    package func run(_ job: @escaping @Sendable () -> Void) {
        let spawn = state.withLock { state -> Bool in
            state.jobs.append(job)
            if state.idle > state.jobs.count - state.head - 1 { return false }
            state.threads += 1
            return true
        }
        if spawn { startThread() } else { state.changed(wakingOne: true) }
    }

    private func startThread() {
        if !startDetachedThread({ [self] in work() }) {
            // No thread to be had: run the job here rather than lose it.
            state.withLock { $0.threads -= 1 }
            work(once: true)
        }
    }

    private func work(once: Bool = false) {
        while true {
            let job: (@Sendable () -> Void)? = state.withLock { state in
                guard state.head < state.jobs.count else { return nil }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                return job
            }
            if let job {
                CallbackContext.run(job)
                if once { return }
                continue
            }
            if once { return }
            state.withLock { $0.idle += 1 }
            let exit = state.withLock(when: { $0.head < $0.jobs.count }, timeoutMilliseconds: idleSeconds * 1000) { state, woke in
                state.idle -= 1
                if !woke {
                    state.threads -= 1
                    return true
                }
                return false
            }
            if exit { return }
        }
    }
}
