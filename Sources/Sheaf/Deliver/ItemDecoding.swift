#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes the items of a delta (a JSON array) into `Item`s, naming the item and the place in it
/// that did not fit.
struct ItemDecoder<Item: Decodable & Sendable>: Sendable {
    let decoder: JSONDecoder

    /// The items of `json`, a JSON array whose first item is item `offset` of the list.
    /// - Throws: `.decoding` naming the item's index in the list and the JSON pointer inside it.
    func decode(_ json: [UInt8], offset: Int) throws(SheafError) -> [Item] {
        do {
            return try decoder.decode([Item].self, from: Data(json))
        } catch let error as DecodingError {
            throw DecodingFailure.error(error, type: Item.self, itemOffset: offset)
        } catch {
            throw SheafError(.decoding, "the items could not be decoded as \(Item.self): \(error)")
        }
    }

    /// The first `count` items of `delta` (whose items `decode` refused at item `count`),
    /// decoded: what comes before the item that failed. Empty when they cannot be had.
    func decodeFirst(_ count: Int, of delta: SnapshotDelta) -> [Item] {
        guard count > 0, count <= delta.itemEnds.count else { return [] }
        var prefix = Array(delta.json[..<delta.itemEnds[count - 1]])
        prefix.append(UInt8(ascii: "]"))
        return (try? decoder.decode([Item].self, from: Data(prefix))) ?? []
    }
}

/// The `SheafError` for a `DecodingError`: where in the JSON it happened, and what was expected.
enum DecodingFailure {
    /// - Parameter itemOffset: for an array of a list's items, the index in the list of its first
    ///   item (the error then names the item, and the pointer starts inside it); nil for one body.
    static func error(_ error: DecodingError, type: Any.Type, itemOffset: Int?) -> SheafError {
        let context: DecodingError.Context
        let what: String
        var path: [any CodingKey]
        switch error {
        case .typeMismatch(let expected, let found):
            (context, what, path) = (found, "expected \(expected)", found.codingPath)
        case .valueNotFound(let expected, let found):
            (context, what, path) = (found, "expected \(expected), found null or nothing", found.codingPath)
        case .keyNotFound(let key, let found):
            (context, what, path) = (found, "no value for the key \"\(key.stringValue)\"", found.codingPath + [key])
        case .dataCorrupted(let found):
            (context, what, path) = (found, "the data does not fit", found.codingPath)
        @unknown default:
            return SheafError(.decoding, "the JSON could not be decoded as \(type): \(error)")
        }
        var subject = "the body"
        var index: Int?
        if let itemOffset {
            // The first key is the item's index in the array the decoder was given.
            index = path.first?.intValue.map { itemOffset + $0 }
            if !path.isEmpty { path.removeFirst() }
            subject = index.map { "item \($0) of the list" } ?? "an item of the list"
        }
        let pointer = path.map { "/" + JSONPointer.escaping($0.intValue.map(String.init) ?? $0.stringValue) }.joined()
        let location = pointer.isEmpty ? "" : " at \(pointer)"
        var failure = SheafError(.decoding, "\(subject) cannot be decoded as \(type)\(location): \(what) (\(context.debugDescription))",
                                 jsonPointer: pointer)
        failure.itemIndex = index
        return failure
    }
}
