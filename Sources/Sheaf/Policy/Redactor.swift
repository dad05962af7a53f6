#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Removes secrets from text meant for people (messages, body excerpts, server error fields),
/// whole and in every spelling a server or URL may give them: as written, percent-encoded, or
/// JSON-escaped (`\/`, `\u002B`). Compares bytes, never grapheme clusters (a secret followed by a
/// combining mark is still found), and is applied before any truncation, so no prefix of a secret
/// survives a cut. The values of secret query parameters (`?api_key=…`) go too, whatever they are.
struct Redactor: Sendable, Equatable {
    static let replacement = "<redacted>"
    private let secrets: [[UInt8]]
    /// Lower-cased names of query parameters whose values are secret.
    private let parameters: Set<[UInt8]>

    /// Query parameters that carry secrets in the APIs Sheaf meets (OAuth, AWS and GCS signed
    /// URLs, API keys); a client adds its own.
    static let secretParameters = ["api_key", "apikey", "api-key", "key", "access_token", "refresh_token", "id_token",
                                   "token", "auth", "client_secret", "secret", "password", "passwd", "signature", "sig",
                                   "x-amz-signature", "x-amz-security-token", "x-amz-credential", "x-goog-signature",
                                   "x-goog-credential"]

    init(_ secrets: [String], parameters: [String] = Self.secretParameters) {
        // Longest first: a secret containing another is replaced whole.
        self.secrets = secrets.filter { !$0.isEmpty }.map { Array($0.utf8) }.sorted { $0.count > $1.count }
        self.parameters = Set(parameters.map { Array($0.lowercased().utf8) })
    }

    private init(secrets: [[UInt8]], parameters: Set<[UInt8]>) {
        self.secrets = secrets.sorted { $0.count > $1.count }
        self.parameters = parameters
    }

    /// This redactor, also hiding the values that `url` gives its secret parameters wherever
    /// they appear (a server may echo them in a body, in any shape). Values shorter than 6 bytes
    /// are left to the parameter rule: hiding every "42" would make messages useless.
    func addingSecretValues(in url: String) -> Redactor {
        let values = URLText.queryPairs(url)
            .filter { parameters.contains(Array($0.0.lowercased().utf8)) && $0.1.utf8.count >= 6 }
            .map { Array($0.1.utf8) }
        return values.isEmpty ? self : Redactor(secrets: secrets + values, parameters: parameters)
    }

    func redact(_ text: String) -> String {
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
            } else if let (valueStart, end) = secretParameterValue(in: bytes, at: i) {
                out += bytes[i..<valueStart]
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

    /// At a `?` or `&` that starts a secret parameter with a value: where the value starts and
    /// ends (at `&`, `#`, a quote, a bracket, a backslash or white space).
    private func secretParameterValue(in bytes: [UInt8], at start: Int) -> (Int, Int)? {
        guard !parameters.isEmpty, bytes[start] == UInt8(ascii: "?") || bytes[start] == UInt8(ascii: "&"),
              let equals = bytes[(start + 1)...].prefix(64).firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let name = bytes[(start + 1)..<equals].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        guard parameters.contains(name) else { return nil }
        let stops: Set<UInt8> = Set("&#\\\"'<>; \t\r\n)]}".utf8)
        let end = bytes[(equals + 1)...].firstIndex { stops.contains($0) } ?? bytes.count
        return end > equals + 1 ? (equals + 1, end) : nil
    }

    /// This redactor, also hiding `secrets`.
    func adding(_ secrets: [String]) -> Redactor {
        secrets.isEmpty ? self : Redactor(secrets: self.secrets + secrets.filter { !$0.isEmpty }.map { Array($0.utf8) },
                                          parameters: parameters)
    }

    /// Whether the query parameter `name` carries a secret.
    func isSecret(parameter name: String) -> Bool {
        parameters.contains(Array(name.lowercased().utf8))
    }

    /// `url` without its secret query parameters (but `keeping`, a list's paging parameter, whose
    /// value is a page or a cursor), and with any credential it still spells redacted: a URL to
    /// hand out (a resume token).
    func removingSecretParameters(of url: String, keeping: String?) -> String {
        var stripped = url
        if var components = URLComponents(string: url), let items = components.percentEncodedQueryItems {
            let kept = items.filter { item in
                let name = URLText.percentDecoded(item.name)
                return name == keeping || !isSecret(parameter: name)
            }
            if kept.count != items.count {
                components.percentEncodedQueryItems = kept.isEmpty ? nil : kept
                stripped = components.string ?? url
            }
        }
        return redact(stripped)
    }

    /// `url` with the secret query parameters of `source` (a list's own first URL) set again:
    /// what `removingSecretParameters` took out of a URL of that list.
    /// Never into a URL of another origin: the values are the list's secrets.
    func restoringSecretParameters(of source: String, in url: String, keeping: String?) -> String {
        guard let origin = Origin(source), Origin(url) == origin else { return url }
        var url = url
        for (name, value) in URLText.queryPairs(source) where name != keeping && isSecret(parameter: name) {
            url = URLText.settingQuery(url, name, to: value) ?? url
        }
        return url
    }

    func redact(_ error: SheafError) -> SheafError {
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
