/// Polling a list that syncs: each poll fetches what is new since an offset (what earlier polls
/// delivered: `SyncState`, with the identities seen at its value) and gives the offset after it,
/// so that a loop of polls (a watch) delivers each item once.

/// What one poll delivered, and where the next one starts.
public struct Poll: Sendable {
    /// The new items, in the list's order, written in the poll's format (`ItemOutput`: a JSON
    /// array, or JSON lines), the bytes the pages brought.
    public var output: [UInt8]
    /// How many items `output` holds.
    public var items: Int
    /// The offset after these items: give it to the next poll (`offsetJSON` stores it).
    public var offset: SyncState
    /// The list the offset is of: the redacted URL of its first page (no credential).
    public var list: String
    /// How the run ended (never a failure: a failed poll throws).
    public var outcome: ListOutcome
    /// Requests the poll made.
    public var requests: Int

    /// The offset as JSON text: `{"list", "field", "value", "seen"}`, the form `SyncState.offset(json:)` reads.
    public var offsetJSON: [UInt8] { Array(offset.json(list: list).utf8) }
}

extension SheafClient {
    /// Fetches what `description` (a list that syncs, with an identity) has that is new since
    /// `offset` (nil: from the description's own until or since value), and nothing after
    /// `through` (nil: no end; an offset a later poll gave, to read a range again). Blocks.
    ///
    /// Nothing is delivered from a poll that fails: the error is thrown and the offset to poll
    /// from again is the one given. Refused (`.invalidArgument`): a description that does not
    /// sync, has no identity, or has an item, page or request budget (a poll that stopped early
    /// would leave a gap); an offset of another field or another list.
    public func poll(_ description: ListDescription, after offset: (list: String?, state: SyncState)?,
                     through: (list: String?, state: SyncState)? = nil, format: ItemFormat = .jsonArray) throws(SheafError) -> Poll {
        var description = description
        guard let field = description.syncField else {
            throw SheafError(.invalidArgument, "a poll reads what is new in a list that syncs: describe until (a newest-first list) or since (a filter)")
        }
        guard description.source(of: .identity) != .none else {
            throw SheafError(.invalidArgument, "a poll delivers the items at its offset's value once by their identity: describe it "
                             + "(\"signals\": {\"identity\": {\"source\": \"item\", \"where\": \"/id\"}})")
        }
        guard description.maxItems == nil, description.maxPages == nil, description.maxRequests == nil else {
            throw SheafError(.invalidArgument, "a poll reads what is new to its end: an item limit or a page or request budget would leave a gap")
        }
        let list = try listURL(of: description)
        for (name, given) in [("offset", offset), ("end (through)", through)] {
            guard let given else { continue }
            guard given.state.pointer == field else {
                throw SheafError(.invalidArgument, "the poll's \(name) is of the field \(given.state.pointer), not of the list's \(field)")
            }
            if let other = given.list, other != list {
                throw SheafError(.invalidArgument, "the poll's \(name) is of the list \(other), not of \(list)")
            }
        }
        if let offset, let value = offset.state.value {
            let seen = offset.state.seen ?? []
            if description.until != nil {
                description.until!.value = value
                description.until!.seen = seen
            }
            if description.since != nil {
                description.since!.value = value
                description.since!.seen = seen
            }
        } else if description.until != nil, description.until!.seen == nil {
            description.until!.seen = []  // the first poll: an item at the start value is new
        }
        if let through, through.state.value == nil {
            // The end of a range a poll of an empty list gave: the range holds nothing.
            return Poll(output: format == .jsonArray ? Array("[]\n".utf8) : [], items: 0, offset: through.state, list: list,
                        outcome: .complete, requests: 0)
        }
        description.through = through?.state
        let written = Locked<[UInt8]>([])
        let output = ItemOutput(format: format) { bytes in
            written.withLock { $0.append(contentsOf: bytes) }
            return nil
        }
        let run = try makeList(description, keepsItems: false) { output.write($0.delta) }
        try run.start()
        let outcome = output.finish(try run.wait())
        if let error = outcome.error { throw error }
        guard let state = run.syncState else { throw SheafError(.internal, "a poll's run reported no sync state") }
        return Poll(output: written.withLock { $0 }, items: run.lastDelivered?.delta.totalItems ?? 0, offset: state, list: list,
                    outcome: outcome, requests: run.requestsMade)
    }
}

extension SyncState {
    /// Reads an offset (`Poll.offsetJSON`, or a "sync_state" a run printed): `{"list", "field",
    /// "value", "seen"}`, "list" and "seen" optional.
    public static func offset(json: [UInt8]) throws(SheafError) -> (list: String?, state: SyncState) {
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONValue(parsing: json)
        } catch {
            throw SheafError(.invalidArgument, "the offset is not JSON: \(error)")
        }
        do throws(DescriptionRefusal) {
            let fields = try DescriptionReading.members(value, at: "", allowed: ["list", "field", "value", "seen"])
            var list: String?
            switch fields["list"] {
            case nil, .null?: list = nil
            case .string(let text)?: list = text
            default: throw DescriptionRefusal("/list", "must be the list's URL (a string) or null")
            }
            guard case .string(let text)? = fields["field"], let pointer = JSONPointer(text), !pointer.tokens.isEmpty else {
                throw DescriptionRefusal("/field", "must be the JSON pointer of the sync field")
            }
            var stored: SyncValue?
            if let given = fields["value"], given != .null {
                guard let read = SyncValue(given) else { throw DescriptionRefusal("/value", "must be a JSON number, a string or null") }
                stored = read
            }
            let seen = try DescriptionReading.readSeen(fields["seen"], at: "/seen")
            return (list, SyncState(pointer: pointer, value: stored, seen: seen))
        } catch {
            throw SheafError(.invalidArgument, "the offset's \(error.field.isEmpty ? "text" : error.field): \(error.message)")
        }
    }
}
