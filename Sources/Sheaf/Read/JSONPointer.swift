/// An RFC 6901 JSON pointer: "" is the whole document, "/a/0" member "a", then element 0.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The unescaped reference tokens, outermost first.
    public let tokens: [String]

    /// Parses `text`; returns nil unless it is "" or starts with "/" and uses only "~0" and "~1".
    public init?(_ text: String) {
        if text.isEmpty {
            tokens = []
            return
        }
        // By Unicode scalars, not characters: a combining mark must not merge with "/" or "~0".
        guard text.unicodeScalars.first == "/" else { return nil }
        var result: [String] = []
        for raw in text.unicodeScalars.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = String.UnicodeScalarView()
            var iterator = raw.makeIterator()
            while let scalar = iterator.next() {
                guard scalar == "~" else {
                    token.append(scalar)
                    continue
                }
                switch iterator.next() {
                case "0": token.append("~")
                case "1": token.append("/")
                default: return nil
                }
            }
            result.append(String(token))
        }
        tokens = result
    }

    /// The pointer to `tokens` (unescaped).
    public init(tokens: [String]) {
        self.tokens = tokens
    }

    /// The pointer in its textual form.
    public var description: String {
        tokens.map { "/" + Self.escaping($0) }.joined()
    }

    /// `token` as it is written in a pointer: "~" as "~0", "/" as "~1". By Unicode scalars: a
    /// "~" or "/" followed by a combining mark is still escaped.
    static func escaping(_ token: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in token.unicodeScalars {
            switch scalar {
            case "~": escaped.append(contentsOf: "~0".unicodeScalars)
            case "/": escaped.append(contentsOf: "~1".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }
}
