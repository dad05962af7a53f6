/// The value of an item's field that an incremental sync compares (`ListDescription.until`,
/// `ListDescription.since`): a JSON number, kept as its text, or a string.
///
/// Two numbers compare by the numbers they write, exactly: ids past 2^53 are common, and a
/// `Double` would call two of them equal. Two RFC 3339 timestamps compare by the instants they
/// name (`TimestampText`): fractional seconds of any length (Go's `RFC3339Nano` drops trailing
/// zeros, so `…:00.5Z` and `…:00Z` sit in one list) and any offset. Anything else compares as
/// text, by Unicode code points.
public enum SyncValue: Sendable, Comparable, CustomStringConvertible {
    /// A JSON number, as written (`12345`, `1.5e3`).
    case number(String)
    /// A JSON string, decoded.
    case string(String)

    /// The value as JSON text.
    public var description: String {
        switch self {
        case .number(let text): text
        case .string(let text): JSONText.quote(text)
        }
    }

    /// The value as it is sent in a query parameter: the number's text, or the string itself.
    public var queryText: String {
        switch self {
        case .number(let text), .string(let text): text
        }
    }

    public static func < (lhs: SyncValue, rhs: SyncValue) -> Bool {
        switch (lhs, rhs) {
        case (.number(let a), .number(let b)):
            if let a = DecimalText(a), let b = DecimalText(b) { return a < b }
            return Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
        case (.string(let a), .string(let b)):
            if let a = TimestampText(a), let b = TimestampText(b) { return a < b }
            return Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
        default:
            // UTF-8 bytes order as the code points they encode.
            return Array(lhs.queryText.utf8).lexicographicallyPrecedes(Array(rhs.queryText.utf8))
        }
    }

    public static func == (lhs: SyncValue, rhs: SyncValue) -> Bool {
        !(lhs < rhs) && !(rhs < lhs)
    }

    /// The value in `range` of a validated page: a number or a string; nil for anything else
    /// (null, a boolean, an object or an array count as an item without the field).
    init?(_ scanner: JSONScanner, _ range: Range<Int>) {
        switch scanner.bytes[range.lowerBound] {
        case UInt8(ascii: "\""):
            guard let text = try? scanner.decodeString(at: range.lowerBound) else { return nil }
            self = .string(text)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            self = .number(String(decoding: UnsafeBufferPointer(rebasing: scanner.bytes[range]), as: UTF8.self))
        default:
            return nil
        }
    }

    /// The value of a described JSON value: a number or a string; nil for anything else.
    package init?(_ value: JSONValue) {
        switch value {
        case .number(let text): self = .number(text)
        case .string(let text): self = .string(text)
        default: return nil
        }
    }
}

/// A JSON number's text as sign, significant digits and decimal exponent (the value is
/// 0.d₁d₂… × 10^exponent), so that two numbers compare exactly, whatever their size.
struct DecimalText: Comparable {
    let negative: Bool
    /// The significant digits, without leading or trailing zeros; empty for zero.
    let digits: [UInt8]
    let exponent: Int

    /// Nil unless `text` is a JSON number.
    init?(_ text: String) {
        var bytes = Array(text.utf8)[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let whole = bytes.prefix(while: isDigit)
        guard !whole.isEmpty else { return nil }
        bytes = bytes.dropFirst(whole.count)
        var fraction: ArraySlice<UInt8> = []
        if bytes.first == UInt8(ascii: ".") {
            fraction = bytes.dropFirst().prefix(while: isDigit)
            guard !fraction.isEmpty else { return nil }
            bytes = bytes.dropFirst(1 + fraction.count)
        }
        var written = 0
        if let mark = bytes.first, mark == UInt8(ascii: "e") || mark == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            let exponentNegative = bytes.first == UInt8(ascii: "-")
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            let exponentDigits = bytes.prefix(while: isDigit)
            guard !exponentDigits.isEmpty else { return nil }
            bytes = bytes.dropFirst(exponentDigits.count)
            // Past a billion the exponent is held there: no page holds a number that long, and
            // the comparison must never overflow.
            for digit in exponentDigits where written < 1_000_000_000 {
                written = written * 10 + Int(digit - UInt8(ascii: "0"))
            }
            if exponentNegative { written = -written }
        }
        guard bytes.isEmpty else { return nil }
        var all = Array(whole) + Array(fraction)
        var exponent = whole.count + written
        let leading = all.prefix(while: { $0 == UInt8(ascii: "0") }).count
        all.removeFirst(leading)
        exponent -= leading
        while all.last == UInt8(ascii: "0") { all.removeLast() }
        self.negative = negative && !all.isEmpty
        self.digits = all
        self.exponent = all.isEmpty ? 0 : exponent
    }

    static func < (lhs: DecimalText, rhs: DecimalText) -> Bool {
        if lhs.negative != rhs.negative { return lhs.negative }
        // Compares magnitudes; a negative pair compares the other way round.
        let smaller = lhs.negative ? rhs : lhs
        let larger = lhs.negative ? lhs : rhs
        if smaller.digits.isEmpty || larger.digits.isEmpty { return smaller.digits.isEmpty && !larger.digits.isEmpty }
        if smaller.exponent != larger.exponent { return smaller.exponent < larger.exponent }
        return smaller.digits.lexicographicallyPrecedes(larger.digits)
    }
}

/// An RFC 3339 date-time (`2024-05-01T10:00:00.5Z`, `2024-05-01t12:00:00+02:00`, a space for the
/// `T`) as the instant it names: whole seconds since 0000-03-01 UTC and the fraction's digits, so
/// that two compare exactly, whatever their fraction's length or offset. Integer arithmetic on
/// four-digit fields only: nothing a server writes can overflow it.
struct TimestampText: Comparable {
    let seconds: Int
    /// The fraction's digits without trailing zeros (`.50` is `5`).
    let fraction: [UInt8]

    /// Nil unless `text` is an RFC 3339 date-time (leap second 60 included, as the RFC allows).
    init?(_ text: String) {
        let bytes = Array(text.utf8)
        func number(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[at..<(at + count)] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func byte(_ at: Int, _ allowed: String) -> Bool { at < bytes.count && allowed.utf8.contains(bytes[at]) }
        guard let year = number(0, 4), byte(4, "-"), let month = number(5, 2), byte(7, "-"), let day = number(8, 2),
              byte(10, "Tt "), let hour = number(11, 2), byte(13, ":"), let minute = number(14, 2), byte(16, ":"),
              let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        var at = 19
        var fraction: [UInt8] = []
        if byte(at, ".") {
            at += 1
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") {
                fraction.append(bytes[at])
                at += 1
            }
            guard !fraction.isEmpty else { return nil }
            while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
        }
        var offset = 0
        if byte(at, "Zz") {
            at += 1
        } else if byte(at, "+-"), let hours = number(at + 1, 2), byte(at + 3, ":"), let minutes = number(at + 4, 2),
                  hours < 24, minutes < 60 {
            offset = (hours * 60 + minutes) * 60 * (bytes[at] == UInt8(ascii: "-") ? -1 : 1)
            at += 6
        } else {
            return nil
        }
        guard at == bytes.count else { return nil }
        // Days from 0000-03-01 (the year starts in March, so that February's length is last).
        let shiftedYear = month <= 2 ? year - 1 : year
        let shiftedMonth = (month + 9) % 12
        let days = 365 * shiftedYear + shiftedYear / 4 - shiftedYear / 100 + shiftedYear / 400
            + (153 * shiftedMonth + 2) / 5 + day - 1
        seconds = ((days * 24 + hour) * 60 + minute) * 60 + second - offset
        self.fraction = fraction
    }

    static func < (lhs: TimestampText, rhs: TimestampText) -> Bool {
        if lhs.seconds != rhs.seconds { return lhs.seconds < rhs.seconds }
        return lhs.fraction.lexicographicallyPrecedes(rhs.fraction)
    }
}
