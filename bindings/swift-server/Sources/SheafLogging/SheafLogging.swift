import Logging
import Sheaf

/// Sheaf's log records and events as swift-log entries: a record's level mapped to the logger's,
/// its text as the message and every field it carries as `Logger.Metadata` under `sheaf.` keys.
/// Records and events are redacted by Sheaf before they get here: no credential, cookie or secret
/// query value is in a message, a URL or the metadata.
///
/// ```swift
/// let hooks = Hooks(logger: Logger(label: "upstream"))
/// let client = try SheafClient(baseURL: base, transport: transport, hooks: hooks)
/// ```
///
/// To feed one `Hooks` to several listeners (this and `SheafMetrics`'s `MetricsHook`, say), call
/// `log(_:)` from `Hooks(logLevel:onLog:onEvent:)`'s closures.
public struct LoggerHook: Sendable {
    /// Where the entries go. Its `logLevel` decides the most detailed records asked of Sheaf.
    public let logger: Logger
    /// Whether events (authentication refused, offline, rate limited...) are logged too.
    public let logsEvents: Bool

    public init(logger: Logger, logsEvents: Bool = true) {
        self.logger = logger
        self.logsEvents = logsEvents
    }

    /// The most detailed Sheaf level the logger lets through: `.debug` for `.trace` and `.debug`,
    /// `.info` for `.info` and `.notice`, `.warning`, and `.error` for `.error` and `.critical`.
    public var recordLevel: LogRecord.Level {
        switch logger.logLevel {
        case .trace, .debug: .debug
        case .info, .notice: .info
        case .warning: .warning
        case .error, .critical: .error
        }
    }

    /// The swift-log level of a Sheaf level.
    public static func level(_ level: LogRecord.Level) -> Logger.Level {
        switch level {
        case .error: .error
        case .warning: .warning
        case .info: .info
        case .debug: .debug
        }
    }

    /// The swift-log level of an event: `.warning` for the last word on a request that failed
    /// (refused credential, offline, unavailable, rate limited with no attempt left), `.notice`
    /// for a rate limit that is waited out, `.debug` for a retry (its record says it at `.info`).
    public static func level(_ event: ClientEvent) -> Logger.Level {
        switch event.kind {
        case .retrying: .debug
        case .rateLimited: event.waitMilliseconds < 0 ? .warning : .notice
        default: .warning
        }
    }

    /// A record's fields as metadata; those the record does not carry (-1, 0 or nil) are left out.
    /// Keys: `sheaf.kind`, `sheaf.method`, `sheaf.url`, `sheaf.status`, `sheaf.attempt`,
    /// `sheaf.duration_ms`, `sheaf.bytes`, `sheaf.delay_ms`.
    public static func metadata(_ record: LogRecord) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["sheaf.kind": .string(record.kind.rawValue)]
        if let method = record.method { metadata["sheaf.method"] = .string(method) }
        if let url = record.url { metadata["sheaf.url"] = .string(url) }
        if record.status > 0 { metadata["sheaf.status"] = .string("\(record.status)") }
        if record.attempt > 0 { metadata["sheaf.attempt"] = .string("\(record.attempt)") }
        if record.durationMilliseconds >= 0 { metadata["sheaf.duration_ms"] = .string("\(record.durationMilliseconds)") }
        if record.bytes >= 0 { metadata["sheaf.bytes"] = .string("\(record.bytes)") }
        if record.delayMilliseconds >= 0 { metadata["sheaf.delay_ms"] = .string("\(record.delayMilliseconds)") }
        return metadata
    }

    /// An event's fields as metadata. Keys: `sheaf.event` (`authentication_refused`, `offline`,
    /// `server_unavailable`, `rate_limited`, `retrying`), `sheaf.method`, `sheaf.url`,
    /// `sheaf.status` (when there was one), `sheaf.transport_error` (when there was one),
    /// `sheaf.attempt`, `sheaf.wait_ms` (when a wait was chosen).
    public static func metadata(_ event: ClientEvent) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "sheaf.event": .string(event.kind.name),
            "sheaf.method": .string(event.method),
            "sheaf.url": .string(event.url),
            "sheaf.attempt": .string("\(event.attempt)"),
        ]
        if event.status > 0 { metadata["sheaf.status"] = .string("\(event.status)") }
        if let error = event.transportError { metadata["sheaf.transport_error"] = .string(error.description) }
        if event.waitMilliseconds >= 0 { metadata["sheaf.wait_ms"] = .string("\(event.waitMilliseconds)") }
        return metadata
    }

    /// Logs one record.
    public func log(_ record: LogRecord) {
        logger.log(level: Self.level(record.level), "\(record.message)", metadata: Self.metadata(record),
                   source: "Sheaf")
    }

    /// Logs one event (unless `logsEvents` is false).
    public func log(_ event: ClientEvent) {
        guard logsEvents else { return }
        logger.log(level: Self.level(event), "\(event.message)", metadata: Self.metadata(event), source: "Sheaf")
    }
}

extension Hooks {
    /// Hooks that log every record (up to the logger's level) and event to `logger`. The caller
    /// closes them, as any `Hooks`; `flush()` hands over what is queued.
    public convenience init(logger: Logger, logsEvents: Bool = true) {
        self.init(hook: LoggerHook(logger: logger, logsEvents: logsEvents))
    }

    /// Hooks that hand every record and event to `hook`.
    public convenience init(hook: LoggerHook) {
        let onLog: @Sendable (LogRecord) -> Void = { record in hook.log(record) }
        var onEvent: (@Sendable (ClientEvent) -> Void)?
        if hook.logsEvents {
            onEvent = { (event: ClientEvent) in hook.log(event) }
        }
        self.init(logLevel: hook.recordLevel, onLog: onLog, onEvent: onEvent)
    }
}
