#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Turns a failing HTTP response into a `SheafError` people can act on.
enum HTTPFailure {
    static let excerptLimit = 1024

    /// The error for `response`: the status, the server's own error fields when the body is JSON
    /// in one of the common error shapes, and a body excerpt.
    /// Credentials are removed (by `redactor`) before anything is cut to length.
    static func error(for response: HTTPResponse, url: String, attempts: Int, redactor: Redactor) -> SheafError {
        let redactor = redactor.addingSecretValues(in: url)
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

    /// The failure of a request not sent, or refused, because the server's rate limit is spent
    /// until after the longest wait (`maxWait` ms): names the limit, what is left and when it
    /// resets. `status`: the refusal's (403, 429), when the server refused it.
    static func rateLimited(_ url: String, _ spent: WindowLimiter.Spent, maxWait: Int, status: Int? = nil,
                            redactor: Redactor, now: Date = Date()) -> SheafError {
        let url = redactor.addingSecretValues(in: url).redact(url)
        let seconds = (spent.resetsIn + 999) / 1000
        var which = spent.resource.map { "\($0) limit" } ?? "rate limit"
        if let limit = spent.limit { which += " of \(limit) requests" }
        let resetsAt = Int(now.timeIntervalSince1970) + seconds
        let refused = status.map { " (HTTP \($0))" } ?? ""
        let at: String = RangeValue.formatTime(resetsAt * 1_000_000) ?? "\(resetsAt) s after 1970"
        let why: String = spent.resetsIn > maxWait ? "past the longest wait of \(maxWait / 1000) s" : "and the request has no attempt left"
        let message = "\(url): the server's \(which) is spent\(refused): 0 left until it resets in \(seconds) s (at \(at)), \(why); nothing more was sent"
        return SheafError(.rateLimited, message, url: url, httpStatus: status,
                          hint: "wait for the reset and resume, or allow a longer wait (SHEAF_OPT_MAX_WAIT_MS, --max-wait)")
    }

    /// Where servers put their error text: plain fields (Slack's `error`, GitHub's `message`,
    /// DRF's `detail`, `reason`), nested `error.message` and `error.code` (Stripe, Google,
    /// OData), JSON:API `errors[].detail` / `title`, RFC 9457 problem details (`title`,
    /// `detail`), FastAPI / pydantic `detail[].msg` with its `loc`.
    private static let fieldNames = ["error", "error/message", "error/code", "message", "detail", "title", "reason"]
        + (0..<3).flatMap { ["errors/\($0)/detail", "errors/\($0)/title", "errors/\($0)/message"] }

    /// A field's pointer as people write it in prose: `errors/0/detail` → `errors[0].detail`.
    private static func label(_ pointer: String) -> String {
        pointer.split(separator: "/").reduce(into: "") { label, part in
            if part.allSatisfy({ $0.isASCII && $0.isNumber }) { label += "[\(part)]" } else { label += (label.isEmpty ? "" : ".") + part }
        }
    }

    /// FastAPI lists up to this many validation errors in the message.
    private static let listedValidationErrors = 3

    private static func serverErrorFields(_ body: [UInt8], _ redactor: Redactor) -> [String] {
        guard body.count <= 1 << 20 else { return [] }
        return body.withUnsafeBufferPointer { buffer in
            let scanner = JSONScanner(buffer)
            var targets = fieldNames.map { JSONScanner.Target(pointer: JSONPointer("/" + $0)!, collectsElements: false) }
            for index in 0..<listedValidationErrors {
                targets.append(JSONScanner.Target(pointer: JSONPointer("/detail/\(index)/msg")!, collectsElements: false))
                targets.append(JSONScanner.Target(pointer: JSONPointer("/detail/\(index)/loc")!, collectsElements: true))
            }
            guard (try? scanner.scanDocument(&targets)) != nil else { return [] }
            func text(_ range: Range<Int>?) -> String? {
                guard let range else { return nil }
                if buffer[range.lowerBound] == UInt8(ascii: "\"") {
                    return (try? scanner.decodeString(at: range.lowerBound)).flatMap { $0.isEmpty ? nil : $0 }
                }
                return scanner.nonNegativeInteger(at: range).map(String.init)
            }
            var fields = zip(fieldNames, targets).compactMap { name, target -> String? in
                guard let range = target.range, buffer[range.lowerBound] == UInt8(ascii: "\""), let value = text(range) else { return nil }
                return "\(label(name)): \(redactor.redact(value).prefix(200))"
            }
            for index in 0..<listedValidationErrors {
                let message = targets[fieldNames.count + 2 * index]
                let location = targets[fieldNames.count + 2 * index + 1]
                guard let value = text(message.range) else { continue }
                let place = location.elements.compactMap { text($0) }.joined(separator: ".")
                fields.append("\(place.isEmpty ? "detail[\(index)]" : place): \(redactor.redact(value).prefix(200))")
            }
            return fields
        }
    }
}
