import CCurl
import Sheaf
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One libcurl multi handle and the dedicated pthread that drives it.
///
/// Threads other than the event thread only touch the lock-guarded queues and flags, and wake
/// the thread with `curl_multi_wakeup`. Everything else (the multi handle's transfers, the easy
/// handles and the libcurl callbacks) lives on the event thread.
final class CurlEventLoop: @unchecked Sendable {
    // Safe to share: every stored `var` is either guarded by `lock` (the "Guarded" section) or
    // confined to the event thread (the "Event thread" section), and the `let`s are immutable.
    // `multi` is used from other threads only for `curl_multi_wakeup`, which libcurl allows
    // concurrently with the event thread, and only under `lock` while `multiOpen` is true.

    /// How `close()` parted from the event thread.
    private enum CloseMode {
        /// Not closed yet.
        case open
        /// The closing thread waits until the curl handles are freed and may then join.
        case wait
        /// Nobody waits: the event thread detaches itself when it is done.
        case detach
    }

    private let lock = Lock()
    private let multi: UnsafeMutableRawPointer?
    private let acceptEncoding: Bool

    // Guarded by `lock`.
    private var queued: [CurlTransfer] = []
    private var cancelled: [CurlTransfer] = []
    private var closing = false
    private var closeMode = CloseMode.open
    private var multiOpen = false
    private var thread: pthread_t?
    private var inCallback = false
    private var cleanedUp = false
    private var joinable = false
    private var startupFailure: TransportError?

    // Event thread only.
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

    init(maxConnections: Int, maxConnectionsPerHost: Int, maxTotalConnections: Int,
         acceptEncoding: Bool) {
        self.acceptEncoding = acceptEncoding
        multi = CurlGlobal.isReady ? scurl_multi_init() : nil
        guard let multi else {
            startupFailure = TransportError(.other, CurlGlobal.failure ?? "curl_multi_init failed")
            return
        }
        _ = scurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(1, maxConnections))
        _ = scurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(0, maxConnectionsPerHost))
        _ = scurl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max(0, maxTotalConnections))
        _ = scurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))

        // The thread owns one reference to the loop until it returns. Holding the lock across
        // the start keeps `thread` and `multiOpen` consistent for anyone who looks.
        lock.withLock {
            let context = Unmanaged.passRetained(self).toOpaque()
            var tid = pthread_t()
            let status = pthread_create(&tid, nil, { context in
                let loop = Unmanaged<CurlEventLoop>.fromOpaque(context!).takeRetainedValue()
                loop.run()
                return nil
            }, context)
            if status == 0 {
                thread = tid
                multiOpen = true
            } else {
                Unmanaged<CurlEventLoop>.fromOpaque(context).release()
                scurl_multi_cleanup(multi)
                startupFailure = TransportError(.other, "cannot start the transport thread (error \(status))")
            }
        }
    }

    // MARK: - Called from any thread

    /// Queues a transfer for the event thread and wakes it.
    func enqueue(_ transfer: CurlTransfer) {
        let refused: (TransportError, CurlTransfer.Completion?)? = lock.withLock {
            if multiOpen && !closing, let multi {
                queued.append(transfer)
                scurl_multi_wakeup(multi)
                return nil
            }
            // Only reachable when the loop never started: nothing can send after `close()`.
            let completion = transfer.completion
            transfer.state = .finished
            transfer.completion = nil
            return (startupFailure ?? TransportError(.other, "transport closed"), completion)
        }
        if let (failure, completion) = refused {
            completion?(.failure(failure))
        }
    }

    /// Abandons a transfer: its completion will not be called unless that call already began.
    func cancel(_ transfer: CurlTransfer) {
        let dropped: CurlTransfer.Completion? = lock.withLock {
            switch transfer.state {
            case .queued:
                // Still in `queued`; the event thread drops it when it drains the queue.
                transfer.state = .cancelled
            case .active:
                transfer.state = .cancelled
                if multiOpen, let multi {
                    cancelled.append(transfer)
                    scurl_multi_wakeup(multi)
                }
            case .cancelled, .finished:
                return nil
            }
            defer { transfer.completion = nil }
            return transfer.completion
        }
        // Released here, outside the lock: whatever it captured may run code in its deinit.
        _ = dropped
    }

    /// Stops the loop: outstanding transfers fail with "transport closed" and the handles are freed.
    ///
    /// Never waits for completions to run. It waits for the event thread to free the curl handles
    /// only when that cannot deadlock: not on the event thread, and not while a completion runs
    /// (which might be waiting for something the closing thread holds).
    func close() {
        let wait: Bool = lock.withLock {
            guard thread != nil, !closing else { return false }
            closing = true
            if let multi, multiOpen {
                scurl_multi_wakeup(multi)
            }
            let onEventThread = pthread_equal(pthread_self(), thread!) != 0
            closeMode = onEventThread || inCallback ? .detach : .wait
            return closeMode == .wait
        }
        guard wait else { return }
        let join: pthread_t? = lock.withLock {
            while !cleanedUp { lock.wait() }
            return joinable ? thread : nil
        }
        if let join {
            pthread_join(join, nil)
        }
    }

    // MARK: - Event thread

    private func run() {
        scurl_name_current_thread("sheaf-curl")
        guard let multi else { return }
        var finished: [(CurlTransfer, Result<HTTPResponse, TransportError>)] = []
        while true {
            // Commands from other threads.
            let (starting, stopping, stop): ([CurlTransfer], [CurlTransfer], Bool) = lock.withLock {
                if closing { return ([], [], true) }
                let starting = queued.filter { transfer in
                    guard transfer.state == .queued else { return false }
                    transfer.state = .active
                    return true
                }
                defer {
                    queued.removeAll(keepingCapacity: true)
                    cancelled.removeAll(keepingCapacity: true)
                }
                return (starting, cancelled, false)
            }
            if stop { break }
            for transfer in stopping {
                remove(transfer)
            }
            for transfer in starting {
                if let failure = transfer.prepare(acceptEncoding: acceptEncoding) {
                    transfer.releaseHandle()
                    finished.append((transfer, .failure(failure)))
                } else if let easy = transfer.easy, scurl_multi_add_handle(multi, easy) == CURLM_OK {
                    active[easy] = transfer
                } else {
                    transfer.releaseHandle()
                    finished.append((transfer, .failure(TransportError(.other, "curl_multi_add_handle failed"))))
                }
            }

            // Let libcurl work, then collect what it finished.
            var running: Int32 = 0
            _ = scurl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = scurl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = scurl_msg_result(message)  // read before the removal invalidates `message`
                guard let transfer = active[easy] else { continue }
                let outcome = transfer.outcome(code)
                remove(transfer)
                finished.append((transfer, outcome))
            }

            // Completions, outside the lock; stop at once if a close began meanwhile.
            var delivered = 0
            for (transfer, outcome) in finished {
                guard deliver(transfer, outcome) else { break }
                delivered += 1
            }
            finished.removeFirst(delivered)
            if !finished.isEmpty { break }  // closing: the rest are answered in `shutdown`

            if scurl_multi_poll(multi, nil, 0, 1000, nil) != CURLM_OK {
                usleep(1000)  // never spin on a failing poll
            }
        }
        shutdown(multi, finished: finished)
    }

    /// Calls a finished transfer's completion unless it was cancelled; false when closing instead.
    private func deliver(_ transfer: CurlTransfer, _ outcome: Result<HTTPResponse, TransportError>) -> Bool {
        var completion: CurlTransfer.Completion?
        let proceed: Bool = lock.withLock {
            if closing { return false }
            guard transfer.state != .cancelled, let claimed = transfer.completion else { return true }
            transfer.state = .finished
            transfer.completion = nil
            inCallback = true
            completion = claimed
            return true
        }
        guard proceed else { return false }
        if let call = completion {
            call(outcome)
            // Drop what the closure captured while `inCallback` still tells `close()` not to wait:
            // a deinit it triggers is user code too.
            completion = nil
            _ = consume call
            lock.withLock { inCallback = false }
        }
        return true
    }

    /// Takes a transfer out of the multi handle and frees its easy handle.
    private func remove(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy, let multi else { return }
        if active.removeValue(forKey: easy) != nil {
            scurl_multi_remove_handle(multi, easy)
        }
        transfer.releaseHandle()
    }

    /// Frees every curl handle, then fails what is left with "transport closed" (or its result).
    private func shutdown(_ multi: UnsafeMutableRawPointer,
                          finished: [(CurlTransfer, Result<HTTPResponse, TransportError>)]) {
        let closed = TransportError(.other, "transport closed")
        var outstanding = finished
        for transfer in active.values {
            outstanding.append((transfer, .failure(closed)))
        }
        let calls: [(CurlTransfer.Completion, Result<HTTPResponse, TransportError>)] = lock.withLock {
            multiOpen = false  // from here on nobody else touches `multi`
            for transfer in queued where transfer.state == .queued {
                outstanding.append((transfer, .failure(closed)))
            }
            queued = []
            cancelled = []
            var calls: [(CurlTransfer.Completion, Result<HTTPResponse, TransportError>)] = []
            for (transfer, outcome) in outstanding {
                if transfer.state != .cancelled, let completion = transfer.completion {
                    calls.append((completion, outcome))
                }
                transfer.state = .finished
                transfer.completion = nil
            }
            return calls
        }
        for transfer in Array(active.values) {
            remove(transfer)
        }
        scurl_multi_cleanup(multi)
        outstanding = []

        // Tell a waiting `close()` the handles are gone; it may join only if no user code runs now.
        let detach: Bool = lock.withLock {
            cleanedUp = true
            joinable = closeMode == .wait && calls.isEmpty
            lock.broadcast()
            return !joinable
        }
        for (completion, outcome) in calls {
            completion(outcome)
        }
        if detach {
            pthread_detach(pthread_self())
        }
    }
}
