/// Incremental sync: a run that stops at what an earlier run has seen (`until`), or asks the
/// server only for what is newer (`since`), and reports where it got to (`SyncState`) for the
/// next run to start from.

/// A bound on a newest-first list: the list ends, as a success (`.complete`, with `ListRun.reachedBound`), at the first
/// item whose field is at or below `value`; that item and every one after it are not delivered.
/// An item without the field (or whose field is null, a boolean, an object or an array) is not at
/// the bound: the list goes on past it.
public struct SyncBound: Sendable, Equatable {
    /// Where the compared field is inside each item.
    public var pointer: JSONPointer
    /// The value the last run got to (`SyncState.value`).
    public var value: SyncValue

    public init(pointer: JSONPointer, value: SyncValue) {
        self.pointer = pointer
        self.value = value
    }
}

/// A server-side filter: the first page request carries `parameter=value` (when a value is
/// stored), and the run records the greatest value of the field among the items it delivered.
public struct SinceFilter: Sendable, Equatable {
    /// The query parameter the server filters by.
    public var parameter: String
    /// Where the recorded field is inside each item.
    public var pointer: JSONPointer
    /// The value the last run got to; nil on a first run (no filter is sent).
    public var value: SyncValue?

    public init(parameter: String, pointer: JSONPointer, value: SyncValue? = nil) {
        self.parameter = parameter
        self.pointer = pointer
        self.value = value
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

    public init(pointer: JSONPointer, value: SyncValue?) {
        self.pointer = pointer
        self.value = value
    }
}

extension ListDescription {
    /// The field a sync compares and records, when the description syncs.
    var syncField: JSONPointer? { until?.pointer ?? since?.pointer }

    /// The value the run starts from: the greater of the bound and the since value.
    var storedSyncValue: SyncValue? {
        [until?.value, since?.value].compactMap { $0 }.max()
    }

    /// The state a run reports when the greatest value it delivered is `greatest`.
    package func syncState(greatest: SyncValue?) -> SyncState? {
        guard let pointer = syncField else { return nil }
        return SyncState(pointer: pointer, value: [greatest, storedSyncValue].compactMap { $0 }.max())
    }

    /// The until and since members of the description's JSON form (empty when it does not sync).
    func syncJSONMembers() -> String {
        var out = ""
        if let until {
            out += ",\"until\":{\"pointer\":\(JSONText.quote(until.pointer.description)),\"value\":\(until.value)}"
        }
        if let since {
            out += ",\"since\":{\"param\":\(JSONText.quote(since.parameter)),\"pointer\":\(JSONText.quote(since.pointer.description))"
            out += ",\"value\":\(since.value?.description ?? "null")}"
        }
        return out
    }
}

extension SyncState {
    /// The state as the description's output-only "sync_state" member prints it, with the list it
    /// is of (the redacted URL of its first page, before any since parameter): the key a caller
    /// stores it under.
    func json(list: String?) -> String {
        "{\"list\":\(JSONText.quote(list)),\"field\":\(JSONText.quote(pointer.description)),\"value\":\(value?.description ?? "null")}"
    }
}

extension DescriptionReading {
    /// The "until" member: {"pointer", "value"}, both required; null: no bound.
    static func readUntil(_ value: JSONValue) throws(DescriptionRefusal) -> SyncBound? {
        if value == .null { return nil }
        let fields = try members(value, at: "/until", allowed: ["pointer", "value"])
        let pointer = try syncPointer(fields["pointer"], at: "/until/pointer")
        guard let given = fields["value"], let bound = SyncValue(given) else {
            throw DescriptionRefusal("/until/value", "the bound must be a JSON number or a string (\(fields["value"]?.kindName ?? "it is missing"))")
        }
        return SyncBound(pointer: pointer, value: bound)
    }

    /// The "since" member: {"param", "pointer", "value"}; value may be null or left out (a first
    /// run); null: no filter.
    static func readSince(_ value: JSONValue) throws(DescriptionRefusal) -> SinceFilter? {
        if value == .null { return nil }
        let fields = try members(value, at: "/since", allowed: ["param", "pointer", "value"])
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
        return SinceFilter(parameter: parameter, pointer: pointer, value: stored)
    }

    /// The output-only "sync_state" member: accepted in the shape the library prints, and ignored
    /// (a run's state is what it delivers, never what it is told).
    static func checkSyncState(_ value: JSONValue) throws(DescriptionRefusal) {
        if value == .null { return }
        let fields = try members(value, at: "/sync_state", allowed: ["list", "field", "value"])
        let valueIsPrinted = fields["value"].map { $0 == .null || SyncValue($0) != nil } ?? true
        guard case .string? = fields["field"], valueIsPrinted else {
            throw DescriptionRefusal("/sync_state", "is printed, not read: {\"list\", \"field\", \"value\"} as a run prints it, or left out")
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
