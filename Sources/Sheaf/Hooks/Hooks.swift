import Dispatch

/// One line of a client's log: what was requested and answered, retried or decided. Its text and
/// URL are redacted: no credential, cookie or secret query value ever appears in a record.
public struct LogRecord: Sendable, Equatable {
    /// How much a record matters; a client logs only up to the level its hook asks for.
    public enum Level: Int, Sendable, Comparable {
        case error = 1, warning = 2, info = 3, debug = 4
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    /// What the record is about.
    public enum Kind: String, Sendable {
        /// One attempt at the transport and its answer (or failure).
        case request
        /// A transient failure to be tried again after `delayMilliseconds`.
        case retry
        /// A redirect followed.
        case redirect
        /// How a list is fetched: its resolved description, the plan and the window.
        case plan
        /// A list's window changed: it grew while latency held, or shrank on a refusal or a
        /// slowing server.
        case window
    }

    public var level: Level
    public var kind: Kind
    /// The whole record as one line of English.
    public var message: String
    public var method: String?
    public var url: String?
    /// The answer's status; 0 when there was none.
    public var status = 0
    /// The attempt at this URL, from 1; 0 when not about an attempt.
    public var attempt = 0
    /// How long the attempt took; -1 when not about an attempt.
    public var durationMilliseconds: Int64 = -1
    /// The answer's body bytes; -1 when not about an answer.
    public var bytes: Int64 = -1
    /// The wait before a retry; -1 otherwise.
    public var delayMilliseconds: Int64 = -1
}

/// Something a caller may want to act on (open a login dialog, show "offline", back off).
public struct ClientEvent: Sendable, Equatable {
    public enum Kind: Int, Sendable {
        /// The server refused the credential: a final 401 or 403.
        case authenticationRefused = 1
        /// The server could not be reached: name resolution or connection failures on every attempt.
        case offline = 2
        /// The server answered 5xx, or nothing in time, on the last attempt.
        case serverUnavailable = 3
        /// A 429 (or a 503 with Retry-After): the request waits `waitMilliseconds` (-1: no attempt left).
        case rateLimited = 4
        /// A transient failure is tried again after `waitMilliseconds`.
        case retrying = 5

        /// The kind's name in logs and metrics: "authentication_refused", "offline",
        /// "server_unavailable", "rate_limited" or "retrying".
        public var name: String {
            switch self {
            case .authenticationRefused: "authentication_refused"
            case .offline: "offline"
            case .serverUnavailable: "server_unavailable"
            case .rateLimited: "rate_limited"
            case .retrying: "retrying"
            }
        }
    }

    public var kind: Kind
    public var method: String
    /// Redacted.
    public var url: String
    /// The answer's status; 0 for a failure below HTTP.
    public var status: Int
    /// The failure below HTTP, when there was one.
    public var transportError: TransportError.Kind?
    /// The attempt this event is about, from 1.
    public var attempt: Int
    /// The wait chosen before the next attempt; -1 when there is none.
    public var waitMilliseconds: Int64
    /// One line of English; redacted.
    public var message: String
}

/// A client's log and event hooks. Records and events are made only when someone listens (a
/// record above the hook's level is never even formatted), and handed over on one serial queue
/// per client: never two at once, in the order they happened, and never after `close()` (which
/// drops those still queued).
public final class Hooks: Sendable {
    private struct State {
        var closed = false
    }

    private let logLevel: LogRecord.Level?
    let onLog: (@Sendable (LogRecord) -> Void)?
    let onEvent: (@Sendable (ClientEvent) -> Void)?
    private let queue = DispatchQueue(label: "sheaf.hooks")
    private let state = Locked(State())

    /// - Parameters:
    ///   - logLevel: the most detailed level `onLog` is given.
    ///   - onLog: called once per record.
    ///   - onEvent: called once per event.
    public init(logLevel: LogRecord.Level = .info, onLog: (@Sendable (LogRecord) -> Void)? = nil,
                onEvent: (@Sendable (ClientEvent) -> Void)? = nil) {
        self.logLevel = onLog == nil ? nil : logLevel
        self.onLog = onLog
        self.onEvent = onEvent
    }

    /// Whether a record of `level` would be handed to anyone.
    func logs(_ level: LogRecord.Level) -> Bool {
        guard let logLevel else { return false }
        return level <= logLevel
    }

    /// Whether anyone listens to records at `.info` or to events (an attempt's report is made
    /// only then).
    var hearsAttempts: Bool { logs(.info) || onEvent != nil }

    /// Hands over the record `make` builds, if anyone listens at its level.
    func log(_ level: LogRecord.Level, _ make: () -> LogRecord) {
        guard logs(level), let onLog else { return }
        var made = make()
        made.level = level
        let record = made
        deliver { onLog(record) }
    }

    /// Whether `close` was called: a call that hands over several records and events stops
    /// there (a hook may close its own client).
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `body` on the hooks' queue, unless the hooks were closed.
    func deliver(_ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            guard !state.withLock({ $0.closed }) else { return }
            CallbackContext.serving(self, body)
        }
    }

    /// Ends the hand-over: waits for the hook call running now (if any), drops the records and
    /// events still queued, and hands over nothing after this returns (called from a hook
    /// itself, nothing after that hook returns). Closing never waits for a queue of slow hook
    /// calls; `flush()` first to hand everything over. Idempotent.
    public func close() {
        // Every queued call checks the flag first, so from here on each is a no-op...
        state.withLock { $0.closed = true }
        // ...and this waits only for the call already past its check.
        if !isOwnQueue { queue.sync {} }
    }

    /// Waits until every record and event made so far has been handed over (at once when called
    /// from a hook of this client, which cannot wait for itself).
    public func flush() {
        if !isOwnQueue { queue.sync {} }
    }

    private var isOwnQueue: Bool { CallbackContext.isServing(self) }
}
