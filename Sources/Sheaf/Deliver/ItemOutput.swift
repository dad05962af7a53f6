#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a list's items are written out (`ItemOutput`).
public enum ItemFormat: Int, Sendable {
    /// One JSON array, an item per line: "[\n", the items separated by ",\n", then "\n]\n"
    /// ("[]\n" for no items).
    case jsonArray = 0
    /// JSON lines: each item followed by "\n"; line breaks inside an item (a server that
    /// indents its JSON) become spaces, which JSON allows there.
    case jsonLines = 1
}

/// Writes the items of a list's snapshots, in order, as they arrive: the bytes the pages
/// brought, never parsed again and never kept. The run's delivery thread calls it (one
/// snapshot at a time), so a slow destination holds the fetching back like a slow callback.
package final class ItemOutput: Sendable {
    /// Takes bytes in order; returns nil once they are written, or why they could not be.
    package typealias Sink = @Sendable (UnsafeRawBufferPointer) -> SheafError?

    private struct State {
        var opened = false
        var finished = false
        var failure: SheafError?
    }

    private let format: ItemFormat
    private let sink: Sink
    private let state = Locked(State())

    package init(format: ItemFormat, sink: @escaping Sink) {
        self.format = format
        self.sink = sink
    }

    /// A sink writing to `descriptor` (left open; a failed write is `.io` with the system's
    /// reason: a closed pipe, a full disk).
    package static func fileDescriptor(_ descriptor: Int32) -> Sink {
        { bytes in
            let code = writeAll(descriptor, bytes)
            return code == 0 ? nil : SheafError(.io, "the items could not be written: \(errnoText(code))")
        }
    }

    /// Writes the items of `delta`; false once writing failed (the run should stop: `finish`
    /// then reports the failure).
    package func write(_ delta: SnapshotDelta) -> Bool {
        state.withLock { state in
            guard state.failure == nil, !state.finished else { return false }
            guard delta.items > 0 else { return true }
            let bytes = format == .jsonArray ? arrayBytes(delta, opened: state.opened) : lineBytes(delta)
            state.opened = true
            if let error = bytes.withUnsafeBytes(sink) {
                state.failure = error
                return false
            }
            return true
        }
    }

    /// Ends the output (a JSON array is closed, also after a failure of the list: what was
    /// written is well-formed and the outcome says it is not the whole list); returns the
    /// outcome, with a write failure in place of the stop it caused.
    package func finish(_ outcome: ListOutcome) -> ListOutcome {
        state.withLock { state in
            if !state.finished, state.failure == nil {
                state.finished = true
                let closing = format == .jsonLines ? [] : Array((state.opened ? "\n]\n" : "[]\n").utf8)
                if !closing.isEmpty, let error = closing.withUnsafeBytes(sink) { state.failure = error }
            }
            return state.failure.map { .failed($0) } ?? outcome
        }
    }

    /// The items of `delta` in the array: each on a line of its own.
    private func arrayBytes(_ delta: SnapshotDelta, opened: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(delta.json.count + delta.items * 2 + 2)
        var start = 1
        for end in delta.itemEnds {
            out.append(contentsOf: out.isEmpty && !opened ? "[\n".utf8 : ",\n".utf8)
            out.append(contentsOf: delta.json[start..<end])
            start = end + 1
        }
        return out
    }

    /// The items of `delta` as JSON lines.
    private func lineBytes(_ delta: SnapshotDelta) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(delta.json.count + 1)
        let breaks = delta.json.withUnsafeBytes { bytes in
            memchr(bytes.baseAddress!, 0x0A, bytes.count) != nil || memchr(bytes.baseAddress!, 0x0D, bytes.count) != nil
        }
        var start = 1
        for end in delta.itemEnds {
            if breaks {
                out.append(contentsOf: delta.json[start..<end].lazy.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 })
            } else {
                out.append(contentsOf: delta.json[start..<end])
            }
            out.append(0x0A)
            start = end + 1
        }
        return out
    }
}
