import CSheafHeader
import Sheaf

/// The `sheaf_credential_reply` behind the opaque pointer: one call of a credential provider,
/// and its answer. Valid only during that call.
final class CredentialReply: @unchecked Sendable {
    // Safe: made, used and read back on the provider's one thread, within one call.
    let refresh: Bool
    var value: String?
    var failure: String?

    init(refresh: Bool) {
        self.refresh = refresh
    }

    static func from(_ pointer: OpaquePointer?) -> CredentialReply? {
        pointer.map { Unmanaged<CredentialReply>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

/// A `CredentialProvider` whose credentials come from the embedder's C function.
func cCredentialProvider(kind: sheaf_auth, name: String?, function: sheaf_credential_fn,
                         userData: CUserData) throws(SheafError) -> CredentialProvider {
    func named() throws(SheafError) -> String {
        guard let name else { throw SheafError(.invalidArgument, "this auth kind needs a name (the user, header or parameter)") }
        return name
    }
    let make: @Sendable (String) -> Credential
    switch kind {
    case SHEAF_AUTH_BEARER: make = { .bearer($0) }
    case SHEAF_AUTH_BASIC: let user = try named(); make = { .basic(user: user, password: $0) }
    case SHEAF_AUTH_API_KEY_HEADER: let header = try named(); make = { .apiKeyHeader(name: header, value: $0) }
    case SHEAF_AUTH_API_KEY_QUERY: let parameter = try named(); make = { .apiKeyQuery(name: parameter, value: $0) }
    default:
        throw SheafError(.invalidArgument, "a credential provider needs SHEAF_AUTH_BEARER, BASIC, API_KEY_HEADER or API_KEY_QUERY")
    }
    // The name is checked now, with a stand-in value, rather than at the first request.
    _ = try make("x").validated()
    return CredentialProvider(queryParameter: kind == SHEAF_AUTH_API_KEY_QUERY ? name : nil) { refresh in
        let reply = CredentialReply(refresh: refresh)
        let pointer = Unmanaged.passRetained(reply)
        function(OpaquePointer(pointer.toOpaque()), userData.pointer)
        pointer.release()
        guard let value = reply.value else {
            let why = reply.failure.map { ": \($0)" } ?? ""
            return .failure(SheafError(.credential, "the credential provider gave no credential\(why)"))
        }
        return .success(make(value))
    }
}

// MARK: - Exports

@c @implementation
public func sheaf_credential_reply_is_refresh(_ reply: OpaquePointer?) -> Int32 {
    CredentialReply.from(reply)?.refresh == true ? 1 : 0
}

@c @implementation
public func sheaf_credential_reply_set(_ reply: OpaquePointer?, _ value: UnsafePointer<CChar>?) -> sheaf_result {
    guard let reply = CredentialReply.from(reply) else { return failure(SheafError(.invalidArgument, "the reply must not be NULL")) }
    do throws(SheafError) {
        reply.value = try CString.nonEmpty(value, "the credential")
        return success()
    } catch {
        return failure(error)
    }
}

@c @implementation
public func sheaf_credential_reply_fail(_ reply: OpaquePointer?, _ message: UnsafePointer<CChar>?) -> sheaf_result {
    guard let reply = CredentialReply.from(reply) else { return failure(SheafError(.invalidArgument, "the reply must not be NULL")) }
    reply.value = nil
    reply.failure = message.map { String(cString: $0) }
    return success()
}
