#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes all of `bytes` to `descriptor` (again after a signal interrupts, on after a short
/// write); returns 0, or the errno of the write that failed.
package func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    var offset = 0
    while offset < bytes.count {
        let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if count < 0 {
            if errno == EINTR { continue }
            return errno
        }
        offset += count
    }
    return 0
}

/// The text of an errno value.
package func errnoText(_ code: Int32) -> String {
    String(cString: strerror(code))
}
