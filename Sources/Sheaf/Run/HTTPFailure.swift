/// Turns a failing HTTP response into a `SheafError` people can act on.
enum HTTPFailure {
    static let excerptLimit = 1024

    /// The error for `response`: the status, the server's own error fields when the body is JSON
    /// in one of the common error shapes, and a body excerpt.
    /// Credentials are removed (by `redactor`) before anything is cut to length.
    static func error(for response: HTTPResponse, url: String, attempts: Int, redactor: Redactor) -> SheafError {
        // A secret may straddle the cut: redact a little more than is kept, then cut.
        let window = String(decoding: response.body.prefix(excerptLimit * 2), as: UTF8.self)
        let excerpt = String(decoding: Array(redactor.redact(window).utf8).prefix(excerptLimit), as: UTF8.self)
        let url = redactor.redact(url)
        var message = "\(url): HTTP \(response.status)"
        let fields = serverErrorFields(response.body, redactor)
        if !fields.isEmpty { message += " (" + fields.joined(separator: "; ") + ")" }
        if attempts > 1 { message += " after \(attempts) attempts" }
        return SheafError(.http, message, url: url, httpStatus: response.status, bodyExcerpt: excerpt,
                          serverMessage: fields.isEmpty ? nil : fields.joined(separator: "; "))
    }

    /// Where servers put their error text: plain fields, nested `error.message` (Stripe, Google),
    /// JSON:API `errors[0].detail`, FastAPI / pydantic `detail[0].msg`.
    private static let fieldNames = ["error", "error/message", "message", "detail", "detail/0/msg", "title",
                                     "reason", "errors/0/detail", "errors/0/message"]

    private static func serverErrorFields(_ body: [UInt8], _ redactor: Redactor) -> [String] {
        guard body.count <= 1 << 20 else { return [] }
        return body.withUnsafeBufferPointer { buffer in
            let scanner = JSONScanner(buffer)
            var targets = fieldNames.map { JSONScanner.Target(pointer: JSONPointer("/" + $0)!, collectsElements: false) }
            guard (try? scanner.scanDocument(&targets)) != nil else { return [] }
            return zip(fieldNames, targets).compactMap { name, target in
                guard let range = target.range, buffer[range.lowerBound] == UInt8(ascii: "\""),
                      let text = try? scanner.decodeString(at: range.lowerBound), !text.isEmpty else { return nil }
                return "\(name.replacing("/0/", with: "[0].").replacing("/", with: ".")): \(redactor.redact(text).prefix(200))"
            }
        }
    }
}
