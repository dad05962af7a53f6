#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A wake-up for a caller's event loop (`sheaf_list_set_notify_fd`, `sheaf_group_set_notify_fd`):
/// 8 bytes holding 1 (an eventfd's increment). A socket is written without blocking or SIGPIPE; anything else (an eventfd, a pipe) with
/// write(2), as the header says. A failed write needs nothing: a full fd has one pending.
extension Locked<Int32> {
    /// Writes a wake-up to the fd held, unless it was let go (-1): under the lock, so once the
    /// free has set -1 no write can still be on its way to an fd the caller may have closed.
    package func wake() {
        withLock { fd in if fd >= 0 { notify(fd) } }
    }
}

private func notify(_ fd: Int32) {
    var one: UInt64 = 1
    withUnsafeBytes(of: &one) { bytes in
        if send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) < 0, errno == ENOTSOCK {
            _ = write(fd, bytes.baseAddress, bytes.count)
        }
    }
}

