/// Removes secrets from text meant for people (messages, body excerpts, server error fields),
/// whole and in every spelling a server or URL may give them: as written, percent-encoded, or
/// JSON-escaped (`\/`, `\u002B`). Compares bytes, never grapheme clusters (a secret followed by a
/// combining mark is still found), and is applied before any truncation, so no prefix of a secret
/// survives a cut.
struct Redactor: Sendable {
    static let replacement = "<redacted>"
    private let secrets: [[UInt8]]

    init(_ secrets: [String]) {
        // Longest first: a secret containing another is replaced whole.
        self.secrets = secrets.filter { !$0.isEmpty }.map { Array($0.utf8) }.sorted { $0.count > $1.count }
    }

    var isEmpty: Bool { secrets.isEmpty }

    func redact(_ text: String) -> String {
        guard !secrets.isEmpty else { return text }
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        var changed = false
        while i < bytes.count {
            if let end = secrets.lazy.compactMap({ match($0, in: bytes, at: i) }).first {
                out += Self.replacement.utf8
                i = end
                changed = true
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return changed ? String(decoding: out, as: UTF8.self) : text
    }

    func redact(_ error: SheafError) -> SheafError {
        guard !secrets.isEmpty else { return error }
        var error = error
        error.message = redact(error.message)
        error.url = error.url.map(redact)
        error.bodyExcerpt = error.bodyExcerpt.map(redact)
        error.serverMessage = error.serverMessage.map(redact)
        error.signal = error.signal.map(redact)
        return error
    }

    /// Where a spelling of `secret` starting at `start` ends, or nil.
    private func match(_ secret: [UInt8], in bytes: [UInt8], at start: Int) -> Int? {
        var position = start
        for wanted in secret {
            guard position < bytes.count else { return nil }
            let byte = bytes[position]
            if byte == wanted {
                position += 1
            } else if byte == UInt8(ascii: "%"), position + 2 < bytes.count,
                      let high = hexValue(bytes[position + 1]), let low = hexValue(bytes[position + 2]), high << 4 | low == wanted {
                position += 3
            } else if byte == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == wanted,
                      wanted == UInt8(ascii: "/") || wanted == UInt8(ascii: "\\") || wanted == UInt8(ascii: "\"") {
                position += 2
            } else if byte == UInt8(ascii: "\\"), wanted < 0x80, position + 5 < bytes.count, bytes[position + 1] == UInt8(ascii: "u"),
                      let a = hexValue(bytes[position + 2]), let b = hexValue(bytes[position + 3]),
                      let c = hexValue(bytes[position + 4]), let d = hexValue(bytes[position + 5]),
                      (UInt16(a) << 12 | UInt16(b) << 8 | UInt16(c) << 4 | UInt16(d)) == UInt16(wanted) {
                position += 6
            } else {
                return nil
            }
        }
        return position
    }
}
