// libFuzzer target: the small parsers a server or caller feeds — URL resolution and origins,
// Retry-After, JSON pointers, the JSON scanner with pointer targets, server error fields, the
// redactor and percent-decoding. Compiled with the core's sources by run.sh. Input: a first line
// (a URL, a header value, a pointer), the rest a body.

import FoundationEssentials

@_cdecl("LLVMFuzzerTestOneInput")
public func sheafFuzzParsers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let parts = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
    let line = String(decoding: parts.first ?? [], as: UTF8.self)
    let body = parts.count > 1 ? Array(parts[1]) : []
    let base = "https://api.example.com:8443/v1/things?page=1"

    if let resolved = URLText.resolve(line, against: base) {
        _ = Origin(resolved)
        _ = URLText.queryPairs(resolved)
        _ = URLText.settingQuery(resolved, "page", to: line)
    }
    _ = Origin(line)
    _ = URLText.escapingInvalid(line)
    _ = URLText.percentDecoded(line)
    _ = URLText.hasUserInfo(line)
    _ = RetryPolicy().delayMilliseconds(afterAttempt: Int(size % 40), retryAfter: line, random: { $0.upperBound })
    _ = HeaderCount.parse(line, allowsContentRange: true)
    _ = LinkHeader(parsing: line).target("next", resolvedAgainst: base)
    _ = Redactor([line, "s3cret"]).redact(String(decoding: body, as: UTF8.self))

    if let pointer = JSONPointer(line) {
        _ = pointer.description
        body.withUnsafeBufferPointer { buffer in
            var targets = [JSONScanner.Target(pointer: pointer, collectsElements: true),
                           JSONScanner.Target(pointer: JSONPointer("/0/id")!, collectsElements: false)]
            let scanner = JSONScanner(buffer)
            if (try? scanner.scanDocument(&targets)) != nil {
                for element in targets[0].elements {
                    _ = IdentityKey(scanner, element)
                    _ = scanner.locate(pointer, in: element)
                }
                if let range = targets[1].range {
                    _ = scanner.nonNegativeInteger(at: range)
                    if scanner.bytes[range.lowerBound] == UInt8(ascii: "\"") {
                        _ = try? scanner.decodeUTF8(at: range.lowerBound, marksLoneSurrogates: true)
                    }
                }
            }
        }
    }
    _ = HTTPFailure.error(for: HTTPResponse(status: 400 + size % 200, body: body), url: base, attempts: 1 + size % 4,
                          redactor: Redactor(["s3cret"]))
    return 0
}
