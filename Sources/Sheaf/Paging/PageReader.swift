/// Reads a page body according to a list description.
struct PageReader: Sendable {
    let items: JSONPointer
    let next: JSONPointer?
    let total: JSONPointer?
    let identity: JSONPointer?

    init(_ description: ListDescription) {
        items = description.items
        if case .bodyPointer(let pointer) = description.next { next = pointer } else { next = nil }
        if case .bodyPointer(let pointer) = description.total { total = pointer } else { total = nil }
        identity = description.identity
    }

    /// Parses `body` fetched from `url`; a failure names the URL and the JSON location.
    func read(_ body: [UInt8], from url: String) throws(SheafError) -> Page {
        var targets = [JSONScanner.Target(pointer: items, collectsElements: true)]
        if let next { targets.append(.init(pointer: next, collectsElements: false)) }
        if let total { targets.append(.init(pointer: total, collectsElements: false)) }

        return try body.withUnsafeBufferPointer { (buffer) throws(SheafError) -> Page in
            let scanner = JSONScanner(buffer)
            do {
                try scanner.scanDocument(&targets)
            } catch {
                throw SheafError(.badPage, "\(url): the body is not valid JSON: \(error)", url: url)
            }
            guard let itemsRange = targets[0].range, buffer[itemsRange.lowerBound] == UInt8(ascii: "[") else {
                let what = targets[0].range == nil ? "nothing" : "a value that is not an array"
                throw SheafError(.badPage, "\(url): expected the items array at \"\(items)\", found \(what)", url: url)
            }
            var nextURL: String? = nil
            var totalCount: Int? = nil
            var index = 1
            if let next {
                nextURL = try readNext(targets[index].range, pointer: next, scanner: scanner, url: url)
                index += 1
            }
            if let total, let range = targets[index].range, scanner.bytes[range.lowerBound] != UInt8(ascii: "n") {
                // A null total means "unknown", as an absent one does.
                guard let value = scanner.nonNegativeInteger(at: range) else {
                    throw SheafError(.badPage, "\(url): the total at \"\(total)\" is not a non-negative integer", url: url)
                }
                totalCount = value
            }
            let elements = targets[0].elements
            var identities: [IdentityKey?] = []
            if let identity {
                identities.reserveCapacity(elements.count)
                for element in elements {
                    identities.append(scanner.locate(identity, in: element).map { identityKey(scanner, $0) })
                }
            }
            return Page(body: body, items: elements, identities: identities, next: nextURL, total: totalCount)
        }
    }

    private func readNext(_ range: Range<Int>?, pointer: JSONPointer, scanner: JSONScanner,
                          url: String) throws(SheafError) -> String? {
        guard let range else { return nil }
        switch scanner.bytes[range.lowerBound] {
        case UInt8(ascii: "n"):
            return nil
        case UInt8(ascii: "\""):
            let text = (try? scanner.decodeString(at: range.lowerBound)) ?? ""
            if text.isEmpty { return nil }
            guard let resolved = URLText.resolve(text, against: url) else {
                throw SheafError(.badPage, "\(url): the next link at \"\(pointer)\" is not a URL", url: url)
            }
            return resolved
        default:
            throw SheafError(.badPage, "\(url): the next link at \"\(pointer)\" is neither a string nor null", url: url)
        }
    }

    /// Strings compare by their decoded text (so "\u0061" equals "a"); other values by their bytes.
    private func identityKey(_ scanner: JSONScanner, _ range: Range<Int>) -> IdentityKey {
        if scanner.bytes[range.lowerBound] == UInt8(ascii: "\""),
           let text = try? scanner.decodeString(at: range.lowerBound) {
            return IdentityKey(bytes: [UInt8(ascii: "s")] + Array(text.utf8))
        }
        return IdentityKey(bytes: Array(scanner.bytes[range]))
    }
}
