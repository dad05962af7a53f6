import CSheafHeader
import Sheaf

/// The embedder's log hook: a C function, its level and its user data.
struct CLogHook: Sendable {
    let function: sheaf_log_fn
    let level: LogRecord.Level
    let userData: CUserData

    /// Calls the hook with `record` as C memory borrowed for the call.
    func call(_ record: LogRecord) {
        record.message.withCString { message in
            withOptionalCString(record.method) { method in
                withOptionalCString(record.url) { url in
                    var c = sheaf_log_record(
                        version: UInt32(SHEAF_LOG_RECORD_VERSION), level: sheaf_log_level(UInt32(record.level.rawValue)),
                        kind: record.kind.cKind, message: message, method: method, url: url,
                        http_status: Int32(clamping: record.status), attempt: Int32(clamping: record.attempt),
                        duration_ms: record.durationMilliseconds, bytes: record.bytes, delay_ms: record.delayMilliseconds)
                    CallbackContext.run { function(&c, userData.pointer) }
                }
            }
        }
    }
}

/// The embedder's event hook.
struct CEventHook: Sendable {
    let function: sheaf_event_fn
    let userData: CUserData

    func call(_ event: ClientEvent) {
        event.message.withCString { message in
            event.method.withCString { method in
                event.url.withCString { url in
                    var c = sheaf_event(
                        version: UInt32(SHEAF_EVENT_VERSION), kind: sheaf_event_kind(UInt32(event.kind.rawValue)),
                        message: message, method: method, url: url, http_status: Int32(clamping: event.status),
                        transport_error: event.transportError.map { Int32($0.cError.rawValue) } ?? -1,
                        attempt: Int32(clamping: event.attempt), wait_ms: event.waitMilliseconds)
                    CallbackContext.run { function(&c, userData.pointer) }
                }
            }
        }
    }
}

private func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

extension LogRecord.Kind {
    var cKind: sheaf_log_kind {
        switch self {
        case .request: SHEAF_LOG_REQUEST
        case .retry: SHEAF_LOG_RETRY
        case .redirect: SHEAF_LOG_REDIRECT
        case .plan: SHEAF_LOG_PLAN
        case .window: SHEAF_LOG_WINDOW
        }
    }
}

extension TransportError.Kind {
    var cError: sheaf_transport_error {
        switch self {
        case .timeout: SHEAF_TRANSPORT_TIMEOUT
        case .connect: SHEAF_TRANSPORT_CONNECT
        case .dns: SHEAF_TRANSPORT_DNS
        case .tls: SHEAF_TRANSPORT_TLS
        case .tooLarge: SHEAF_TRANSPORT_TOO_LARGE
        default: SHEAF_TRANSPORT_OTHER
        }
    }
}

/// The hooks of a client handle: the core `Hooks` made of them when either is set, made again
/// after a change; every one ever made is closed when the client is freed.
struct HookSettings {
    var log: CLogHook? { didSet { current = nil } }
    var event: CEventHook? { didSet { current = nil } }
    private var current: Hooks?
    /// Every one made, to close when the client is freed.
    private(set) var all: [Hooks] = []

    /// The hooks for a new core client; nil when nobody listens (so nothing is ever formatted).
    mutating func hooks() -> Hooks? {
        guard log != nil || event != nil else { return nil }
        if let current { return current }
        var onLog: (@Sendable (LogRecord) -> Void)?
        if let log { onLog = { log.call($0) } }
        var onEvent: (@Sendable (ClientEvent) -> Void)?
        if let event { onEvent = { event.call($0) } }
        let hooks = Hooks(logLevel: log?.level ?? .error, onLog: onLog, onEvent: onEvent)
        current = hooks
        all.append(hooks)
        return hooks
    }
}
