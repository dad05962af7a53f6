#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A validating, allocation-light reader of JSON bytes.
///
/// It never builds a tree: it checks syntax (RFC 8259, strict UTF-8 in strings) while skipping
/// values, and reports byte ranges of the values a page reader asks for, so items can be handed
/// on verbatim.
struct JSONScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    static let maxDepth = 512

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    // MARK: Whole documents

    /// One pointer a caller wants located, optionally with the element ranges of the array there.
    struct Target {
        var pointer: JSONPointer
        var collectsElements: Bool
        /// Filled by `scanDocument`: the value's byte range, nil when absent.
        var range: Range<Int>? = nil
        /// Filled when `collectsElements` and the value is an array.
        var elements: [Range<Int>] = []
    }

    /// Validates the whole document and locates every target in the same pass.
    func scanDocument(_ targets: inout [Target]) throws(JSONSyntaxError) {
        var index = skipWhitespace(0)
        guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "empty body") }
        let active = Array(targets.indices)
        index = try walk(at: index, depth: 0, matched: 0, active: active, targets: &targets)
        index = skipWhitespace(index)
        if index != bytes.count {
            throw JSONSyntaxError(offset: index, reason: "unexpected data after the JSON value")
        }
    }

    /// Walks the value at `index`, where the first `matched` tokens of every active target agree
    /// with the path so far; returns the index after the value.
    private func walk(at index: Int, depth: Int, matched: Int, active: [Int],
                      targets: inout [Target]) throws(JSONSyntaxError) -> Int {
        if active.isEmpty { return try skipValue(at: index, depth: depth) }
        var continuing: [Int] = []
        var collecting = false
        var completed: [Int] = []
        for target in active {
            if targets[target].pointer.tokens.count == matched {
                completed.append(target)
                if targets[target].collectsElements { collecting = true }
            } else {
                continuing.append(target)
            }
        }
        let end: Int
        switch bytes[index] {
        case UInt8(ascii: "{") where !continuing.isEmpty:
            end = try walkObject(at: index, depth: depth, matched: matched, active: continuing, targets: &targets)
        case UInt8(ascii: "[") where !continuing.isEmpty || collecting:
            var elements: [Range<Int>] = []
            end = try walkArray(at: index, depth: depth, matched: matched, active: continuing,
                                collecting: collecting, elements: &elements, targets: &targets)
            if collecting {
                for target in completed where targets[target].collectsElements && targets[target].range == nil {
                    targets[target].elements = elements
                }
            }
        default:
            end = try skipValue(at: index, depth: depth)
        }
        // With duplicate keys the first occurrence wins, as in `locate`.
        for target in completed where targets[target].range == nil { targets[target].range = index..<end }
        return end
    }

    private func walkObject(at start: Int, depth: Int, matched: Int, active: [Int],
                            targets: inout [Target]) throws(JSONSyntaxError) -> Int {
        guard depth < Self.maxDepth else { throw JSONSyntaxError(offset: start, reason: "nesting too deep") }
        var index = skipWhitespace(start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return index + 1 }
        while true {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw JSONSyntaxError(offset: index, reason: "expected a member name")
            }
            let keyEnd = try skipString(at: index)
            let following = active.filter { keyEquals(index..<keyEnd, targets[$0].pointer.tokens[matched]) }
            index = skipWhitespace(keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw JSONSyntaxError(offset: index, reason: "expected ':'")
            }
            index = skipWhitespace(index + 1)
            try requireValueStart(index)
            index = try walk(at: index, depth: depth + 1, matched: matched + 1, active: following, targets: &targets)
            index = skipWhitespace(index)
            guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index = skipWhitespace(index + 1)
            } else if bytes[index] == UInt8(ascii: "}") {
                return index + 1
            } else {
                throw JSONSyntaxError(offset: index, reason: "expected ',' or '}'")
            }
        }
    }

    private func walkArray(at start: Int, depth: Int, matched: Int, active: [Int],
                           collecting: Bool, elements: inout [Range<Int>],
                           targets: inout [Target]) throws(JSONSyntaxError) -> Int {
        guard depth < Self.maxDepth else { throw JSONSyntaxError(offset: start, reason: "nesting too deep") }
        var index = skipWhitespace(start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return index + 1 }
        var position = 0
        while true {
            try requireValueStart(index)
            // An items array's elements are skipped straight away: no target lies inside them.
            let end: Int
            if active.isEmpty {
                end = try skipValue(at: index, depth: depth + 1)
            } else {
                let following = active.filter { targets[$0].pointer.tokens[matched] == String(position) }
                end = try walk(at: index, depth: depth + 1, matched: matched + 1, active: following, targets: &targets)
            }
            if collecting { elements.append(index..<end) }
            index = skipWhitespace(end)
            position += 1
            guard index < bytes.count else { throw JSONSyntaxError(offset: index, reason: "unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index = skipWhitespace(index + 1)
            } else if bytes[index] == UInt8(ascii: "]") {
                return index + 1
            } else {
                throw JSONSyntaxError(offset: index, reason: "expected ',' or ']'")
            }
        }
    }

    // MARK: Inside a validated value

    /// The range of the value at `pointer` inside the already validated value `range`, or nil.
    func locate(_ pointer: JSONPointer, in range: Range<Int>) -> Range<Int>? {
        var current = range
        for token in pointer.tokens {
            guard let next = try? child(token, of: current) else { return nil }
            current = next
        }
        return current
    }

    private func child(_ token: String, of range: Range<Int>) throws(JSONSyntaxError) -> Range<Int>? {
        var index = range.lowerBound
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index = skipWhitespace(index + 1)
            while index < range.upperBound, bytes[index] == UInt8(ascii: "\"") {
                let keyEnd = try skipString(at: index)
                let matches = keyEquals(index..<keyEnd, token)
                index = skipWhitespace(skipWhitespace(keyEnd) + 1)
                let end = try skipValue(at: index, depth: 0)
                if matches { return index..<end }
                index = skipWhitespace(end)
                if bytes[index] == UInt8(ascii: ",") { index = skipWhitespace(index + 1) }
            }
            return nil
        case UInt8(ascii: "["):
            guard let wanted = Int(token), wanted >= 0, token == String(wanted) else { return nil }
            index = skipWhitespace(index + 1)
            var position = 0
            while index < range.upperBound, bytes[index] != UInt8(ascii: "]") {
                let end = try skipValue(at: index, depth: 0)
                if position == wanted { return index..<end }
                position += 1
                index = skipWhitespace(end)
                if bytes[index] == UInt8(ascii: ",") { index = skipWhitespace(index + 1) }
            }
            return nil
        default:
            return nil
        }
    }

    /// Whether the string token at `range` (quotes included) decodes to `key`.
    func keyEquals(_ range: Range<Int>, _ key: String) -> Bool {
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        var key = key
        return key.withUTF8 { wanted in
            // Escapes may spell the same key differently: then decode and compare.
            if bytes[inner].contains(UInt8(ascii: "\\")) {
                return (try? decodeString(at: range.lowerBound))?.utf8.elementsEqual(wanted) ?? false
            }
            return inner.count == wanted.count
                && (wanted.isEmpty || memcmp(bytes.baseAddress! + inner.lowerBound, wanted.baseAddress!, wanted.count) == 0)
        }
    }

    // MARK: Skipping (validates)

    @inline(__always)
    func skipWhitespace(_ start: Int) -> Int {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return index
            }
        }
        return index
    }

    private func requireValueStart(_ index: Int) throws(JSONSyntaxError) {
        if index >= bytes.count { throw JSONSyntaxError(offset: index, reason: "unexpected end of data") }
    }

    /// Validates the value starting at `index` and returns the index just after it.
    func skipValue(at index: Int, depth: Int) throws(JSONSyntaxError) -> Int {
        try requireValueStart(index)
        switch bytes[index] {
        case UInt8(ascii: "\""): return try skipString(at: index)
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { throw JSONSyntaxError(offset: index, reason: "nesting too deep") }
            var position = skipWhitespace(index + 1)
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") { return position + 1 }
            while true {
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    throw JSONSyntaxError(offset: position, reason: "expected a member name")
                }
                position = skipWhitespace(try skipString(at: position))
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                    throw JSONSyntaxError(offset: position, reason: "expected ':'")
                }
                position = skipWhitespace(try skipValue(at: skipWhitespace(position + 1), depth: depth + 1))
                guard position < bytes.count else { throw JSONSyntaxError(offset: position, reason: "unterminated object") }
                if bytes[position] == UInt8(ascii: ",") {
                    position = skipWhitespace(position + 1)
                } else if bytes[position] == UInt8(ascii: "}") {
                    return position + 1
                } else {
                    throw JSONSyntaxError(offset: position, reason: "expected ',' or '}'")
                }
            }
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { throw JSONSyntaxError(offset: index, reason: "nesting too deep") }
            var position = skipWhitespace(index + 1)
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") { return position + 1 }
            while true {
                position = skipWhitespace(try skipValue(at: position, depth: depth + 1))
                guard position < bytes.count else { throw JSONSyntaxError(offset: position, reason: "unterminated array") }
                if bytes[position] == UInt8(ascii: ",") {
                    position = skipWhitespace(position + 1)
                } else if bytes[position] == UInt8(ascii: "]") {
                    return position + 1
                } else {
                    throw JSONSyntaxError(offset: position, reason: "expected ',' or ']'")
                }
            }
        case UInt8(ascii: "t"): return try skipLiteral("true", at: index)
        case UInt8(ascii: "f"): return try skipLiteral("false", at: index)
        case UInt8(ascii: "n"): return try skipLiteral("null", at: index)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try skipNumber(at: index)
        default: throw JSONSyntaxError(offset: index, reason: "expected a JSON value")
        }
    }

    private func skipLiteral(_ literal: StaticString, at index: Int) throws(JSONSyntaxError) -> Int {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count,
              memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0 else {
            throw JSONSyntaxError(offset: index, reason: "invalid literal")
        }
        return index + count
    }

    func skipNumber(at start: Int) throws(JSONSyntaxError) -> Int {
        var index = start
        @inline(__always) func digits() -> Int {
            let first = index
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 { index += 1 }
            return index - first
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw JSONSyntaxError(offset: start, reason: "invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            throw JSONSyntaxError(offset: start, reason: "invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            if digits() == 0 { throw JSONSyntaxError(offset: start, reason: "invalid number") }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            if digits() == 0 { throw JSONSyntaxError(offset: start, reason: "invalid number") }
        }
        return index
    }

    /// Validates the string starting at the quote `start`; returns the index after its closing quote.
    func skipString(at start: Int) throws(JSONSyntaxError) -> Int {
        var index = start + 1
        let count = bytes.count
        let base = UnsafeRawPointer(bytes.baseAddress!)
        while index < count {
            // Eight bytes at a time while they are plain (printable ASCII, no quote, no
            // backslash); in the first word that is not, straight to its first other byte. Near
            // the end of the buffer, one byte at a time.
            while index + 8 <= count {
                let special = Self.specialBytes(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                guard special == 0 else {
                    index += special.trailingZeroBitCount >> 3
                    break
                }
                index += 8
            }
            while index < count, bytes[index] &- 0x20 < 0x60, bytes[index] != UInt8(ascii: "\""),
                  bytes[index] != UInt8(ascii: "\\") {
                index += 1
            }
            guard index < count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { return index + 1 }
            if byte == UInt8(ascii: "\\") {
                guard index + 1 < count else { break }
                switch bytes[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard index + 6 <= count, (index + 2..<index + 6).allSatisfy({ hexValue(bytes[$0]) != nil }) else {
                        throw JSONSyntaxError(offset: index, reason: "invalid \\u escape")
                    }
                    index += 6
                default:
                    throw JSONSyntaxError(offset: index, reason: "invalid escape")
                }
            } else if byte < 0x20 {
                throw JSONSyntaxError(offset: index, reason: "control character in string")
            } else if byte < 0x80 {
                index += 1
            } else {
                index = try skipUTF8Sequence(at: index)
            }
        }
        throw JSONSyntaxError(offset: start, reason: "unterminated string")
    }

    /// The high bit of each of the word's eight bytes (the first in memory lowest) that is a
    /// quote, a backslash, a control character or not ASCII; 0 when none is. A borrow may also
    /// mark a plain byte after one of those, never before: the lowest mark is exact.
    @inline(__always)
    static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func zeroByte(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let control = (word &- 0x20 &* ones) & ~word & highs
        return control | (word & highs) | zeroByte(word ^ (0x22 &* ones)) | zeroByte(word ^ (0x5C &* ones))
    }

    /// Validates one multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    private func skipUTF8Sequence(at index: Int) throws(JSONSyntaxError) -> Int {
        let lead = bytes[index]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: throw JSONSyntaxError(offset: index, reason: "invalid UTF-8")
        }
        guard index + length <= bytes.count else { throw JSONSyntaxError(offset: index, reason: "invalid UTF-8") }
        let second = bytes[index + 1]
        guard second >= lower, second <= upper else { throw JSONSyntaxError(offset: index, reason: "invalid UTF-8") }
        for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 {
            throw JSONSyntaxError(offset: index, reason: "invalid UTF-8")
        }
        return index + length
    }

    // MARK: Decoding scalars

    /// Decodes the string starting at the quote `start` (already validated).
    func decodeString(at start: Int) throws(JSONSyntaxError) -> String {
        String(decoding: try decodeUTF8(at: start, marksLoneSurrogates: false), as: UTF8.self)
    }

    /// The string starting at the quote `start` (already validated) as UTF-8 bytes. A lone
    /// surrogate escape (`\ud800`) becomes U+FFFD, or, `marksLoneSurrogates`, the bytes
    /// 0xFF, high, low, which valid UTF-8 never holds: then two strings differ exactly when their
    /// JSON texts denote different sequences of code units (identities compare this way).
    func decodeUTF8(at start: Int, marksLoneSurrogates: Bool) throws(JSONSyntaxError) -> [UInt8] {
        let end = try skipString(at: start)
        let inner = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<(end - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return Array(inner) }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(inner.count)
        var index = 0
        func hex4(_ at: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 << 4 | UInt32(hexValue(inner[at + $1])!) }
        }
        while index < inner.count {
            let byte = inner[index]
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                index += 1
                continue
            }
            let escape = inner[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var value = hex4(index)
                index += 4
                if (0xD800..<0xDC00).contains(value), index + 6 <= inner.count,
                   inner[index] == UInt8(ascii: "\\"), inner[index + 1] == UInt8(ascii: "u") {
                    let low = hex4(index + 2)
                    if (0xDC00..<0xE000).contains(low) {
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                        index += 6
                    }
                }
                if let scalar = Unicode.Scalar(value) {
                    utf8 += String(Character(scalar)).utf8
                } else if marksLoneSurrogates {
                    utf8 += [0xFF, UInt8(value >> 8), UInt8(value & 0xFF)]
                } else {
                    utf8 += [0xEF, 0xBF, 0xBD] // U+FFFD
                }
            default: utf8.append(escape)
            }
        }
        return utf8
    }

    /// The non-negative integer at `range`, or nil when it is not one (or overflows).
    func nonNegativeInteger(at range: Range<Int>) -> Int? {
        var value = 0
        for index in range {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (product, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = product.addingReportingOverflow(Int(digit))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return range.isEmpty ? nil : value
    }
}

/// The value of a hexadecimal digit (JSON's \u escapes, URLs' %XX), nil for any other byte.
@inline(__always)
func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
