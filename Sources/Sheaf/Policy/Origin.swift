#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The (scheme, host, port) triple that decides where credentials may go (RFC 6454).
struct Origin: Hashable, Sendable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int

    /// The origin of an absolute http or https URL; nil for anything else.
    init?(_ urlString: String) {
        guard let url = URL(string: urlString), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https",
              let host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        self.scheme = scheme
        self.host = host
        // The port as written decides, not as parsed: a port that overflows parses as none, and
        // must not pass for the default port.
        switch Self.portText(urlString) {
        case nil, "":
            port = scheme == "https" ? 443 : 80
        case let text?:
            guard text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let number = Int(text), number <= 65_535, url.port == number else { return nil }
            port = number
        }
    }

    /// The port in the authority of `url` as written ("" for "host:"), or nil when there is none.
    private static func portText(_ url: String) -> Substring? {
        guard let schemeEnd = url.firstRange(of: "://") else { return nil }
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            authority = authority[authority.index(after: close)...]
        }
        guard let colon = authority.firstIndex(of: ":") else { return nil }
        return authority[authority.index(after: colon)...]
    }

    var description: String { "\(scheme)://\(host):\(port)" }
}
