import FoundationEssentials

/// URL operations the core needs, on URL strings.
enum URLText {
    /// `reference` resolved against `base` (RFC 3986), as an absolute http(s) URL string.
    static func resolve(_ reference: String, against base: String) -> String? {
        guard let baseURL = URL(string: base),
              let url = URL(string: reference, relativeTo: baseURL)?.absoluteURL,
              let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false
        else { return nil }
        return url.absoluteString
    }

    /// `url` with the query parameter `name` set to `value` (replacing every existing
    /// occurrence in place, or appended), all other parameters kept as they were.
    static func settingQuery(_ url: String, _ name: String, to value: String) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        var items = components.percentEncodedQueryItems ?? []
        let encodedName = encodeQueryComponent(name)
        let encodedValue = encodeQueryComponent(value)
        if let first = items.firstIndex(where: { $0.name == encodedName }) {
            items[first].value = encodedValue
            items = items.enumerated().filter { $0.offset == first || $0.element.name != encodedName }.map(\.element)
        } else {
            items.append(URLQueryItem(name: encodedName, value: encodedValue))
        }
        components.percentEncodedQueryItems = items
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
                let hex = Array("0123456789ABCDEF".utf8)
                encoded += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return encoded
    }
}
