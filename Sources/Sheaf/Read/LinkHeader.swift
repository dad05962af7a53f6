/// The Link header (RFC 8288): link-values of a target and parameters, read with a real parser,
/// so commas and semicolons inside `<…>` or quoted strings, `rel` in any position, unquoted
/// values, several relation types in one `rel` and several header lines all read correctly.
struct LinkHeader: Sendable, Equatable {
    struct Link: Sendable, Equatable {
        /// The target as written (a URI reference, possibly relative).
        var target: String
        /// The parameters in order, names lower-cased, values unquoted.
        var parameters: [(name: String, value: String)]

        /// The relation types of `rel`, lower-cased.
        var relations: [String] {
            parameters.first { $0.name == "rel" }.map { $0.value.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) } ?? []
        }

        static func == (lhs: Link, rhs: Link) -> Bool {
            lhs.target == rhs.target && lhs.parameters.elementsEqual(rhs.parameters) { $0 == $1 }
        }
    }

    var links: [Link] = []

    /// Every Link header among `headers`, in order, as one list.
    init(_ headers: [HTTPHeader]) {
        for header in headers where header.name.lowercased() == "link" {
            links += Self.parse(Array(header.value.utf8))
        }
    }

    init(parsing value: String) {
        links = Self.parse(Array(value.utf8))
    }

    /// The target of the first link whose `rel` includes `relation` (case-insensitive), resolved
    /// against `base` (the URL of the response that carried it).
    func target(_ relation: String, resolvedAgainst base: String) -> String? {
        let wanted = relation.lowercased()
        guard let link = links.first(where: { $0.relations.contains(wanted) }) else { return nil }
        return URLText.resolve(link.target, against: base)
    }

    /// Whether some link has the relation `relation`.
    func has(_ relation: String) -> Bool {
        let wanted = relation.lowercased()
        return links.contains { $0.relations.contains(wanted) }
    }

    // MARK: Parsing

    private static let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t"), comma = UInt8(ascii: ","),
                       semicolon = UInt8(ascii: ";"), equals = UInt8(ascii: "="), quote = UInt8(ascii: "\""),
                       backslash = UInt8(ascii: "\\"), open = UInt8(ascii: "<"), close = UInt8(ascii: ">")

    private static func parse(_ bytes: [UInt8]) -> [Link] {
        var links: [Link] = []
        var i = 0
        // Each turn consumes at least one byte or ends, so the loop is bounded by the input.
        while i < bytes.count {
            skip(&i, bytes) { $0 == space || $0 == tab || $0 == comma }
            guard i < bytes.count else { break }
            guard bytes[i] == open else {
                skipValue(&i, bytes) // not a link-value: drop it up to the next top-level comma
                continue
            }
            i += 1
            let start = i
            while i < bytes.count, bytes[i] != close { i += 1 }
            guard i < bytes.count else { break } // an unterminated target: nothing trustworthy follows
            let target = String(decoding: bytes[start..<i], as: UTF8.self)
            i += 1
            var parameters: [(name: String, value: String)] = []
            while true {
                skip(&i, bytes) { $0 == space || $0 == tab }
                guard i < bytes.count, bytes[i] == semicolon else { break }
                i += 1
                skip(&i, bytes) { $0 == space || $0 == tab }
                let nameStart = i
                while i < bytes.count, HTTPText.isTokenByte(bytes[i]) { i += 1 }
                let name = String(decoding: bytes[nameStart..<i], as: UTF8.self).lowercased()
                skip(&i, bytes) { $0 == space || $0 == tab }
                var value = ""
                if i < bytes.count, bytes[i] == equals {
                    i += 1
                    skip(&i, bytes) { $0 == space || $0 == tab }
                    value = i < bytes.count && bytes[i] == quote ? quoted(&i, bytes) : token(&i, bytes)
                }
                // The first occurrence of a parameter counts (RFC 8288 §3.3 for rel).
                if !name.isEmpty, !parameters.contains(where: { $0.name == name }) { parameters.append((name, value)) }
            }
            links.append(Link(target: target, parameters: parameters))
            skipValue(&i, bytes)
        }
        return links
    }

    private static func skip(_ i: inout Int, _ bytes: [UInt8], while matches: (UInt8) -> Bool) {
        while i < bytes.count, matches(bytes[i]) { i += 1 }
    }

    /// Moves past the rest of a link-value: to the next comma outside quotes and `<…>`.
    private static func skipValue(_ i: inout Int, _ bytes: [UInt8]) {
        while i < bytes.count, bytes[i] != comma {
            if bytes[i] == quote {
                _ = quoted(&i, bytes)
            } else if bytes[i] == open {
                while i < bytes.count, bytes[i] != close { i += 1 }
                if i < bytes.count { i += 1 }
            } else {
                i += 1
            }
        }
    }

    private static func quoted(_ i: inout Int, _ bytes: [UInt8]) -> String {
        var value: [UInt8] = []
        i += 1
        while i < bytes.count, bytes[i] != quote {
            if bytes[i] == backslash, i + 1 < bytes.count { i += 1 }
            value.append(bytes[i])
            i += 1
        }
        if i < bytes.count { i += 1 }
        return String(decoding: value, as: UTF8.self)
    }

    private static func token(_ i: inout Int, _ bytes: [UInt8]) -> String {
        let start = i
        while i < bytes.count, bytes[i] != semicolon, bytes[i] != comma, bytes[i] != space, bytes[i] != tab { i += 1 }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }
}

/// Byte classes of HTTP syntax (RFC 9110).
enum HTTPText {
    /// A `tchar`: the bytes of a header name or a token.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
