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
        guard text.first == "/" else { return nil }
        // By Unicode scalars, not characters: a combining mark must not merge with "/" or "~0".
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

    /// The pointer in its textual form.
    public var description: String {
        tokens.map { "/" + $0.replacing("~", with: "~0").replacing("/", with: "~1") }
            .joined()
    }
}
