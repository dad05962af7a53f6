import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

/// The error of the last failing call on each thread (sheaf_last_error).
enum LastError {
    private final class Box {
        let error: SheafError
        init(_ error: SheafError) { self.error = error }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
        }
        return key
    }()

    /// Records `error` for this thread (nil clears it).
    static func set(_ error: SheafError?) {
        let old = pthread_getspecific(key)
        if old == nil, error == nil { return } // the common success path: nothing to do
        pthread_setspecific(key, error.map { Unmanaged<AnyObject>.passRetained(Box($0)).toOpaque() })
        if let old { Unmanaged<AnyObject>.fromOpaque(old).release() }
    }

    static var current: SheafError? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return (Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue() as? Box)?.error
    }
}

/// A handle that keeps the error of its outcome or last failed call.
protocol ErrorRecording {
    func recordError(_ error: SheafError?)
}

/// Records a failure for this thread (and on `handle`, when given) and returns its code.
func failure(_ error: SheafError, on handle: (any ErrorRecording)? = nil) -> sheaf_result {
    LastError.set(error)
    handle?.recordError(error)
    return error.code.cResult
}

/// Clears this thread's error and returns `result` (a success code).
func success(_ result: sheaf_result = SHEAF_OK) -> sheaf_result {
    LastError.set(nil)
    return result
}

/// A new `sheaf_error` the caller owns (sheaf_error_free).
func cError(_ error: SheafError) -> UnsafeMutablePointer<sheaf_error> {
    let value = UnsafeMutablePointer<sheaf_error>.allocate(capacity: 1)
    let isHTTP = error.code == .http
    value.initialize(to: sheaf_error(
        version: UInt32(SHEAF_ERROR_VERSION),
        code: error.code.cResult,
        message: UnsafePointer(strdup(error.message)),
        url: UnsafePointer(strdup(error.url ?? "")),
        http_status: isHTTP ? Int32(clamping: error.httpStatus ?? 0) : 0,
        body: UnsafePointer(strdup(isHTTP ? error.bodyExcerpt ?? "" : "")),
        server_message: UnsafePointer(strdup(error.serverMessage ?? "")),
        json_pointer: UnsafePointer(strdup(error.jsonPointer ?? "")),
        json_offset: Int64(error.jsonOffset ?? -1),
        signal: UnsafePointer(strdup(error.signal ?? "")),
        hint: UnsafePointer(strdup(error.hint ?? ""))))
    return value
}

// MARK: - Exports

@c @implementation
public func sheaf_last_error() -> UnsafeMutablePointer<sheaf_error>? {
    LastError.current.map(cError)
}

@c @implementation
public func sheaf_error_free(_ error: UnsafeMutablePointer<sheaf_error>?) {
    guard let error else { return }
    for text in [error.pointee.message, error.pointee.url, error.pointee.body, error.pointee.server_message,
                 error.pointee.json_pointer, error.pointee.signal, error.pointee.hint] {
        free(UnsafeMutableRawPointer(mutating: text))
    }
    error.deinitialize(count: 1)
    error.deallocate()
}
