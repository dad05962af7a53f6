/// Why bytes are not the JSON a page should be, and where.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible {
    /// Byte offset into the body.
    public var offset: Int
    /// What was wrong there.
    public var reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "\(reason) at byte \(offset)" }
}
