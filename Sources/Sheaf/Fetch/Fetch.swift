import Dispatch

/// What one fetch sends besides its URL.
struct FetchTemplate: Sendable {
    var method = "GET"
    /// Added to the client's headers (a header of the same name replaces the client's).
    var headers: [HTTPHeader] = []
    var body: [UInt8] = []
    /// Whether transient failures are retried: idempotent methods, or the caller's opt-in.
    var isRetriable = true
    /// Whether a final answer outside 2xx is delivered (a single request, whose caller reads
    /// it) rather than failed (a page).
    var deliversFailures = false
    /// A download's file: successful bodies stream there, and a retry resumes where it broke.
    var download: FileDownload?
    /// A cap on the body below the client's (`ClientConfiguration.maxBodyBytes`): a page asked
    /// for ahead of page one.
    var maxBodyBytes: Int?
    /// A list's page: its method and body, with the page URL's body parameters set in it.
    var page: PageBody?

    /// The body cap for this fetch: the client's, or this template's when it is lower.
    func bodyCap(_ configuration: ClientConfiguration) -> Int {
        min(configuration.maxBodyBytes, maxBodyBytes ?? .max)
    }
}

extension FetchTemplate {
    /// The template of a list's pages (nil: a GET).
    init(page: PageBody?) {
        self.init()
        guard let page else { return }
        self.page = page
        method = page.method
        if let type = page.contentType { headers = [HTTPHeader(name: "Content-Type", value: type)] }
        isRetriable = page.isRead
    }
}

/// What a fetch delivered: the final URL (after redirects), the answer, and the attempts made.
struct Fetched: Sendable {
    var url: String
    var response: HTTPResponse
    var attempts: Int
}

/// How a fetch ended. Indirect: each case's payload is one reference, so telling the cases apart
/// reads no padding of a smaller payload (which memcheck reports as an uninitialised read), at
/// the cost of one allocation per fetch.
indirect enum FetchEnd: Sendable {
    case fetched(Fetched)
    case failed(SheafError)
    /// A retry or a redirect would go past its list's request budget: the list stops there, as
    /// its caller asked (not a failure).
    case outOfBudget
}

/// Fetches one URL: attempts, transient-failure retries with backoff, redirects, and the
/// credential rule (credentials go only to the base URL's origin; see `SheafClient.request`).
/// Pages and single requests both go through it.
final class Fetch: Sendable {
    typealias Completion = @Sendable (FetchEnd) -> Void

    private struct State {
        var url: String
        /// The template as it stands after redirects (a 303 turns a POST into a GET).
        var template: FetchTemplate
        var attempt = 0
        /// Counts every attempt, redirects included: an answer or a deadline names the one it is
        /// for, and only the current one counts.
        var serial = 0
        var redirects = 0
        var task: (any TransportTask)?
        /// The library's deadline for the attempt at a transport that keeps no time of its own.
        var deadline: Deadline?
        /// The wait before the next attempt (a backoff, or a pause the server asked for).
        var pause: Deadline?
        var isDone = false
        /// Whether an attempt is at the transport, counted in `requests.inFlight`.
        var isOutstanding = false
        /// Whether the attempt holds a place in its origin's window (`OriginPace.admit`), from
        /// its admission until its answer or the fetch's end.
        var holdsPlace = false
        /// When the attempt at the transport was sent (for the log and the window), and the
        /// requests to the origin in flight then, itself included.
        var sentAt: UInt64 = 0
        var inFlightAtSend = 0
        /// The list's requests sent before it (for a rate limit's count).
        var sentBefore = 0
        /// The generation of the provided credential sent (0: none), and the one a 401 refused
        /// (0: none yet): a request is refreshed once.
        var credentialGeneration = 0
        var refusedGeneration = 0
        /// The first request was counted when the page was planned (`RequestCounters.reserve`)
        /// and is not sent yet.
        var holdsReservation = false
        /// The response cache's part in the attempt at the transport: the name its answer is
        /// stored under, and the entry it revalidates (see `ResponseCache`).
        var cacheName: String?
        var revalidating: ResponseCache.Entry?
    }

    /// Past the request timeout, a transport gets this long to report the timeout itself before
    /// the library gives up on the answer.
    static let deadlineGraceMilliseconds = 1000

    private let client: SheafClient
    private let state: Locked<State>
    private let completion: Completion
    private let requests: RequestCounters
    /// The origin's window: every attempt is admitted through it, it is told of every answer,
    /// and obeyed when it says to wait before sending.
    private let pace: OriginPace
    /// Whether its answers size the origin's window (their latency, their refusals): a list's
    /// pages do, a request's do not (a slow upload is no sign of a queue, and one 429 from a
    /// rate-limited endpoint is not the capacity of the origin). Everyone obeys a Retry-After
    /// and rate-limit headers, whoever got them.
    private let sizesWindow: Bool
    /// Whether its attempts lead their list in the origin's lines (`OriginPace.admit`): the one
    /// page a list can ask for next, or a request of its own; not a page among many.
    private let leads: Bool

    /// - Parameters:
    ///   - reserved: the first request was counted already (`RequestCounters.reserve`).
    ///   - leads: whether it goes first at its origin (see `leads`).
    init(client: SheafClient, url: String, template: FetchTemplate = FetchTemplate(), requests: RequestCounters,
         pace: OriginPace, sizesWindow: Bool = true, reserved: Bool = false, leads: Bool = true,
         completion: @escaping Completion) {
        self.client = client
        self.requests = requests
        self.pace = pace
        self.sizesWindow = sizesWindow
        self.leads = leads
        var state = State(url: url, template: template)
        state.holdsReservation = reserved
        self.state = Locked(state)
        self.completion = completion
    }

    func start() {
        attempt()
    }

    /// Abandons the fetch; the completion is not called afterwards.
    func cancel() {
        abandon()?.cancel()
    }

    /// Abandons the fetch (counted out of the requests in flight at once) and returns the
    /// attempt at the transport, for the caller to cancel once it holds no lock of its own.
    /// The attempt's place in the origin's window is given back by that cancel, after the
    /// transport's: the next request is not sent while this one may still be at the server.
    func abandon() -> (any TransportTask)? {
        let (task, heldPlace, sentAt) = state.withLock { state in
            state.isDone = true
            stopPause(&state)
            settleOutstanding(&state)
            giveBackReservation(&state)
            defer {
                state.task = nil
                state.holdsPlace = false
            }
            return (state.task, state.holdsPlace, state.sentAt)
        }
        guard task != nil || heldPlace else { return nil }
        return AbandonedAttempt(task: task, pace: heldPlace ? pace : nil, sentAt: sentAt)
    }

    /// Sends the next attempt, or arranges it (after a pause, after its credential, once the
    /// origin's window has room).
    private func attempt() {
        // The attempt to send, or how long to wait first (a pause the server asked for).
        let step = state.withLock { state -> (next: (url: String, template: FetchTemplate, serial: Int)?, wait: Int)? in
            guard !state.isDone else { return nil }
            // The server asked the client to hold back (Retry-After, a spent rate limit).
            let wait = pace.pause
            if wait > 0 { return (nil, wait) }
            state.attempt += 1
            state.serial += 1
            return ((state.url, state.template, state.serial), 0)
        }
        guard let step else { return }
        if step.wait > 0 { return schedule(after: step.wait) }
        guard let (url, template, serial) = step.next else { return }
        guard let provider = client.credentialProvider, client.needsProvidedCredential(url) else {
            return admit(url, template, serial: serial, credential: nil)
        }
        // The request's timeout covers the wait for its credential: a provider that has not
        // answered in time fails the request. Its answer, when it comes, is kept for the next
        // request (CredentialProvider), and ignored here (`send` sees the fetch is over).
        let timeout = client.configuration.timeoutMilliseconds
        let askedAt = DispatchTime.now().uptimeNanoseconds
        let late = timeout > 0 ? Deadline(after: timeout) { [weak self] in
            self?.credentialLate(url: url, serial: serial, milliseconds: timeout)
        } : nil
        provider.credential(newerThan: state.withLock { $0.refusedGeneration }) { [self] result in
            late?.cancel()
            switch result {
            case .success(let issued):
                state.withLock { $0.credentialGeneration = issued.generation }
                let waited = Int((DispatchTime.now().uptimeNanoseconds &- askedAt) / 1_000_000)
                admit(url, template, serial: serial, credential: issued.credential, waited: waited)
            case .failure(let error):
                guard state.withLock({ $0.serial == serial }) else { return }
                finish(.failed(client.redacting(error)))
            }
        }
    }

    /// Sends the attempt `serial` once the origin's window has room for it. Its credential is
    /// made first: an attempt waiting for one holds no place, so a provider's own request to the
    /// origin is never stuck behind attempts waiting for that provider.
    private func admit(_ url: String, _ template: FetchTemplate, serial: Int, credential: Credential?, waited: Int = 0) {
        // Weakly: the run holds its fetches while they are in flight, and a waiting attempt must
        // not keep a cancelled one (and through its completion, the run) alive. One that is over
        // when its turn comes says so, and the place goes to the next.
        let turn: @Sendable () -> Bool = { [weak self] in
            self?.admitted(url, template, serial: serial, credential: credential, waited: waited) ?? false
        }
        if pace.admit(leading: leads, otherwise: turn), !turn() { pace.release() }
    }

    /// The attempt `serial`'s turn in the origin's window came (its place taken for it): sent,
    /// or false when the fetch has moved on (the place then goes to the next in line).
    private func admitted(_ url: String, _ template: FetchTemplate, serial: Int, credential: Credential?, waited: Int) -> Bool {
        let current = state.withLock { state -> Bool in
            guard !state.isDone, state.serial == serial else { return false }
            state.holdsPlace = true
            return true
        }
        if current { send(url, template, serial: serial, credential: credential, waited: waited) }
        return current
    }

    /// The attempt `serial` is still waiting for its credential past the request's timeout.
    private func credentialLate(url: String, serial: Int, milliseconds: Int) {
        guard state.withLock({ !$0.isDone && $0.serial == serial && !$0.isOutstanding }) else { return }
        finish(.failed(SheafError(.credential, "the credential provider gave no credential within the request's timeout "
                                   + "of \(milliseconds) ms", url: client.redactor.redact(url))))
    }

    /// - Parameter waited: how long the attempt waited for its credential, taken off its timeout.
    private func send(_ url: String, _ template: FetchTemplate, serial: Int, credential: Credential?, waited: Int = 0) {
        var built: HTTPRequest
        do {
            built = try client.request(for: url, template, credential: credential)
        } catch {
            return finish(.failed(error))
        }
        if waited > 0, built.timeoutMilliseconds > 0 {
            built.timeoutMilliseconds = max(1, built.timeoutMilliseconds - waited)
        }
        // A stored answer is asked for again with its validators: a 304 stands for it.
        let cacheName = client.cache?.name(for: built)
        let revalidating = cacheName.flatMap { client.cache?.load($0, maxBodyBytes: template.bodyCap(client.configuration)) }
        if let revalidating { built.headers += revalidating.validators }
        let request = built
        enum Admission { case sent, cancelled, overBudget, wait(Int), waitForReset(Int), spent(WindowLimiter.Spent) }
        let admission = state.withLock { state -> Admission in
            guard !state.isDone, state.serial == serial else { return .cancelled } // while a credential was made
            // The list's budget is charged first, then the origin's word is taken (which counts
            // the send at once, so that no two requests take the server's last point).
            let reserved = state.holdsReservation
            if !reserved, !requests.reserve() { return .overBudget }
            let sentBefore: Int
            let permit = pace.take(route: WindowLimiter.route(of: url))
            switch permit {
            case .send(let before):
                sentBefore = before
            case .wait(let milliseconds), .waitForReset(let milliseconds):
                if !reserved { requests.unreserve() }
                givePlaceBack(&state)
                state.attempt -= 1 // not made
                if case .waitForReset = permit { return .waitForReset(milliseconds) }
                return .wait(milliseconds)
            case .spent(let spent):
                if !reserved { requests.unreserve() }
                return .spent(spent)
            }
            state.holdsReservation = false
            requests.startedReserved()
            state.isOutstanding = true
            state.sentAt = DispatchTime.now().uptimeNanoseconds
            state.inFlightAtSend = pace.inFlight
            state.sentBefore = sentBefore
            state.cacheName = cacheName
            state.revalidating = revalidating
            return .sent
        }
        switch admission {
        case .sent: break
        case .cancelled: return
        case .overBudget:
            return finish(.outOfBudget)
        case .wait(let milliseconds):
            return schedule(after: milliseconds)
        case .waitForReset(let milliseconds):
            client.hooks?.waitsForReset(method: template.method, url: client.redactor.redact(url),
                                        attempt: state.withLock { $0.attempt + 1 }, milliseconds: milliseconds)
            return schedule(after: milliseconds)
        case .spent(let spent):
            return finish(.failed(HTTPFailure.rateLimited(url, spent, maxWait: client.configuration.maxWaitMilliseconds,
                                                          redactor: client.redactor)))
        }
        let task = client.transport.send(request) { [self] result in
            handle(result, url: url, serial: serial)
        }
        // The answer may have come inside `send`: then the task is not kept (keeping it would
        // tie the fetch, its completion and the exchange into a cycle nobody breaks).
        let abandoned = state.withLock { state -> Bool in
            if state.isDone { return true }
            if state.serial == serial, state.isOutstanding { state.task = task }
            return false
        }
        if abandoned { task.cancel() }
        // Every transport gets the request timeout: one that keeps no time of its own has it
        // enforced here, so that a transport that never answers cannot hold the list forever.
        if request.timeoutMilliseconds > 0, !client.transport.enforcesTimeouts {
            let milliseconds = min(request.timeoutMilliseconds, Int(Int32.max)) + Self.deadlineGraceMilliseconds
            let deadline = Deadline(after: milliseconds) { [weak self] in
                self?.deadlinePassed(serial: serial, url: url, milliseconds: request.timeoutMilliseconds)
            }
            let keep = state.withLock { state -> Bool in
                guard state.serial == serial, state.isOutstanding else { return false }
                state.deadline = deadline
                return true
            }
            if !keep { deadline.cancel() } // answered meanwhile
        }
    }

    /// The attempt `serial` has had no answer within its timeout: abandon it and count a timeout.
    private func deadlinePassed(serial: Int, url: String, milliseconds: Int) {
        let task = state.withLock { state -> (any TransportTask)?? in
            guard !state.isDone, state.serial == serial, state.isOutstanding else { return nil }
            defer { state.task = nil }
            return .some(state.task)
        }
        guard let task else { return }
        task?.cancel() // the transport may still answer: `handle` ignores it
        handle(.failure(TransportError(.timeout, "no answer within \(milliseconds) ms")), url: url, serial: serial)
    }

    private func handle(_ answer: Result<HTTPResponse, TransportError>, url: String, serial: Int) {
        // Requests sent together reach the server in any order: what it saw is the most of the
        // requests in flight at the send and at the answer (this one still counted).
        let inFlightAtAnswer = pace.inFlight
        let current = state.withLock { state -> (attempt: Int, redirects: Int, template: FetchTemplate, sentAt: UInt64,
                                                 sentBefore: Int, inFlight: Int, refreshes: Bool,
                                                 cacheName: String?, revalidating: ResponseCache.Entry?)? in
            // An answer after the deadline, or for an attempt already replaced, is ignored.
            guard state.serial == serial, state.isOutstanding else { return nil }
            state.task = nil
            settleOutstanding(&state)
            // The place in the origin's window is given back once the answer is recorded there
            // (below): a request admitted in between would find every request answered and the
            // rate limit's count not yet heard, and take the limit for spent.
            if state.isDone { givePlaceBack(&state) }
            defer {
                state.cacheName = nil
                state.revalidating = nil
            }
            return state.isDone ? nil : (state.attempt, state.redirects, state.template, state.sentAt, state.sentBefore,
                                         state.inFlightAtSend,
                                         state.credentialGeneration > 0 && state.refusedGeneration == 0,
                                         state.cacheName, state.revalidating)
        }
        guard let (attempt, redirects, template, sentAt, sentBefore, inFlight, refreshes, cacheName, revalidating) = current
        else { return }
        // A 304 to the stored answer's validators is that answer (with the 304's headers): from
        // here on it is an answer like any other, its rate-limit fields read as a 200's are.
        var result = answer
        if let revalidating, case .success(let response) = answer, response.status == 304 {
            result = .success(revalidating.answer(to: response))
            requests.revalidated()
        }
        let retry = client.configuration.retry
        var policy = AnswerPolicy(client.configuration, redactor: client.redactor, template: template)
        policy.refreshesCredential = refreshes
        let decision = policy
            .decide(result, url: url, method: template.method, attempt: attempt, redirects: redirects) { attempt, retryAfter in
                retry.delayMilliseconds(afterAttempt: attempt, retryAfter: retryAfter)
            }
        if let hooks = client.hooks, hooks.hearsAttempts {
            let milliseconds = Int64((DispatchTime.now().uptimeNanoseconds &- sentAt) / 1_000_000)
            hooks.deliver(AttemptReport(method: template.method, url: url, redactor: client.redactor, attempt: attempt,
                                        milliseconds: milliseconds, result: answer, decision: decision))
        }
        // After the attempt's own record: a change of the window it causes is logged after it.
        pace.record(result, sentAt: sentAt, sentBefore: sentBefore, inFlight: max(inFlight, inFlightAtAnswer),
                    inFlightAtSend: inFlight, sizesWindow: sizesWindow, route: WindowLimiter.route(of: url))
        state.withLock { givePlaceBack(&$0) }
        switch decision {
        case .deliver(let response):
            if let cacheName, let cache = client.cache {
                if let revalidating, case .success(let raw) = answer, raw.status == 304 {
                    cache.refresh(revalidating, with: response)
                } else {
                    cache.store(response, as: cacheName, replaces: revalidating != nil)
                }
            }
            finish(.fetched(Fetched(url: url, response: response, attempts: attempt)))
        case .retry(let milliseconds):
            schedule(after: milliseconds)
        case .refreshCredential:
            // The same attempt again with a newer credential; it does not count as a retry.
            state.withLock { state in
                state.refusedGeneration = state.credentialGeneration
                state.attempt -= 1
            }
            self.attempt()
        case .redirect(let target, let method):
            state.withLock { state in
                state.redirects += 1
                // 307 and 308 repeat the request: its body parameters go with it.
                let repeated = method == state.template.method ? state.template.page : nil
                state.url = repeated?.carrying(from: state.url, to: target) ?? target
                state.attempt = 0
                if method != state.template.method {
                    // 303 (and 301/302 after a POST): the same resource fetched with GET, no body.
                    state.template.method = method
                    state.template.body = []
                    state.template.page = nil
                    state.template.headers.removeAll { ["content-type", "content-length"].contains($0.name.lowercased()) }
                }
            }
            self.attempt()
        case .fail(let error):
            finish(.failed(error))
        }
    }

    /// The attempt at the transport is over (answered or abandoned): count it once, and stop its
    /// deadline.
    private func settleOutstanding(_ state: inout State) {
        if state.isOutstanding { requests.finished() }
        state.isOutstanding = false
        state.deadline?.cancel()
        state.deadline = nil
    }

    /// Tries again after `milliseconds` (a backoff, or a pause the server asked for). The timer
    /// is the fetch's: abandoning the fetch stops it, so nothing wakes for a list that is over.
    private func schedule(after milliseconds: Int) {
        state.withLock { state in
            guard !state.isDone else { return }
            // Made under the lock: its handler, which takes the lock, finds it kept.
            state.pause = Deadline(after: milliseconds) { [self] in
                self.state.withLock { stopPause(&$0) } // a source is cancelled before it is let go
                attempt()
            }
        }
    }

    /// The fetch is over: its pause, if any, is stopped (the pause holds the fetch).
    private func stopPause(_ state: inout State) {
        state.pause?.cancel()
        state.pause = nil
    }


    /// The attempt is over, or was never sent: its place in the origin's window goes to the next.
    private func givePlaceBack(_ state: inout State) {
        guard state.holdsPlace else { return }
        state.holdsPlace = false
        pace.release()
    }

    /// Gives the budget back the first request it charged for this fetch, when it was never sent.
    private func giveBackReservation(_ state: inout State) {
        guard state.holdsReservation else { return }
        state.holdsReservation = false
        requests.unreserve()
    }

    private func finish(_ end: FetchEnd) {
        let first = state.withLock { state -> Bool in
            defer { state.isDone = true }
            stopPause(&state)
            givePlaceBack(&state)         // when it ended before its attempt went out
            giveBackReservation(&state)   // when it ended before its first request went out
            return !state.isDone
        }
        if first { completion(end) } // the run redacts its outcome (ListRun.end)
    }
}

/// An abandoned fetch's attempt: cancelling it cancels it at the transport, then gives its place
/// in the origin's window back (see `OriginPace.releaseAbandoned`).
private struct AbandonedAttempt: TransportTask {
    let task: (any TransportTask)?
    let pace: OriginPace?
    let sentAt: UInt64

    func cancel() {
        task?.cancel()
        guard let pace else { return }
        // Never sent (no task): nothing is at the server.
        if task == nil { pace.release() } else { pace.releaseAbandoned(sentAt: sentAt) }
    }
}
