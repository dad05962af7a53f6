/// Why a list or a call failed. New codes may be added; compare with the static members.
public struct SheafError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure; each maps to one stable C result code.
    public struct Code: Sendable, Hashable {
        enum Value: Sendable, Hashable {
            case invalidArgument, unsupported, state, reentrant, http, transport, badPage, incomplete,
                 loop, pageLimit, bodyTooLarge, crossOrigin, stopped, cancelled, `internal`,
                 notFollowed, undetected, repeatedPage, io, deadline, credential,
                 decoding, partial, rateLimited, api
        }
        let value: Value
        init(_ value: Value) { self.value = value }

        public static let invalidArgument = Code(.invalidArgument)
        public static let unsupported = Code(.unsupported)
        public static let state = Code(.state)
        public static let reentrant = Code(.reentrant)
        public static let http = Code(.http)
        public static let transport = Code(.transport)
        public static let badPage = Code(.badPage)
        public static let incomplete = Code(.incomplete)
        public static let loop = Code(.loop)
        public static let pageLimit = Code(.pageLimit)
        public static let bodyTooLarge = Code(.bodyTooLarge)
        public static let crossOrigin = Code(.crossOrigin)
        public static let stopped = Code(.stopped)
        public static let cancelled = Code(.cancelled)
        public static let `internal` = Code(.internal)
        /// The last page signals more than the description follows.
        public static let notFollowed = Code(.notFollowed)
        /// Detection could not decide the list's shape.
        public static let undetected = Code(.undetected)
        /// Two consecutive pages hold the same items.
        public static let repeatedPage = Code(.repeatedPage)
        /// A download's file could not be written.
        public static let io = Code(.io)
        /// The list's deadline passed before it ended.
        public static let deadline = Code(.deadline)
        /// The credential provider gave no credential.
        public static let credential = Code(.credential)
        /// An item (or a response body) did not decode as the caller's `Decodable` type (the
        /// Swift API only; in C it would be a bad page).
        public static let decoding = Code(.decoding)
        /// Some lists of a group failed (each list's own outcome says why); the others ended well.
        public static let partial = Code(.partial)
        /// The server's rate limit is spent (its headers said nothing is left, or it refused a
        /// request saying so) until a reset further off than the client waits
        /// (`ClientConfiguration.maxWaitMilliseconds`); what arrived before stays delivered.
        public static let rateLimited = Code(.rateLimited)
        /// The API answered with success and an error in its body (a GraphQL answer's `errors`).
        public static let api = Code(.api)
    }

    public var code: Code
    /// A sentence for people; never contains credentials.
    public var message: String
    /// The URL concerned, when there is one.
    public var url: String?
    /// For `.http`: the status the server answered.
    public var httpStatus: Int?
    /// For `.http`: the start of the response body.
    public var bodyExcerpt: String?
    /// For `.http`: the server's own error text, from its error fields.
    public var serverMessage: String?
    /// For `.badPage`: the JSON pointer concerned; for `.decoding`, the place inside the item.
    public var jsonPointer: String?
    /// For `.decoding`: the index in the list of the item that did not decode.
    public var itemIndex: Int?
    /// For `.badPage`: the byte offset in the body where reading failed.
    public var jsonOffset: Int?
    /// For `.notFollowed`: the signal seen, e.g. `Link rel="next"`.
    public var signal: String?
    /// The option or preset that would help.
    public var hint: String?

    /// What a blocking call made from inside a Sheaf callback gets, instead of a deadlock.
    package static var blockingCallInsideCallback: SheafError {
        SheafError(.reentrant, "a blocking Sheaf call was made from inside a Sheaf callback")
    }

    public init(_ code: Code, _ message: String, url: String? = nil, httpStatus: Int? = nil, bodyExcerpt: String? = nil,
                serverMessage: String? = nil, jsonPointer: String? = nil, jsonOffset: Int? = nil,
                signal: String? = nil, hint: String? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.httpStatus = httpStatus
        self.bodyExcerpt = bodyExcerpt
        self.serverMessage = serverMessage
        self.jsonPointer = jsonPointer
        self.jsonOffset = jsonOffset
        self.signal = signal
        self.hint = hint
    }

    public var description: String { message }
}
