import CoreMetrics
import Sheaf
import Synchronization

/// swift-metrics counters, timers and a window gauge fed from a client's log records and events.
/// Every label starts with `sheaf_`; dimensions are the origin (`scheme://host:port`, from the
/// redacted URL), the method and the status class (`2xx`... or `error` when no status came).
///
/// | label | kind | dimensions | what |
/// |---|---|---|---|
/// | `sheaf_requests_total` | counter | origin, method, status_class | attempts at the transport |
/// | `sheaf_request_duration` | timer | origin, method, status_class | how long each attempt took |
/// | `sheaf_retries_total` | counter | origin, method, status_class | attempts to be tried again |
/// | `sheaf_pages_total` | counter | origin | 2xx answers to GET: on a client used for lists, its pages |
/// | `sheaf_failures_total` | counter | origin, method, status_class | attempts answered ≥ 400 or with no status |
/// | `sheaf_events_total` | counter | origin, event (+ transport_error) | events: `authentication_refused`, `offline`, `server_unavailable`, `rate_limited`, `retrying` |
/// | `sheaf_lists_total` | counter | origin | lists planned (one per list whose page one answered) |
/// | `sheaf_window` | gauge | — | the window of the client's last list: when planned, and at each change |
/// | `sheaf_window_changes_total` | counter | direction (`grow`, `shrink`) | window changes |
///
/// `dimensions` given at `init` (a client's name, say) are added to every metric.
///
/// ```swift
/// let hooks = Hooks(metrics: MetricsHook())   // MetricsSystem's factory
/// let client = try SheafClient(baseURL: base, transport: transport, hooks: hooks)
/// ```
public final class MetricsHook: Sendable {
    private let factory: any MetricsFactory
    private let dimensions: [(String, String)]
    private let counters = Mutex<[String: Counter]>([:])
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])
    private let gauges = Mutex<[String: Gauge]>([:])

    /// - Parameters:
    ///   - dimensions: added to every metric's own.
    ///   - factory: where the metrics are made; by default the one `MetricsSystem` was
    ///     bootstrapped with.
    public init(dimensions: [(String, String)] = [], factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        self.dimensions = dimensions
    }

    /// The level to ask records at: `.debug`, so that the window's growth is seen too.
    public var recordLevel: LogRecord.Level { .debug }

    /// Counts one record.
    public func record(_ record: LogRecord) {
        switch record.kind {
        case .request:
            let origin = Self.origin(record.url)
            let method = record.method ?? "GET"
            let statusClass = Self.statusClass(record.status)
            let dims = [("origin", origin), ("method", method), ("status_class", statusClass)]
            counter("sheaf_requests_total", dims).increment()
            if record.durationMilliseconds >= 0 {
                timer("sheaf_request_duration", dims).recordMilliseconds(record.durationMilliseconds)
            }
            if record.status == 0 || record.status >= 400 {
                counter("sheaf_failures_total", dims).increment()
            }
            if (200...299).contains(record.status) && method == "GET" {
                counter("sheaf_pages_total", [("origin", origin)]).increment()
            }
        case .retry:
            counter("sheaf_retries_total", [("origin", Self.origin(record.url)), ("method", record.method ?? "GET"),
                                            ("status_class", Self.statusClass(record.status))]).increment()
        case .plan:
            counter("sheaf_lists_total", [("origin", Self.origin(record.url))]).increment()
            if let window = Self.plannedWindow(record.message) {
                gauge("sheaf_window", []).record(window)
            }
        case .window:
            if let (from, to) = Self.windowChange(record.message) {
                gauge("sheaf_window", []).record(to)
                counter("sheaf_window_changes_total", [("direction", to > from ? "grow" : "shrink")]).increment()
            }
        case .redirect:
            break
        }
    }

    /// Counts one event.
    public func record(_ event: ClientEvent) {
        var dims = [("origin", Self.origin(event.url)), ("event", event.kind.name)]
        if let error = event.transportError { dims.append(("transport_error", Self.name(error))) }
        counter("sheaf_events_total", dims).increment()
    }

    // MARK: Reading records

    /// `scheme://host[:port]` of a URL; `unknown` when there is none.
    static func origin(_ url: String?) -> String {
        guard let url, let schemeEnd = url.firstRange(of: "://") else { return "unknown" }
        let rest = url[schemeEnd.upperBound...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return String(url[..<schemeEnd.upperBound]).lowercased() + authority.lowercased()
    }

    static func statusClass(_ status: Int) -> String {
        (100...599).contains(status) ? "\(status / 100)xx" : "error"
    }

    static func name(_ kind: TransportError.Kind) -> String {
        switch kind {
        case .timeout: "timeout"
        case .connect: "connect"
        case .dns: "dns"
        case .tls: "tls"
        case .tooLarge: "too_large"
        default: "other"
        }
    }

    /// The window a plan record states. LogRecord carries it only in its text, which reads
    /// "... a window of N adapting up to M ...", "... N in flight ..." or "... one at a time ...".
    static func plannedWindow(_ message: String) -> Int? {
        if let range = message.firstRange(of: "a window of ") {
            return Int(message[range.upperBound...].prefix { $0.isNumber })
        }
        if let range = message.firstRange(of: " in flight") {
            let before = message[..<range.lowerBound]
            return Int(before.reversed().prefix { $0.isNumber }.reversed().map(String.init).joined())
        }
        if message.contains("one at a time") { return 1 }
        return nil
    }

    /// The change a window record states: "window A → B: why".
    static func windowChange(_ message: String) -> (Int, Int)? {
        guard message.hasPrefix("window "), let arrow = message.firstRange(of: " → ") else { return nil }
        let from = Int(message[message.index(message.startIndex, offsetBy: 7)..<arrow.lowerBound])
        let to = Int(message[arrow.upperBound...].prefix { $0.isNumber })
        guard let from, let to else { return nil }
        return (from, to)
    }

    // MARK: Metrics, made once per label and dimensions

    private func key(_ label: String, _ dims: [(String, String)]) -> String {
        ([label] + dims.map { "\($0.0)=\($0.1)" }).joined(separator: "\u{1F}")
    }

    private func counter(_ label: String, _ dims: [(String, String)]) -> Counter {
        made(counters, label, dims) { Counter(label: label, dimensions: $0, factory: factory) }
    }

    private func timer(_ label: String, _ dims: [(String, String)]) -> CoreMetrics.Timer {
        made(timers, label, dims) { CoreMetrics.Timer(label: label, dimensions: $0, factory: factory) }
    }

    private func gauge(_ label: String, _ dims: [(String, String)]) -> Gauge {
        made(gauges, label, dims) { Gauge(label: label, dimensions: $0, factory: factory) }
    }

    /// The metric of `label` with `dims` and the hook's own dimensions: made once, then reused.
    private func made<Metric>(_ cache: borrowing Mutex<[String: Metric]>, _ label: String, _ dims: [(String, String)],
                              _ make: ([(String, String)]) -> Metric) -> Metric {
        let dims = dims + dimensions, key = key(label, dims)
        return cache.withLock { made in
            if let metric = made[key] { return metric }
            let metric = make(dims)
            made[key] = metric
            return metric
        }
    }
}

extension Hooks {
    /// Hooks that count every record and event into `metrics`. The caller closes them, as any
    /// `Hooks`; `flush()` hands over what is queued.
    public convenience init(metrics: MetricsHook) {
        let onLog: @Sendable (LogRecord) -> Void = { record in metrics.record(record) }
        let onEvent: @Sendable (ClientEvent) -> Void = { event in metrics.record(event) }
        self.init(logLevel: metrics.recordLevel, onLog: onLog, onEvent: onEvent)
    }
}
