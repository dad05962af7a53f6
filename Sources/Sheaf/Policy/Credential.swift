#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a client proves who it is. Sent only to the base URL's origin (never to a next link,
/// redirect or absolute URL elsewhere), and kept out of every message in every spelling.
public enum Credential: Sendable, Equatable {
    /// `Authorization: Bearer <token>`.
    case bearer(String)
    /// `Authorization: Basic base64(user:password)` (RFC 7617).
    case basic(user: String, password: String)
    /// An API key in the request header `name`.
    case apiKeyHeader(name: String, value: String)
    /// An API key in the query parameter `name`.
    case apiKeyQuery(name: String, value: String)

    /// Checks that the credential can be sent as written.
    /// - Throws: `.invalidArgument` naming what is wrong (never the secret itself).
    package func validated() throws(SheafError) -> Credential {
        func check(_ ok: Bool, _ what: String) throws(SheafError) {
            if !ok { throw SheafError(.invalidArgument, what) }
        }
        switch self {
        case .bearer(let token):
            try check(!token.isEmpty, "a bearer token must be a non-empty string")
            try check(!HeaderRules.hasControl(token), "the bearer token contains control characters")
        case .basic(let user, let password):
            try check(!user.contains(":"), "a Basic user name must not contain ':' (RFC 7617)")
            try check(!HeaderRules.hasControl(user) && !HeaderRules.hasControl(password),
                      "the Basic user name or password contains control characters")
        case .apiKeyHeader(let name, let value):
            try check(HeaderRules.isToken(name), "the API key header name \"\(name)\" is not an HTTP field name")
            try check(!HeaderRules.framingHeaders.contains(name.lowercased()),
                      "the API key header cannot be \(name): the transport writes it from the URL and the body")
            try check(!value.isEmpty && !HeaderRules.hasControl(value), "an API key must be non-empty, without control characters")
        case .apiKeyQuery(let name, let value):
            try check(!name.isEmpty && !HeaderRules.hasControl(name), "the API key parameter name must be non-empty, without control characters")
            try check(!value.isEmpty && !HeaderRules.hasControl(value), "an API key must be non-empty, without control characters")
        }
        return self
    }

    /// Every text that gives the credential away, for `Redactor`.
    var secrets: [String] {
        switch self {
        case .bearer(let token): [token]
        case .basic(let user, let password): [password, "\(user):\(password)", basicToken(user, password)]
        case .apiKeyHeader(_, let value), .apiKeyQuery(_, let value): [value]
        }
    }

    /// Adds the credential to a request for the base URL's origin, in place of any header of
    /// the same name a caller gave (a request's own Authorization went out beside the client's,
    /// two credentials in one request, the server free to pick either).
    func apply(to headers: inout [HTTPHeader], url: inout String) throws(SheafError) {
        switch self {
        case .bearer(let token):
            headers.replace(with: HTTPHeader(name: "Authorization", value: "Bearer \(token)"))
        case .basic(let user, let password):
            headers.replace(with: HTTPHeader(name: "Authorization", value: "Basic \(basicToken(user, password))"))
        case .apiKeyHeader(let name, let value):
            headers.replace(with: HTTPHeader(name: name, value: value))
        case .apiKeyQuery(let name, let value):
            guard let keyed = URLText.settingQuery(url, name, to: value) else {
                throw SheafError(.invalidArgument, "cannot add the API key parameter \(name) to the URL")
            }
            url = keyed
        }
    }

    /// The query parameter that carries the credential, whose value messages must hide.
    var queryParameter: String? {
        if case .apiKeyQuery(let name, _) = self { return name }
        return nil
    }

    private func basicToken(_ user: String, _ password: String) -> String {
        Data("\(user):\(password)".utf8).base64EncodedString()
    }
}

/// RFC 9110's rules for what a request may carry in its method and header fields.
package enum HeaderRules {
    /// A `token` (RFC 9110 §5.6.2): what a method or field name must be.
    package static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// Whether `text` holds a control character (CR, LF and NUL included) but tab.
    package static func hasControl(_ text: String) -> Bool {
        text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// Headers that say where a message goes and where it ends: the transport writes them from
    /// the URL and the body. From a caller they would disagree with what is sent: a
    /// `Content-Length: 0` on a POST leaves its body on a kept-alive connection, where the
    /// server reads it as a second request (request smuggling).
    static let framingHeaders: Set<String> = ["content-length", "transfer-encoding", "host", "connection"]

    /// Checks one header a caller gives (client, list and request headers all pass here).
    /// - Throws: `.invalidArgument` for a name that is not a token, a header that frames the
    ///   message (`framingHeaders`), or a value with CR, LF, NUL or another control character
    ///   (a header injection).
    package static func check(_ header: HTTPHeader) throws(SheafError) -> HTTPHeader {
        guard isToken(header.name) else {
            throw SheafError(.invalidArgument, "\"\(header.name)\" is not an HTTP header name (RFC 9110 token)")
        }
        guard !framingHeaders.contains(header.name.lowercased()) else {
            throw SheafError(.invalidArgument, "the header \(header.name) cannot be set: the transport writes it from the URL "
                             + "and the body (Content-Length, Transfer-Encoding, Host and Connection frame the message)")
        }
        guard !hasControl(header.value) else {
            throw SheafError(.invalidArgument, "the value of the header \(header.name) contains a control character (CR, LF, ...)")
        }
        return header
    }

    /// Headers that carry credentials of their own: never sent to a foreign origin.
    static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]
}
