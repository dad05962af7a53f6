/// A failure below HTTP: the exchange produced no status.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure; new kinds may be added, so switch with a default.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Code: Sendable, Hashable { case other, timeout, connect, dns, tls, tooLarge }
        private let code: Code
        private init(_ code: Code) { self.code = code }

        public static let other = Kind(.other)
        public static let timeout = Kind(.timeout)
        public static let connect = Kind(.connect)
        public static let dns = Kind(.dns)
        public static let tls = Kind(.tls)
        public static let tooLarge = Kind(.tooLarge)

        /// Timeouts and refused or reset connections are worth another attempt.
        public var isTransient: Bool { self == .timeout || self == .connect }

        public var description: String {
            switch code {
            case .other: "transport failure"
            case .timeout: "timeout"
            case .connect: "connection failure"
            case .dns: "name resolution failure"
            case .tls: "TLS failure"
            case .tooLarge: "body too large"
            }
        }
    }

    public var kind: Kind
    /// Human-readable detail; never contains credentials.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message.isEmpty ? kind.description : "\(kind): \(message)" }
}
