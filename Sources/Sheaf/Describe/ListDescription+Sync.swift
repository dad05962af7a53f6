/// Incremental sync: a run that stops at what an earlier run has seen (`until`), or asks the
/// server only for what is newer (`since`), and reports where it got to (`SyncState`) for the
/// next run to start from.

/// A bound on a newest-first list: the list ends, as a success (`.complete`, with `ListRun.reachedBound`), at the first
/// item whose field is at or below `value`; that item and every one after it are not delivered.
/// An item without the field (or whose field is null, a boolean, an object or an array) is not at
/// the bound: the list goes on past it.
///
/// With `seen` (the identities the last run delivered at `value`, `SyncState.seen`), an item at
/// `value` ends the list only below it: one at it is left out when it was seen and delivered when
/// it was not (an item added in the same second after the last run read the list), so a list
/// whose field ties (seconds) is delivered exactly once across runs.
public struct SyncBound: Sendable, Equatable {
    /// Where the compared field is inside each item.
    public var pointer: JSONPointer
    /// The value the last run got to (`SyncState.value`).
    public var value: SyncValue
    /// The identities delivered at `value` (`SyncState.seen`); nil: every item at `value` ends the list.
    public var seen: [SyncValue]?

    public init(pointer: JSONPointer, value: SyncValue, seen: [SyncValue]? = nil) {
        self.pointer = pointer
        self.value = value
        self.seen = seen
    }
}

/// A server-side filter: the first page request carries `parameter=value` (when a value is
/// stored), and the run records the greatest value of the field among the items it delivered.
///
/// With `seen` (the identities the last run delivered at `value`), the filter is taken to include
/// `value` (`created[gte]`, GitHub's `since`): an item at `value` is delivered unless it was seen,
/// and one below it (a server that ignores the filter) is left out, so that what the server sends
/// again is delivered once.
public struct SinceFilter: Sendable, Equatable {
    /// The query parameter the server filters by.
    public var parameter: String
    /// Where the recorded field is inside each item.
    public var pointer: JSONPointer
    /// The value the last run got to; nil on a first run (no filter is sent).
    public var value: SyncValue?
    /// The identities delivered at `value` (`SyncState.seen`); nil: whatever the server sends is delivered.
    public var seen: [SyncValue]?

    public init(parameter: String, pointer: JSONPointer, value: SyncValue? = nil, seen: [SyncValue]? = nil) {
        self.parameter = parameter
        self.pointer = pointer
        self.value = value
        self.seen = seen
    }
}

/// What a run with a bound or a since filter got to: the greatest value of the field among the
/// items it delivered, or the value it started from when no new item arrived (nil when there was
/// none either). The next run takes it as its bound or since value.
public struct SyncState: Sendable, Equatable {
    /// The field, inside each item.
    public var pointer: JSONPointer
    /// The greatest value delivered, or the one the run started from.
    public var value: SyncValue?
    /// The identities of the items delivered at `value` (the run's and, at the value it started
    /// from, the earlier runs'), when the list has an identity signal; nil without one.
    public var seen: [SyncValue]?

    public init(pointer: JSONPointer, value: SyncValue?, seen: [SyncValue]? = nil) {
        self.pointer = pointer
        self.value = value
        self.seen = seen
    }
}

/// The greatest sync value among the items delivered, and the identities of those at it (nil
/// when the items have no identity signal).
struct SyncMark: Sendable, Equatable {
    var value: SyncValue
    var seen: [IdentityKey]?

    /// Takes an item delivered with `value` and `identity` into the mark.
    mutating func take(_ value: SyncValue, _ identity: IdentityKey?) {
        if value > self.value {
            self = SyncMark(value: value, seen: seen == nil ? nil : [])
        }
        if value == self.value, seen != nil, let identity { seen!.append(identity) }
    }
}

/// What the items of a run that syncs are held against: those at or below `value` end the list
/// (`stops`, a bound) or are left out (a since filter with `seen`); with `seen`, an item at
/// `value` is delivered unless it is in it.
struct SyncFloor: Sendable {
    var value: SyncValue
    var seen: Set<IdentityKey>?
    /// Whether an item below `value` ends the list (a bound) or is only left out (a filter).
    var stops: Bool

    enum Verdict { case deliver, skip, stop }

    func verdict(_ item: SyncValue, _ identity: IdentityKey?) -> Verdict {
        if item > value { return .deliver }
        guard let seen else { return stops ? .stop : .deliver }
        if item < value { return stops ? .stop : .skip }
        if let identity, seen.contains(identity) { return .skip }
        return .deliver
    }
}

/// The upper end of a poll's range (`ListDescription.through`): items above `value`, or at it and
/// not in `seen`, came after the range and are left out.
struct SyncCeiling: Sendable {
    var value: SyncValue
    var seen: Set<IdentityKey>?

    func holds(_ item: SyncValue, _ identity: IdentityKey?) -> Bool {
        if item < value { return true }
        if item > value { return false }
        guard let seen else { return true }
        return identity.map { seen.contains($0) } ?? true
    }
}

extension IdentityKey {
    /// The identity of a sync value given as seen: a string's identity is its text, a number's its digits.
    init(_ value: SyncValue) {
        switch value {
        case .string(let text): self.init(bytes: [UInt8(ascii: "s")] + Array(text.utf8))
        case .number(let text): self.init(bytes: Array(text.utf8))
        }
    }

    /// The identity as a sync value to store: nil for one neither a string of valid UTF-8 nor a
    /// number (such an item is delivered again by the next run, never lost).
    var syncValue: SyncValue? {
        guard let first = bytes.first else { return nil }
        if first == UInt8(ascii: "s") {
            guard let text = String(validating: bytes.dropFirst(), as: UTF8.self) else { return nil }
            return .string(text)
        }
        guard first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
              let text = String(validating: bytes, as: UTF8.self), DecimalText(text) != nil else { return nil }
        return .number(text)
    }
}

extension ListDescription {
    /// The field a sync compares and records, when the description syncs.
    var syncField: JSONPointer? { until?.pointer ?? since?.pointer }

    /// The value the run starts from: the greater of the bound and the since value, with the
    /// identities seen at it (nil when neither names them).
    var storedSync: (value: SyncValue, seen: [SyncValue]?)? {
        let stored: [(value: SyncValue, seen: [SyncValue]?)] = [
            until.map { ($0.value, $0.seen) },
            since.flatMap { since in since.value.map { ($0, since.seen) } },
        ].compactMap { $0 }
        guard let greatest = stored.map(\.value).max() else { return nil }
        let at = stored.filter { $0.value == greatest }
        let seen = at.compactMap(\.seen)
        return (greatest, seen.isEmpty ? nil : Self.union(seen))
    }

    /// What the run's items are held against (`SyncFloor`): the bound, or a since filter that names what it saw.
    var syncFloor: SyncFloor? {
        if let until {
            return SyncFloor(value: until.value, seen: until.seen.map { Set($0.map(IdentityKey.init)) }, stops: true)
        }
        if let since, let value = since.value, let seen = since.seen {
            return SyncFloor(value: value, seen: Set(seen.map(IdentityKey.init)), stops: false)
        }
        return nil
    }

    /// The upper end of the run's items (`through`), when it has one.
    var syncCeiling: SyncCeiling? {
        guard let through, let value = through.value else { return nil }
        return SyncCeiling(value: value, seen: through.seen.map { Set($0.map(IdentityKey.init)) })
    }

    /// The state a run reports when `greatest` marks what it delivered. The identities seen are
    /// kept only where they are known whole: at a value the run started from without them, they
    /// are left out (the next run then ends at that value, as before they were kept).
    func syncState(greatest: SyncMark?) -> SyncState? {
        guard let pointer = syncField else { return nil }
        let stored = storedSync
        let records = source(of: .identity) != .none
        let delivered = greatest.map { (value: $0.value, seen: records ? $0.seen.map { $0.compactMap(\.syncValue) } : nil) }
        guard let delivered, stored.map({ delivered.value >= $0.value }) ?? true else {
            return SyncState(pointer: pointer, value: stored?.value, seen: records ? stored?.seen : nil)
        }
        guard let stored, delivered.value == stored.value else {
            return SyncState(pointer: pointer, value: delivered.value, seen: delivered.seen)
        }
        let seen = stored.seen.flatMap { old in delivered.seen.map { Self.union([old, $0]) } }
        return SyncState(pointer: pointer, value: delivered.value, seen: seen)
    }

    /// The distinct identities of `lists`, in the order first named.
    private static func union(_ lists: [[SyncValue]]) -> [SyncValue] {
        var keys = Set<IdentityKey>()
        return lists.joined().filter { keys.insert(IdentityKey($0)).inserted }
    }

    /// The until and since members of the description's JSON form (empty when it does not sync).
    func syncJSONMembers() -> String {
        var out = ""
        if let until {
            out += ",\"until\":{\"pointer\":\(JSONText.quote(until.pointer.description)),\"value\":\(until.value)\(Self.seenMember(until.seen))}"
        }
        if let since {
            out += ",\"since\":{\"param\":\(JSONText.quote(since.parameter)),\"pointer\":\(JSONText.quote(since.pointer.description))"
            out += ",\"value\":\(since.value?.description ?? "null")\(Self.seenMember(since.seen))}"
        }
        return out
    }

    /// `,"seen":[...]`, or nothing for nil.
    static func seenMember(_ seen: [SyncValue]?) -> String {
        seen.map { ",\"seen\":[" + $0.map(\.description).joined(separator: ",") + "]" } ?? ""
    }
}

extension SyncState {
    /// The state as the description's output-only "sync_state" member prints it, with the list it
    /// is of (the redacted URL of its first page, before any since parameter): the key a caller
    /// stores it under.
    func json(list: String?) -> String {
        "{\"list\":\(JSONText.quote(list)),\"field\":\(JSONText.quote(pointer.description)),\"value\":\(value?.description ?? "null")"
            + ListDescription.seenMember(seen) + "}"
    }
}

extension DescriptionReading {
    /// The "until" member: {"pointer", "value"}, both required; null: no bound.
    static func readUntil(_ value: JSONValue) throws(DescriptionRefusal) -> SyncBound? {
        if value == .null { return nil }
        let fields = try members(value, at: "/until", allowed: ["pointer", "value", "seen"])
        let pointer = try syncPointer(fields["pointer"], at: "/until/pointer")
        guard let given = fields["value"], let bound = SyncValue(given) else {
            throw DescriptionRefusal("/until/value", "the bound must be a JSON number or a string (\(fields["value"]?.kindName ?? "it is missing"))")
        }
        return SyncBound(pointer: pointer, value: bound, seen: try readSeen(fields["seen"], at: "/until/seen"))
    }

    /// The "since" member: {"param", "pointer", "value"}; value may be null or left out (a first
    /// run); null: no filter.
    static func readSince(_ value: JSONValue) throws(DescriptionRefusal) -> SinceFilter? {
        if value == .null { return nil }
        let fields = try members(value, at: "/since", allowed: ["param", "pointer", "value", "seen"])
        guard case .string(let parameter)? = fields["param"], !parameter.isEmpty else {
            throw DescriptionRefusal("/since/param", "must be the name of the query parameter the server filters by (a non-empty string)")
        }
        let pointer = try syncPointer(fields["pointer"], at: "/since/pointer")
        var stored: SyncValue?
        if let given = fields["value"], given != .null {
            guard let value = SyncValue(given) else {
                throw DescriptionRefusal("/since/value", "must be a JSON number, a string or null, not \(given.kindName)")
            }
            stored = value
        }
        let seen = try readSeen(fields["seen"], at: "/since/seen")
        if seen != nil, stored == nil {
            throw DescriptionRefusal("/since/seen", "names the items delivered at /since/value: give the value with it")
        }
        return SinceFilter(parameter: parameter, pointer: pointer, value: stored, seen: seen)
    }

    /// A "seen" member: null or left out, or an array of the identities (strings or numbers).
    static func readSeen(_ value: JSONValue?, at field: String) throws(DescriptionRefusal) -> [SyncValue]? {
        guard let value, value != .null else { return nil }
        guard case .array(let elements) = value else {
            throw DescriptionRefusal(field, "must be an array of the identities delivered at the value (strings or numbers), not \(value.kindName)")
        }
        var seen: [SyncValue] = []
        for (index, element) in elements.enumerated() {
            guard let identity = SyncValue(element) else {
                throw DescriptionRefusal("\(field)/\(index)", "an identity is a string or a number, not \(element.kindName)")
            }
            seen.append(identity)
        }
        return seen
    }

    /// The output-only "sync_state" member: accepted in the shape the library prints, and ignored
    /// (a run's state is what it delivers, never what it is told).
    static func checkSyncState(_ value: JSONValue) throws(DescriptionRefusal) {
        if value == .null { return }
        let fields = try members(value, at: "/sync_state", allowed: ["list", "field", "value", "seen"])
        let valueIsPrinted = fields["value"].map { $0 == .null || SyncValue($0) != nil } ?? true
        guard case .string? = fields["field"], valueIsPrinted else {
            throw DescriptionRefusal("/sync_state", "is printed, not read: {\"list\", \"field\", \"value\", \"seen\"} as a run prints it, or left out")
        }
    }

    /// The sync members must name one field: the state has one value.
    static func checkSyncFields(_ description: ListDescription) throws(DescriptionRefusal) {
        if let until = description.until, let since = description.since, until.pointer != since.pointer {
            throw DescriptionRefusal("/since/pointer", "must be the field of /until/pointer (\(JSONText.quote(until.pointer.description))): "
                                     + "a sync records one field")
        }
    }

    private static func syncPointer(_ value: JSONValue?, at field: String) throws(DescriptionRefusal) -> JSONPointer {
        guard case .string(let text)? = value, let pointer = JSONPointer(text), !pointer.tokens.isEmpty else {
            throw DescriptionRefusal(field, "must be a JSON pointer to a field inside each item (\"/id\", \"/updated_at\")")
        }
        return pointer
    }
}
