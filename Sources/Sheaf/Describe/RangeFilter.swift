/// A range filter of a cursor list: the field its items are ordered by and the query parameters
/// that bound it (Stripe's `created[gte]`/`created[lt]`, Slack's `oldest`/`latest`). A list
/// filtered to a range is a list of its own, with its own cursor, so a list with one is read as
/// pieces walked side by side (`PagePlanner`'s split), each item exactly once.
public struct RangeFilter: Sendable, Equatable {
    /// The order the list serves its items in, by the field.
    public enum Order: String, Sendable, CaseIterable {
        case newestFirst = "newest_first"
        case oldestFirst = "oldest_first"

        /// The order in words ("newest first").
        var words: String { self == .newestFirst ? "newest first" : "oldest first" }
    }

    /// One end of the range: the query parameter and whether the value it is sent is in the range.
    public struct Bound: Sendable, Equatable {
        public var parameter: String
        public var inclusive: Bool

        public init(parameter: String, inclusive: Bool) {
            self.parameter = parameter
            self.inclusive = inclusive
        }

        /// `name` with its inclusiveness read from its spelling: `[gte]`, `[lte]`, `_gte`,
        /// `_lte`, `_min`, `_max` and `since` name ends in the range; any other name an end outside it.
        public init(inferredFrom name: String) {
            let inclusiveEndings = ["[gte]", "[lte]", "_gte", "_lte", "_min", "_max", "since"]
            self.init(parameter: name, inclusive: inclusiveEndings.contains { name.hasSuffix($0) })
        }
    }

    /// The field, inside each item.
    public var field: JSONPointer
    public var lower: Bound
    public var upper: Bound
    public var order: Order
    /// How the field's values are read and sent; nil: as page one's first value shows.
    public var kind: RangeValue.Kind?

    public init(field: JSONPointer, lower: Bound, upper: Bound, order: Order = .newestFirst, kind: RangeValue.Kind? = nil) {
        self.field = field
        self.lower = lower
        self.upper = upper
        self.order = order
        self.kind = kind
    }

    /// The filter `--split FIELD:LOWER,UPPER[:ORDER]` spells (the command line's form).
    /// - Throws: `.invalidArgument` saying the form.
    public init(spelled text: String) throws(SheafError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let bounds = parts.count >= 2 ? parts[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init) : []
        guard parts.count == 2 || parts.count == 3, let field = JSONPointer(parts[0]), !field.tokens.isEmpty,
              bounds.count == 2, !bounds[0].isEmpty, !bounds[1].isEmpty else {
            throw SheafError(.invalidArgument, "a split is FIELD:LOWER,UPPER[:ORDER] (a JSON pointer into each item, the query "
                             + "parameters of the range's ends, newest_first or oldest_first), as /created:created[gte],created[lt]; "
                             + "not \(JSONText.quote(text))")
        }
        var order = Order.newestFirst
        if parts.count == 3 {
            guard let named = Order(rawValue: parts[2]) else {
                throw SheafError(.invalidArgument, "a split's order is newest_first or oldest_first, not \(JSONText.quote(parts[2]))")
            }
            order = named
        }
        self.init(field: field, lower: Bound(inferredFrom: bounds[0]), upper: Bound(inferredFrom: bounds[1]), order: order)
    }

    /// The filter as the description's "split" member prints it.
    var json: String {
        func bound(_ bound: Bound) -> String {
            "{\"param\":\(JSONText.quote(bound.parameter)),\"inclusive\":\(bound.inclusive)}"
        }
        return "{\"field\":\(JSONText.quote(field.description)),\"lower\":\(bound(lower)),\"upper\":\(bound(upper))"
            + ",\"order\":\(JSONText.quote(order.rawValue)),\"kind\":\(JSONText.quote(kind?.rawValue))}"
    }

    /// The query values that bound a request to the values `range` holds (both ends in it; nil:
    /// that end open): each end as its parameter takes it, one unit further out when it excludes
    /// its value. Nil when an end cannot be written (past the kind's range).
    func queryValues(_ range: ClosedValues, kind: RangeValue.Kind) -> [(parameter: String, value: String?)]? {
        func text(_ value: Int?, _ bound: Bound, outward: Int) -> (ok: Bool, text: String?) {
            guard let value else { return (true, nil) }
            let (sent, overflow) = value.addingReportingOverflow(bound.inclusive ? 0 : outward)
            guard !overflow, let written = RangeValue(units: sent, kind: kind).queryText else { return (false, nil) }
            return (true, written)
        }
        let low = text(range.lowest, lower, outward: -1)
        let high = text(range.highest, upper, outward: 1)
        guard low.ok, high.ok else { return nil }
        return [(lower.parameter, low.text), (upper.parameter, high.text)]
    }

    /// Values from `lowest` to `highest`, both in; nil: no end there.
    struct ClosedValues: Equatable {
        var lowest: Int?
        var highest: Int?
    }
}

/// A value of a range filter's field, in whole units of its kind: seconds or ids, millionths of a
/// decimal (Slack's `"1512085950.000216"`), microseconds since 1970 of an RFC 3339 time. Whole
/// units make the pieces of a range meet exactly: `[a, b)` then `[b, c)`.
public struct RangeValue: Sendable, Hashable, Comparable {
    public enum Kind: String, Sendable, CaseIterable {
        /// A whole number (Unix seconds, an id), a JSON number or a string of digits.
        case integer
        /// A decimal of up to six places, a number or a string, sent as a string of six places.
        case decimal
        /// An RFC 3339 time, sent in UTC with microseconds where it has them.
        case time

        /// The units a query parameter can be sent (a time's years 0001 to 9999); nil: any.
        var writable: ClosedRange<Int>? {
            self == .time ? RangeValue.firstTime...(RangeValue.endOfTime - 1) : nil
        }
    }

    public let units: Int
    public let kind: Kind

    init(units: Int, kind: Kind) {
        self.units = units
        self.kind = kind
    }

    public static func < (lhs: RangeValue, rhs: RangeValue) -> Bool { lhs.units < rhs.units }

    /// The kind a field's value reads as: a whole number, a decimal, or a time.
    static func kind(of value: SyncValue) -> Kind? {
        let text = value.queryText
        if parseInteger(text[...]) != nil { return .integer }
        if parseDecimal(text) != nil { return .decimal }
        if parseTime(text) != nil { return .time }
        return nil
    }

    /// `value` read as `kind`; nil when it is not one (or is past 64 bits of units).
    init?(_ value: SyncValue, kind: Kind) {
        let text = value.queryText
        let units: Int?
        switch kind {
        case .integer: units = Self.parseInteger(text[...])
        case .decimal: units = Self.parseDecimal(text)
        case .time: units = Self.parseTime(text)
        }
        guard let units else { return nil }
        self.init(units: units, kind: kind)
    }

    /// The value as a query parameter takes it; nil where the kind cannot write it.
    var queryText: String? {
        switch kind {
        case .integer:
            return String(units)
        case .decimal:
            let negative = units < 0
            let magnitude = units.magnitude
            let fraction = String(magnitude % 1_000_000)
            return (negative ? "-" : "") + String(magnitude / 1_000_000) + "." + String(repeating: "0", count: 6 - fraction.count) + fraction
        case .time:
            return Self.formatTime(units)
        }
    }

    // MARK: Reading

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// A whole number of at most 18 digits (no overflow), with an optional minus.
    private static func parseInteger(_ text: Substring) -> Int? {
        var digits = text.utf8[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy(isDigit) else { return nil }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return negative ? -value : value
    }

    /// A decimal with a fraction of one to six places, in millionths.
    private static func parseDecimal(_ text: String) -> Int? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let whole = parseInteger(parts[0]), parts[1].utf8.allSatisfy(isDigit),
              (1...6).contains(parts[1].utf8.count), whole.magnitude < 1_000_000_000_000 else { return nil }
        let fraction = parts[1].utf8.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        let scaled = fraction * Int(pow10(6 - parts[1].utf8.count))
        let negative = parts[0].hasPrefix("-")
        return whole * 1_000_000 + (negative ? -scaled : scaled)
    }

    private static func pow10(_ exponent: Int) -> Int { (0..<exponent).reduce(1) { value, _ in value * 10 } }

    /// An RFC 3339 time (`2024-05-01T12:00:00Z`, `...T12:00:00.25+02:00`), in microseconds since
    /// 1970 UTC; fractions past six places are cut. Years 0001 to 9999.
    private static func parseTime(_ text: String) -> Int? {
        let bytes = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= bytes.count, bytes[from..<from + count].allSatisfy(isDigit) else { return nil }
            return bytes[from..<from + count].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        guard bytes.count >= 20, let year = number(0, 4), bytes[4] == UInt8(ascii: "-"), let month = number(5, 2),
              bytes[7] == UInt8(ascii: "-"), let day = number(8, 2), bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
              let hour = number(11, 2), bytes[13] == UInt8(ascii: ":"), let minute = number(14, 2),
              bytes[16] == UInt8(ascii: ":"), let second = number(17, 2),
              year >= 1, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var at = 19
        var micros = 0
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            var places = 0
            while at < bytes.count, isDigit(bytes[at]) {
                if places < 6 { micros = micros * 10 + Int(bytes[at] - UInt8(ascii: "0")) }
                places += 1
                at += 1
            }
            guard places > 0 else { return nil }
            micros *= pow10(max(0, 6 - places))
        }
        var offsetSeconds = 0
        guard at < bytes.count else { return nil }
        if bytes[at] == UInt8(ascii: "Z") || bytes[at] == UInt8(ascii: "z") {
            at += 1
        } else if bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") {
            guard let hours = number(at + 1, 2), at + 3 < bytes.count, bytes[at + 3] == UInt8(ascii: ":"),
                  let minutes = number(at + 4, 2), hours < 24, minutes < 60 else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[at] == UInt8(ascii: "-") ? -1 : 1)
            at += 6
        } else {
            return nil
        }
        guard at == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        return seconds * 1_000_000 + micros
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `micros` since 1970 as RFC 3339 in UTC; nil outside years 0001 to 9999.
    /// 0001-01-01 and 10000-01-01, in microseconds since 1970.
    static let firstTime = -62_135_596_800 * 1_000_000
    static let endOfTime = 253_402_300_800 * 1_000_000

    /// `2026-12-02T16:33:10Z` (six digits of fraction when there is one) for microseconds since
    /// 1970; nil outside years 1 to 9999.
    static func formatTime(_ micros: Int) -> String? {
        guard micros >= firstTime, micros < endOfTime else { return nil }
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var rest = seconds % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        // civil_from_days
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        var out = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rest / 3600, 2)):\(pad(rest / 60 % 60, 2)):\(pad(rest % 60, 2))"
        if fraction != 0 { out += "." + pad(fraction, 6) }
        return out + "Z"
    }
}

extension DescriptionReading {
    /// The "split" member: {"field", "lower", "upper", "order", "kind"}, the ends each {"param",
    /// "inclusive"} or a parameter's name (its inclusiveness read from its spelling); null: none.
    static func readSplit(_ value: JSONValue) throws(DescriptionRefusal) -> RangeFilter? {
        if value == .null { return nil }
        let fields = try members(value, at: "/split", allowed: ["field", "lower", "upper", "order", "kind"])
        guard case .string(let text)? = fields["field"], let field = JSONPointer(text), !field.tokens.isEmpty else {
            throw DescriptionRefusal("/split/field", "must be a JSON pointer to the field inside each item the list is ordered by (as \"/created\")")
        }
        func bound(_ name: String) throws(DescriptionRefusal) -> RangeFilter.Bound {
            switch fields[name] {
            case .string(let parameter)? where !parameter.isEmpty:
                return RangeFilter.Bound(inferredFrom: parameter)
            case .object? :
                let bound = try members(fields[name]!, at: "/split/" + name, allowed: ["param", "inclusive"])
                guard case .string(let parameter)? = bound["param"], !parameter.isEmpty else {
                    throw DescriptionRefusal("/split/\(name)/param", "must be the name of the query parameter (a non-empty string)")
                }
                guard case .bool(let inclusive)? = bound["inclusive"] else {
                    throw DescriptionRefusal("/split/\(name)/inclusive", "must be true (the value sent is in the range) or false")
                }
                return RangeFilter.Bound(parameter: parameter, inclusive: inclusive)
            default:
                throw DescriptionRefusal("/split/" + name, "must be the query parameter of the range's \(name) end: a name, or {\"param\", \"inclusive\"}")
            }
        }
        var filter = RangeFilter(field: field, lower: try bound("lower"), upper: try bound("upper"))
        guard filter.lower.parameter != filter.upper.parameter else {
            throw DescriptionRefusal("/split/upper", "the range's two ends need two parameters")
        }
        switch fields["order"] {
        case nil, .null?: break
        case .string(let name)? where RangeFilter.Order(rawValue: name) != nil: filter.order = RangeFilter.Order(rawValue: name)!
        default: throw DescriptionRefusal("/split/order", "must be newest_first or oldest_first")
        }
        switch fields["kind"] {
        case nil, .null?: break
        case .string(let name)? where RangeValue.Kind(rawValue: name) != nil: filter.kind = RangeValue.Kind(rawValue: name)!
        default: throw DescriptionRefusal("/split/kind", "must be integer, decimal, time, or null (as page one shows)")
        }
        return filter
    }
}
