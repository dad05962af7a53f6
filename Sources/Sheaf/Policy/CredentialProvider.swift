import Dispatch

/// Gives a client its credential when it needs one, from the caller's code: for the first request,
/// and again once a request is refused with 401 (an OAuth access token or a GitHub App
/// installation token that expired). Requests refused at the same time share one refresh; the
/// credential is sent, like a fixed one, only to the base URL's origin.
public final class CredentialProvider: Sendable {
    /// Makes a credential: `refresh` is false for the first one, true when the last was refused.
    /// Called on a queue of the provider's own, one call at a time, so it may block (an HTTP call
    /// to a token endpoint). A failure when it has none.
    public typealias Make = @Sendable (_ refresh: Bool) -> Result<Credential, SheafError>

    /// A credential and its generation: 1 for the first, one more for each refresh.
    public typealias Issued = (credential: Credential, generation: Int)

    private struct State {
        var current: Issued?
        /// The values handed out, for messages to hide (the most recent `secretsKept`), with the
        /// redactor that hides them besides the client's own (`redactor(adding:)`).
        var secrets: [String] = []
        var redactor: (base: Redactor, with: Redactor)?
        var waiters: [@Sendable (Result<Issued, SheafError>) -> Void] = []
        var making = false
    }

    private let make: Make
    private let queue = DispatchQueue(label: "sheaf.credentials")
    private let state = Locked(State())
    /// The query parameter an API key goes in, when the credentials are of that kind.
    public let queryParameter: String?
    private static let secretsKept = 16

    /// - Parameter queryParameter: the API key's parameter, for credentials of that kind.
    public init(queryParameter: String? = nil, _ make: @escaping Make) {
        self.queryParameter = queryParameter
        self.make = make
    }

    /// Calls `completion` with a credential newer than generation `refused` (0: any), making one
    /// when there is none: at once when one is at hand, else once the provider has answered.
    func credential(newerThan refused: Int, _ completion: @escaping @Sendable (Result<Issued, SheafError>) -> Void) {
        enum Next { case ready(Issued), wait, make }
        let next = state.withLock { state -> Next in
            if let current = state.current, current.generation > refused { return .ready(current) }
            state.waiters.append(completion)
            defer { state.making = true }
            return state.making ? .wait : .make
        }
        switch next {
        case .ready(let issued): return completion(.success(issued))
        case .wait: return
        case .make: break
        }
        let refresh = refused > 0
        queue.async { [self] in
            let made = make(refresh).flatMap { (credential) -> Result<Credential, SheafError> in
                Result { () throws(SheafError) in try credential.validated() }
            }
            let (waiters, result) = state.withLock { state -> ([@Sendable (Result<Issued, SheafError>) -> Void], Result<Issued, SheafError>) in
                state.making = false
                defer { state.waiters.removeAll() }
                switch made {
                case .success(let credential):
                    let issued = (credential, (state.current?.generation ?? 0) + 1)
                    state.current = issued
                    state.secrets = Array((state.secrets + credential.secrets).suffix(Self.secretsKept))
                    state.redactor = nil
                    return (state.waiters, .success(issued))
                case .failure(let error):
                    return (state.waiters, .failure(error))
                }
            }
            waiters.forEach { $0(result) }
        }
    }

    /// `base` also hiding the values handed out lately; made again only after a new credential
    /// (a client asks on every answer it reads).
    func redactor(adding base: Redactor) -> Redactor {
        state.withLock { state in
            if let made = state.redactor, made.base == base { return made.with }
            let with = base.adding(state.secrets)
            state.redactor = (base, with)
            return with
        }
    }
}
