#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// URL operations the core needs, on URL strings.
enum URLText {
    /// `reference` resolved against `base` (RFC 3986), as an absolute http(s) URL string.
    static func resolve(_ reference: String, against base: String) -> String? {
        // The common case, a next link that is a plain absolute URL, needs no parsing.
        if plainHTTP(reference) != nil { return reference }
        return resolveByParsing(reference, against: base)
    }

    /// `resolve`, by Foundation's URL parser (every case).
    static func resolveByParsing(_ reference: String, against base: String) -> String? {
        guard let baseURL = URL(string: escapingInvalid(base)),
              let url = URL(string: escapingInvalid(reference), relativeTo: baseURL)?.absoluteURL,
              let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false
        else { return nil }
        return url.absoluteString
    }

    /// `url` with every byte a URL may not hold after its authority (`[` and `]` in a query, a
    /// space, non-ASCII, a `%` that starts no %XX escape...) percent-encoded, and every existing
    /// %XX escape kept. Servers write links like `?page%5Bsize%5D=40&page[after]=X`; handed such
    /// a string, URL(string:) escaped the whole of it, `%` included, and the link's parameters
    /// changed names. A stray `%` did the same: `100%/` + the segment `a%3Ab` went out as
    /// `100%25/a%253Ab`, another resource. The authority is the one after a scheme only: a
    /// "://" later in a relative reference (`search?q=a b&u=https://x/%7E`) starts none.
    static func escapingInvalid(_ url: String) -> String {
        let bytes = Array(url.utf8)
        var start = 0
        if let schemeEnd = url.firstRange(of: "://"), isScheme(url.utf8[..<schemeEnd.lowerBound.samePosition(in: url.utf8)!]) {
            start = url.utf8.distance(from: url.utf8.startIndex, to: schemeEnd.upperBound.samePosition(in: url.utf8)!)
            while start < bytes.count, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[start]) {
                start += 1
            }
        }
        return escapingInvalid(url, from: start)
    }

    /// `part` (a piece of a URL after its authority: a path, a query, or a piece of either) with
    /// every byte a URL may not hold there percent-encoded as `escapingInvalid(_:)` does, and
    /// every existing %XX escape kept; no authority is looked for in it.
    static func escapingInvalid(part: String) -> String {
        escapingInvalid(part, from: 0)
    }

    /// `url` with the bytes from `start` on escaped (`escapingInvalid(_:)`).
    private static func escapingInvalid(_ url: String, from start: Int) -> String {
        let bytes = Array(url.utf8)
        /// Whether the byte at `i` stays as written: a `%` only when it starts an escape.
        func kept(_ i: Int) -> Bool {
            guard bytes[i] == UInt8(ascii: "%") else { return isAllowedInURL(bytes[i]) }
            return i + 2 < bytes.count && hexValue(bytes[i + 1]) != nil && hexValue(bytes[i + 2]) != nil
        }
        guard (start..<bytes.count).contains(where: { !kept($0) }) else { return url }
        var out = Array(bytes[..<start])
        for i in start..<bytes.count {
            if kept(i) {
                out.append(bytes[i])
            } else {
                out += percentEscape(bytes[i])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `text` is a URI scheme (RFC 3986 §3.1: a letter, then letters, digits, "+", "-", ".").
    private static func isScheme(_ text: Substring.UTF8View) -> Bool {
        guard let first = text.first, (first | 0x20) >= UInt8(ascii: "a"), (first | 0x20) <= UInt8(ascii: "z") else { return false }
        return text.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
                true
            default:
                false
            }
        }
    }

    /// `%XX` for `byte`.
    private static func percentEscape(_ byte: UInt8) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        return [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
    }

    /// RFC 3986's unreserved and reserved characters but `[` and `]`, and `%` (of an escape).
    private static func isAllowedInURL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("-._~!$&'()*+,;=:@/?#%".utf8).contains(byte)
        }
    }

    /// `url` with the query parameter `name` set to `value` (replacing every existing
    /// occurrence in place, or appended), all other parameters kept as they were.
    static func settingQuery(_ url: String, _ name: String, to value: String) -> String? {
        settingPlainQuery(url, name, to: value) ?? settingQueryByParsing(url, name, to: value)
    }

    /// `settingQuery` for a plain URL (`plainHTTP`) whose query has no empty parameter, by
    /// splitting the query at "&" and "=" (a page's URL is made this way, twice a page); nil
    /// for any other URL, which `settingQueryByParsing` takes.
    static func settingPlainQuery(_ url: String, _ name: String, to value: String) -> String? {
        guard let queryStart = plainHTTP(url) else { return nil }
        let utf8 = url.utf8
        let setting = encodeQueryComponent(name) + "=" + encodeQueryComponent(value)
        guard let questionMark = queryStart else { return url + "?" + setting }
        let query = utf8[utf8.index(after: questionMark)...]
        var parameters: [Substring.UTF8View] = []
        if !query.isEmpty {
            for parameter in query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
                guard !parameter.isEmpty else { return nil }
                parameters.append(Substring(parameter).utf8)
            }
        }
        var kept: [String] = []
        var replaced = false
        for parameter in parameters {
            // No escape in a plain URL: a parameter's name is its text up to "=".
            let parameterName = parameter.split(separator: UInt8(ascii: "="), maxSplits: 1,
                                                omittingEmptySubsequences: false)[0]
            guard parameterName.elementsEqual(name.utf8) else {
                kept.append(String(Substring(parameter)))
                continue
            }
            if !replaced { kept.append(setting) }
            replaced = true
        }
        if !replaced { kept.append(setting) }
        return String(url[..<questionMark]) + "?" + kept.joined(separator: "&")
    }

    /// Whether `url` is a plain absolute http(s) URL: a lowercase scheme, a host of letters,
    /// digits, "." and "-" (a port after ":"), then only RFC 3986 characters that no parser
    /// changes (no "%" escape, no fragment, no "[" or "]", no dot segment). Nil when it is not;
    /// else where its query's "?" is (nil inside: it has none).
    static func plainHTTP(_ url: String) -> String.Index?? {
        let utf8 = url.utf8
        var index: String.Index
        if utf8.starts(with: "http://".utf8) {
            index = utf8.index(utf8.startIndex, offsetBy: 7)
        } else if utf8.starts(with: "https://".utf8) {
            index = utf8.index(utf8.startIndex, offsetBy: 8)
        } else {
            return nil
        }
        let hostStart = index
        var sawPort = false
        while index < utf8.endIndex, utf8[index] != UInt8(ascii: "/"), utf8[index] != UInt8(ascii: "?") {
            switch utf8[index] {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"), UInt8(ascii: "."):
                if sawPort { return nil }
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                break
            case UInt8(ascii: ":") where index != hostStart && !sawPort:
                sawPort = true
            default:
                return nil
            }
            index = utf8.index(after: index)
        }
        guard index != hostStart, utf8[utf8.index(before: index)] != UInt8(ascii: ":") else { return nil }
        var question: String.Index? = nil
        var segmentStart = index   // where the current path segment starts, after its "/"
        while index < utf8.endIndex {
            let byte = utf8[index]
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"), UInt8(ascii: "$"),
                 UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","),
                 UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "&"):
                break
            case UInt8(ascii: "/"), UInt8(ascii: "?"):
                if question == nil {
                    let segment = utf8[segmentStart..<index]
                    if segment.elementsEqual(".".utf8) || segment.elementsEqual("..".utf8) { return nil }
                    segmentStart = utf8.index(after: index)
                    if byte == UInt8(ascii: "?") { question = index }
                }
            default:
                return nil
            }
            index = utf8.index(after: index)
        }
        if question == nil {
            let segment = utf8[segmentStart..<index]
            if segment.elementsEqual(".".utf8) || segment.elementsEqual("..".utf8) { return nil }
        }
        return .some(question)
    }

    /// `settingQuery`, by Foundation's URLComponents (every case).
    static func settingQueryByParsing(_ url: String, _ name: String, to value: String) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        var items = components.percentEncodedQueryItems ?? []
        let encodedName = encodeQueryComponent(name)
        let encodedValue = encodeQueryComponent(value)
        // Names compare decoded: a server may write "page[number]" or "page%5Bnumber%5D".
        if let first = items.firstIndex(where: { percentDecoded($0.name) == name }) {
            items[first] = URLQueryItem(name: encodedName, value: encodedValue)
            items = items.enumerated().filter { $0.offset == first || percentDecoded($0.element.name) != name }.map(\.element)
        } else {
            items.append(URLQueryItem(name: encodedName, value: encodedValue))
        }
        components.percentEncodedQueryItems = items
        return components.string
    }

    /// `url` without the query parameters whose (decoded) names `names` holds, compared
    /// case-insensitively; the others kept as they were. Nil when `url` does not parse.
    static func removingQuery(_ url: String, named names: Set<String>) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        guard let items = components.percentEncodedQueryItems, !names.isEmpty else { return url }
        let kept = items.filter { !names.contains(percentDecoded($0.name).lowercased()) }
        guard kept.count != items.count else { return url }
        components.percentEncodedQueryItems = kept.isEmpty ? nil : kept
        return components.string
    }

    /// `url` with the given parameters appended, percent-encoded.
    static func appendingQuery(_ url: String, _ parameters: [(name: String, value: String)]) -> String? {
        guard !parameters.isEmpty else { return url }
        guard var components = URLComponents(string: url) else { return nil }
        var items = components.percentEncodedQueryItems ?? []
        for (name, value) in parameters {
            items.append(URLQueryItem(name: encodeQueryComponent(name), value: encodeQueryComponent(value)))
        }
        components.percentEncodedQueryItems = items
        return components.string
    }

    /// The (decoded) value of the first query parameter `name` in `url`.
    static func queryValue(_ url: String, _ name: String) -> String? {
        URLComponents(string: url)?.queryItems?.first { $0.name == name }?.value
    }

    /// Whether `url` carries user information (user:password@).
    static func hasUserInfo(_ url: String) -> Bool {
        guard let components = URLComponents(string: url) else { return false }
        return components.user != nil || components.password != nil
    }

    /// Every query parameter of `url` as decoded (name, value) pairs, in order.
    static func queryPairs(_ url: String) -> [(String, String)] {
        (URLComponents(string: url)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }
    }

    /// `url` without its query and fragment: the resource that pages of one list share.
    static func withoutQuery(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.query = nil
        components.fragment = nil
        return components.string ?? url
    }

    /// Whether `a` and `b` name the same resource with the same query parameters, in any order
    /// (a server's next link may list them in its own order).
    static func sameResource(_ a: String, _ b: String) -> Bool {
        if a == b { return true }
        guard withoutQuery(a) == withoutQuery(b) else { return false }
        let order = { (x: (String, String), y: (String, String)) in x.0 != y.0 ? x.0 < y.0 : x.1 < y.1 }
        return queryPairs(a).sorted(by: order).elementsEqual(queryPairs(b).sorted(by: order), by: ==)
    }

    /// `text` with its %XX escapes decoded (as UTF-8; an invalid escape is kept as written).
    static func percentDecoded(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count,
               let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters and "/", for a value that
    /// fills part of a path (GitHub's "owner/repo" fills two segments). A value that makes a
    /// whole segment "." or ".." is the caller's to escape further.
    static func encodePathValue(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            if byte == UInt8(ascii: "/") || isUnreserved(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += String(decoding: percentEscape(byte), as: UTF8.self)
            }
        }
        return encoded
    }

    /// Whether `byte` is an RFC 3986 unreserved character (ALPHA / DIGIT / "-" / "." / "_" / "~").
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    static func encodeQueryComponent(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += String(decoding: percentEscape(byte), as: UTF8.self)
            }
        }
        return encoded
    }
}
