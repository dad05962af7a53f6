/// Why a list or a call failed. New codes may be added; compare with the static members.
public struct SheafError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure; each maps to one stable C result code.
    public struct Code: Sendable, Hashable {
        enum Value: Sendable, Hashable {
            case invalidArgument, unsupported, state, reentrant, http, transport, badPage, incomplete,
                 loop, pageLimit, bodyTooLarge, crossOrigin, stopped, cancelled, `internal`
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

    public init(_ code: Code, _ message: String, url: String? = nil, httpStatus: Int? = nil, bodyExcerpt: String? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.httpStatus = httpStatus
        self.bodyExcerpt = bodyExcerpt
    }

    public var description: String { message }
}
