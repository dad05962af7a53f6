/// The URL of a child list, made from one item of a parent list (issue 28, "many lists as one
/// job"): `/repos/{/full_name}/issues` fills `{/full_name}` with the item's value at that JSON
/// pointer.
///
/// A template is parsed once; expanding it against an item never throws: a value it cannot use
/// (missing, null, an object...) comes back as a `Failure` naming the pointer and what was found,
/// and the caller decides whether to skip that item or fail the job.
///
/// Values are percent-encoded for where they stand. In the path, everything but RFC 3986's
/// unreserved characters and "/" is encoded ("/" is kept so GitHub's `owner/repo` fills two
/// segments), and a segment a value makes "." or ".." has its dots encoded, so a value never
/// climbs out of the path the template names. After the template's "?", a value is encoded for a
/// query value ("/", "&", "=", "+" encoded too). A template that starts with "/" is joined to the
/// parent URL's origin (scheme, host, port); an absolute one must be http(s) with its host written
/// out, so no item can send a request to a host of its choosing.
package struct ChildTemplate: Sendable, Hashable, CustomStringConvertible {
    /// The template as it was written.
    package let text: String
    /// The literal text (escaped) and the values, in order.
    private let parts: [Part]
    /// The scheme, host and port of an absolute template; nil for a path, joined to the parent's.
    private let absoluteOrigin: String?

    /// One piece of the template, and whether it stands in the query (after the first "?").
    private enum Part: Sendable, Hashable {
        case literal(String, inQuery: Bool)
        case value(JSONPointer, inQuery: Bool)
    }

    /// Parses `text`: a path ("/repos/{/full_name}/issues") or an absolute http(s) URL, with one or
    /// more values, each a JSON pointer in braces.
    /// - Throws: `SheafError.Code.invalidArgument` for unbalanced braces, an empty or invalid JSON
    ///   pointer, no value at all, a fragment, a value in the host, or a template that is neither
    ///   a path nor an absolute http(s) URL.
    package init(_ text: String) throws(SheafError) {
        self.text = text
        func refuse(_ reason: String) -> SheafError {
            SheafError(.invalidArgument, "the child URL template \"\(text)\" \(reason)",
                       hint: "a template is a path or an http(s) URL with values as JSON pointers in braces, e.g. /repos/{/full_name}/issues")
        }
        var parts: [Part] = []
        var literal = String.UnicodeScalarView()
        var pointer: String.UnicodeScalarView? = nil
        var inQuery = false
        // By Unicode scalars, as JSONPointer reads: a combining mark must not hide a brace.
        for scalar in text.unicodeScalars {
            if var open = pointer {
                switch scalar {
                case "}":
                    let pointerText = String(open)
                    guard !pointerText.isEmpty else { throw refuse("has an empty value {}: name the value by its JSON pointer, e.g. {/id}") }
                    guard let parsed = JSONPointer(pointerText) else {
                        throw refuse("has {\(pointerText)}, which is not a JSON pointer (RFC 6901: it starts with \"/\", and \"~\" is written only as ~0 or ~1)")
                    }
                    guard !parsed.tokens.isEmpty else { throw refuse("has an empty value {}: name the value by its JSON pointer, e.g. {/id}") }
                    if !literal.isEmpty { parts.append(.literal(String(literal), inQuery: inQuery)) }
                    literal = String.UnicodeScalarView()
                    parts.append(.value(parsed, inQuery: inQuery))
                    pointer = nil
                case "{":
                    throw refuse("has a \"{\" inside a value: a value is closed by \"}\" before the next one opens")
                default:
                    open.append(scalar)
                    pointer = open
                }
                continue
            }
            switch scalar {
            case "{": pointer = String.UnicodeScalarView()
            case "}": throw refuse("has a \"}\" that closes no value")
            case "#": throw refuse("has a fragment (\"#\"), which is never sent to a server")
            case "?" where !inQuery:
                if !literal.isEmpty { parts.append(.literal(String(literal), inQuery: false)) }
                literal = "?".unicodeScalars
                inQuery = true
            default:
                literal.append(scalar)
            }
        }
        guard pointer == nil else { throw refuse("has a \"{\" that is never closed") }
        if !literal.isEmpty { parts.append(.literal(String(literal), inQuery: inQuery)) }
        guard parts.contains(where: { if case .value = $0 { true } else { false } }) else {
            throw refuse("has no value in braces: every parent item would name the same child")
        }

        // What the template starts with decides where the child is.
        guard case .literal(let first, let startsWithQuery) = parts[0] else {
            throw refuse("starts with a value: it must start with \"/\" (a path on the parent's origin) or with http:// or https://")
        }
        let lowered = first.lowercased()
        if startsWithQuery {
            throw refuse("is neither a path (starting with \"/\") nor an absolute http(s) URL")
        } else if first.hasPrefix("/") {
            guard !first.hasPrefix("//") else {
                throw refuse("starts with \"//\", a host of its own: write the scheme (https://host/...) or a path (/...)")
            }
            absoluteOrigin = nil
        } else if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            let afterScheme = first[first.firstRange(of: "://")!.upperBound...]
            // The first literal ends at the first "?", so only a value can end it before the host does.
            guard let authorityEnd = afterScheme.firstIndex(of: "/") else {
                guard parts.count > 1, case .literal(_, inQuery: true) = parts[1] else {
                    throw refuse("has a value in its host: an absolute template writes its scheme, host and port out")
                }
                throw refuse("has no path: an absolute template names a path on its host before any query or value")
            }
            let prefix = String(first[..<authorityEnd])
            guard let origin = Origin(prefix + "/"), !URLText.hasUserInfo(prefix + "/") else {
                throw refuse("does not start with a valid http(s) scheme, host and port (no user information)")
            }
            absoluteOrigin = Self.originText(origin)
            parts[0] = .literal(String(first[authorityEnd...]), inQuery: false)
        } else {
            throw refuse("is neither a path (starting with \"/\") nor an absolute http(s) URL")
        }
        // The literal text is the user's: what a URL may not hold is escaped, escapes are kept.
        self.parts = parts.map { part in
            guard case .literal(let text, let inQuery) = part else { return part }
            return .literal(URLText.escapingInvalid(part: text), inQuery: inQuery)
        }
    }

    /// The JSON pointers of the values, in the order they appear.
    package var pointers: [JSONPointer] {
        parts.compactMap { if case .value(let pointer, _) = $0 { pointer } else { nil } }
    }

    /// Whether the template is a path, joined to the parent's origin.
    package var isRelative: Bool { absoluteOrigin == nil }

    package var description: String { text }

    /// The child URL for the parent item `item` (one JSON value, validated here).
    /// - Parameters:
    ///   - item: the item's JSON text.
    ///   - parentURL: the URL of the parent page the item came from; a path template takes its origin.
    /// - Returns: the child URL, or why this item names none.
    package func expand(item: [UInt8], parentURL: String) -> Result<ChildURL, Failure> {
        item.withUnsafeBufferPointer { buffer in
            let scanner = JSONScanner(buffer)
            let start = scanner.skipWhitespace(0)
            guard start < buffer.count, let end = try? scanner.skipValue(at: start, depth: 0),
                  scanner.skipWhitespace(end) == buffer.count
            else { return .failure(Failure(pointer: nil, found: .invalidItem, parentURL: parentURL)) }
            return expand(scanner, start..<end, parentURL: parentURL)
        }
    }

    /// The child URL for the item at `item` in a page body the page reader has validated (`Page`).
    /// - Parameters:
    ///   - item: the item's byte range in `body` (`Page.items`).
    ///   - body: the page's body.
    ///   - parentURL: the URL of that page; a path template takes its origin.
    /// - Returns: the child URL, or why this item names none.
    package func expand(item: Range<Int>, of body: [UInt8], parentURL: String) -> Result<ChildURL, Failure> {
        body.withUnsafeBufferPointer { expand(JSONScanner($0), item, parentURL: parentURL) }
    }

    private func expand(_ scanner: JSONScanner, _ item: Range<Int>, parentURL: String) -> Result<ChildURL, Failure> {
        let origin: String
        if let absoluteOrigin {
            origin = absoluteOrigin
        } else {
            guard let parent = Origin(parentURL) else {
                return .failure(Failure(pointer: nil, found: .parentWithoutOrigin, parentURL: parentURL))
            }
            origin = Self.originText(parent)
        }
        // The path's bytes, each marked when a value wrote it, then the query as it is.
        var path: [UInt8] = []
        var fromValue: [Bool] = []
        var query = ""
        var values: [String] = []
        for part in parts {
            switch part {
            case .literal(let text, inQuery: true):
                query += text
            case .literal(let text, inQuery: false):
                path += Array(text.utf8)
                fromValue += Array(repeating: false, count: text.utf8.count)
            case .value(let pointer, let inQuery):
                let value: String
                switch Self.value(at: pointer, in: item, scanner) {
                case .text(let text): value = text
                case .unusable(let found): return .failure(Failure(pointer: pointer, found: found, parentURL: parentURL))
                }
                // A NUL names no resource, and the value reaches C as the child's tag, where it
                // would end the string early.
                guard !value.utf8.contains(0) else { return .failure(Failure(pointer: pointer, found: .nul, parentURL: parentURL)) }
                values.append(value)
                if inQuery {
                    query += URLText.encodeQueryComponent(value)
                } else {
                    // An empty value would leave an empty segment: another resource, often the parent.
                    guard !value.isEmpty else { return .failure(Failure(pointer: pointer, found: .emptyString, parentURL: parentURL)) }
                    let encoded = URLText.encodePathValue(value)
                    path += Array(encoded.utf8)
                    fromValue += Array(repeating: true, count: encoded.utf8.count)
                }
            }
        }
        return .success(ChildURL(url: origin + Self.escapingDotSegments(path, fromValue: fromValue) + query, values: values))
    }

    /// `path` with the dots of every "." or ".." segment a value wrote (wholly or in part) as
    /// "%2E": such a segment would climb the path when a server or a proxy normalises it.
    private static func escapingDotSegments(_ path: [UInt8], fromValue: [Bool]) -> String {
        var out: [UInt8] = []
        var start = 0
        while start <= path.count {
            let end = path[start...].firstIndex(of: UInt8(ascii: "/")) ?? path.count
            let segment = path[start..<end]
            if (1...2).contains(segment.count), segment.allSatisfy({ $0 == UInt8(ascii: ".") }),
               fromValue[start..<end].contains(true) {
                for _ in segment { out += Array("%2E".utf8) }
            } else {
                out += segment
            }
            if end < path.count { out.append(UInt8(ascii: "/")) }
            start = end + 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The text of the value at `pointer`: a string as it is, a number as its JSON text, a
    /// boolean as true or false; what was found instead, otherwise.
    private static func value(at pointer: JSONPointer, in item: Range<Int>, _ scanner: JSONScanner) -> Value {
        guard let range = scanner.locate(pointer, in: item) else { return .unusable(.missing) }
        switch scanner.bytes[range.lowerBound] {
        case UInt8(ascii: "\""):
            guard let text = try? scanner.decodeString(at: range.lowerBound) else { return .unusable(.invalidItem) }
            return .text(text)
        case UInt8(ascii: "n"): return .unusable(.null)
        case UInt8(ascii: "{"): return .unusable(.object)
        case UInt8(ascii: "["): return .unusable(.array)
        default: return .text(String(decoding: scanner.bytes[range], as: UTF8.self)) // a number, true, false
        }
    }

    /// A value read from an item for a template.
    private enum Value {
        case text(String)
        case unusable(Failure.Found)
    }

    /// "scheme://host[:port]", the port left out when it is the scheme's default.
    private static func originText(_ origin: Origin) -> String {
        let host = origin.host.contains(":") && !origin.host.hasPrefix("[") ? "[\(origin.host)]" : origin.host
        let isDefaultPort = (origin.scheme == "https" && origin.port == 443) || (origin.scheme == "http" && origin.port == 80)
        return "\(origin.scheme)://\(host)" + (isDefaultPort ? "" : ":\(origin.port)")
    }

    /// Why a parent item names no child: the value a template needs is not one it can use.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What the template found where it needed a string, a number or a boolean.
        package enum Found: Sendable, Hashable {
            /// The item has no value at the pointer.
            case missing
            case null
            case object
            case array
            /// An empty string, in the path (it would leave an empty segment).
            case emptyString
            /// A string holding a NUL (U+0000).
            case nul
            /// The item is not one JSON value (only when the caller hands its bytes in).
            case invalidItem
            /// The template is a path, and the parent URL has no http(s) origin to join it to.
            case parentWithoutOrigin
        }

        /// The pointer whose value could not be used; nil for `.invalidItem` and `.parentWithoutOrigin`.
        package let pointer: JSONPointer?
        package let found: Found
        /// The URL of the parent page the item came from.
        package let parentURL: String

        /// A sentence for people, naming the pointer and what was found.
        package var description: String {
            let at = pointer.map { "\"\($0)\"" } ?? ""
            switch found {
            case .missing: return "a parent item has no value at \(at)"
            case .null: return "a parent item has null at \(at), not a string, number or boolean"
            case .object: return "a parent item has an object at \(at), not a string, number or boolean"
            case .array: return "a parent item has an array at \(at), not a string, number or boolean"
            case .emptyString: return "a parent item has an empty string at \(at), which would leave an empty path segment"
            case .nul: return "a parent item has a string holding a NUL character at \(at), which names no resource"
            case .invalidItem: return "a parent item is not one JSON value"
            case .parentWithoutOrigin: return "the parent URL \(parentURL) is not an absolute http(s) URL to join a path template to"
            }
        }

        /// The failure as the error of a job that fails on it (rather than skipping the item).
        package var error: SheafError {
            SheafError(.badPage, "\(parentURL): \(description)", url: parentURL, jsonPointer: pointer?.description,
                       hint: found == .parentWithoutOrigin ? nil : "skip such parent items, or name another value in the template")
        }
    }
}

/// A child list's URL, as a template made it from a parent item. Two parent items that name the
/// same child make equal values (the encoding is canonical), so a set of them fetches each child once.
package struct ChildURL: Sendable, Hashable, CustomStringConvertible {
    /// The absolute URL.
    package let url: String
    /// The texts the item's values filled the template with, in order (not yet encoded).
    package var values: [String] = []

    package var description: String { url }
}
