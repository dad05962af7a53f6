//! Rust bindings of Sheaf (`libsheaf.so.1`): a paginated REST list endpoint as one call
//! ([`List::fetch_all`]) or as an iterator of its items in order ([`List::items`]), and single
//! HTTP requests and downloads ([`Request`]).
//!
//! ```no_run
//! let client = sheaf::Client::new("https://api.example.com/")?;
//! let items = client.list("items")?.fetch_all()?;
//! for item in &items.items { println!("{item}"); }
//! println!("{} items, {:?}", items.len(), items.stop_reason);
//! # Ok::<(), sheaf::Error>(())
//! ```
//!
//! Items are handed over as the raw JSON text the server sent (one `String` per item, in order,
//! de-duplicated); parse them with the JSON library of your choice. [`sys`] is the raw C
//! interface, checked against `include/sheaf.h` by `tests/sys_drift.rs`.
//!
//! Threads (from the header's "Thread safety"): a [`Client`] is `Send + Sync`; a [`List`] and a
//! [`Request`] are `Send` but not `Sync` (one thread at a time); a [`Canceller`] is
//! `Send + Sync` (sheaf_list_cancel may be called from any thread).

#![warn(missing_docs)]

pub mod sys;

use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// ---- errors ---------------------------------------------------------------------------------

/// A failure: the fields of the library's `sheaf_error` ([`ErrorDetail`], read through `Deref`:
/// `error.code`, `error.http_status`, `error.message`, ...), boxed so that a `Result` stays
/// small. Implements `std::error::Error` and `Display` (the message).
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorDetail>);

impl std::ops::Deref for Error {
    type Target = ErrorDetail;

    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorDetail {
        &mut self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The fields of a failure, as the library's `sheaf_error` has them (every string "" when
/// absent). The library keeps credentials out of every one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorDetail {
    /// The `sheaf_result` code (`sys::SHEAF_E_*`).
    pub code: i32,
    /// A sentence for people: what failed, where, and what to do.
    pub message: String,
    /// The URL concerned (secrets redacted), or "".
    pub url: String,
    /// The HTTP status for `SHEAF_E_HTTP`, else 0.
    pub http_status: i32,
    /// For `SHEAF_E_HTTP`: the start of the response body (at most 1 KiB).
    pub body: String,
    /// The server's own error text from its error fields, or "".
    pub server_message: String,
    /// For `SHEAF_E_BAD_PAGE`: the JSON pointer concerned, or "".
    pub json_pointer: String,
    /// For `SHEAF_E_BAD_PAGE`: the byte offset where reading failed, or -1.
    pub json_offset: i64,
    /// For `SHEAF_E_NOT_FOLLOWED`: the signal seen, or "".
    pub signal: String,
    /// The option or preset that would help, or "".
    pub hint: String,
    /// For a list that failed, stopped or was cancelled: the token that goes on from the items
    /// delivered (see [`List::resume`]).
    pub resume_token: Option<String>,
}

impl Error {
    /// The static text of the code (`sheaf_result_str`).
    pub fn code_text(&self) -> &'static str {
        result_text(self.code)
    }

    /// Whether the list or request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.code == sys::SHEAF_E_CANCELLED
    }

    /// An error of this binding's own (no `sheaf_error` behind it).
    fn usage(code: i32, message: impl Into<String>) -> Error {
        Error::from(ErrorDetail {
            code,
            message: message.into(),
            url: String::new(),
            http_status: 0,
            body: String::new(),
            server_message: String::new(),
            json_pointer: String::new(),
            json_offset: -1,
            signal: String::new(),
            hint: String::new(),
            resume_token: None,
        })
    }

    /// Takes a `sheaf_error` the library returned (and frees it); `code` when it is NULL.
    ///
    /// # Safety
    /// `raw` is NULL or an error the library returned, not freed yet.
    unsafe fn take(raw: *mut sys::sheaf_error, code: i32) -> Error {
        let Some(error) = raw.as_ref() else {
            return Error::usage(code, result_text(code));
        };
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let taken = Error::from(ErrorDetail {
            code: error.code,
            message: text(error.message),
            url: text(error.url),
            http_status: error.http_status,
            body: text(error.body),
            server_message: text(error.server_message),
            json_pointer: text(error.json_pointer),
            json_offset: error.json_offset,
            signal: text(error.signal),
            hint: text(error.hint),
            resume_token: None,
        });
        sys::sheaf_error_free(raw);
        taken
    }

    /// The error of the last failed call on this thread (`sheaf_last_error`).
    fn last(code: i32) -> Error {
        // SAFETY: sheaf_last_error returns NULL or a new copy, which take frees.
        unsafe { Error::take(sys::sheaf_last_error(), code) }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            f.write_str(self.code_text())?;
        } else {
            f.write_str(&self.message)?;
        }
        if self.http_status != 0 && !self.message.contains(&self.http_status.to_string()) {
            write!(f, " (HTTP {})", self.http_status)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<ErrorDetail> for Error {
    fn from(detail: ErrorDetail) -> Error {
        Error(Box::new(detail))
    }
}

fn result_text(code: i32) -> &'static str {
    // SAFETY: never NULL, static storage.
    unsafe { CStr::from_ptr(sys::sheaf_result_str(code)) }.to_str().unwrap_or("unknown result")
}

/// `Ok` for SHEAF_OK, else the thread's last error.
fn check(code: sys::sheaf_result) -> Result<()> {
    if code == sys::SHEAF_OK {
        Ok(())
    } else {
        Err(Error::last(code))
    }
}

fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::usage(sys::SHEAF_E_INVALID_ARGUMENT, format!("{what} holds a NUL byte")))
}

/// Takes a string the library allocated (freed with sheaf_free).
///
/// # Safety
/// `pointer` is NULL or a library allocation of `length` bytes (or NUL-terminated when
/// `length` is None), not freed yet.
unsafe fn take_bytes(pointer: *mut c_char, length: Option<usize>) -> Option<Vec<u8>> {
    if pointer.is_null() {
        return None;
    }
    let bytes = match length {
        Some(length) => std::slice::from_raw_parts(pointer as *const u8, length).to_vec(),
        None => CStr::from_ptr(pointer).to_bytes().to_vec(),
    };
    sys::sheaf_free(pointer as *mut c_void);
    Some(bytes)
}

fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// The version of the library loaded, e.g. "1.0.0".
pub fn version() -> &'static str {
    // SAFETY: static storage, never NULL.
    unsafe { CStr::from_ptr(sys::sheaf_version_string()) }.to_str().unwrap_or("")
}

/// The names of the presets the library knows ("github", "stripe", ...).
pub fn presets() -> Vec<String> {
    // SAFETY: plain calls; the names are static.
    unsafe {
        (0..sys::sheaf_preset_count())
            .filter_map(|i| {
                let name = sys::sheaf_preset_name(i);
                (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
            })
            .collect()
    }
}

// ---- client ---------------------------------------------------------------------------------

/// How a client authenticates (`sheaf_client_set_auth` / `sheaf_client_set_credential`).
/// Credentials go only to the base URL's origin and never appear in messages.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// No credentials.
    None,
    /// "Authorization: Bearer <token>".
    Bearer(String),
    /// HTTP Basic.
    Basic {
        /// The user (no ':').
        user: String,
        /// The password.
        password: String,
    },
    /// An API key in a request header.
    ApiKeyHeader {
        /// The header's name.
        name: String,
        /// The key.
        value: String,
    },
    /// An API key in a query parameter.
    ApiKeyQuery {
        /// The parameter's name.
        name: String,
        /// The key.
        value: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret.
        match self {
            Auth::None => f.write_str("Auth::None"),
            Auth::Bearer(_) => f.write_str("Auth::Bearer(<redacted>)"),
            Auth::Basic { user, .. } => write!(f, "Auth::Basic {{ user: {user:?}, password: <redacted> }}"),
            Auth::ApiKeyHeader { name, .. } => write!(f, "Auth::ApiKeyHeader {{ name: {name:?}, value: <redacted> }}"),
            Auth::ApiKeyQuery { name, .. } => write!(f, "Auth::ApiKeyQuery {{ name: {name:?}, value: <redacted> }}"),
        }
    }
}

/// An integer option of a client (`sheaf_option`); see sheaf.h for ranges and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientOption {
    /// Pages in flight at once, 1..64 (where an adaptive window starts).
    Window,
    /// Page cap per list.
    MaxPages,
    /// Body cap per response.
    MaxBodyBytes,
    /// Attempts per request including the first, 1..100.
    MaxAttempts,
    /// Backoff base in ms.
    RetryBaseMs,
    /// Backoff and Retry-After cap in ms.
    RetryMaxMs,
    /// Whole-request timeout in ms, 0 = none.
    TimeoutMs,
    /// Connect timeout in ms, 0 = the transport's default.
    ConnectTimeoutMs,
    /// Redirects followed per request, 0..50.
    MaxRedirects,
    /// 1 = follow other origins without credentials.
    CrossOrigin,
    /// 1 = do not verify TLS certificates (tests only).
    TlsInsecure,
    /// 1 = the window adapts to the server (the default).
    AdaptiveWindow,
    /// The most pages an adaptive window lets in flight, 1..64.
    MaxWindow,
    /// A `sys::SHEAF_HTTP_*` value.
    HttpVersion,
    /// The longest wait for a spent rate limit to reset, in ms (default 60000); one that
    /// resets later fails with `SHEAF_E_RATE_LIMITED` before anything more is sent.
    MaxWaitMs,
}

impl ClientOption {
    fn raw(self) -> sys::sheaf_option {
        match self {
            ClientOption::Window => sys::SHEAF_OPT_WINDOW,
            ClientOption::MaxPages => sys::SHEAF_OPT_MAX_PAGES,
            ClientOption::MaxBodyBytes => sys::SHEAF_OPT_MAX_BODY_BYTES,
            ClientOption::MaxAttempts => sys::SHEAF_OPT_MAX_ATTEMPTS,
            ClientOption::RetryBaseMs => sys::SHEAF_OPT_RETRY_BASE_MS,
            ClientOption::RetryMaxMs => sys::SHEAF_OPT_RETRY_MAX_MS,
            ClientOption::TimeoutMs => sys::SHEAF_OPT_TIMEOUT_MS,
            ClientOption::ConnectTimeoutMs => sys::SHEAF_OPT_CONNECT_TIMEOUT_MS,
            ClientOption::MaxRedirects => sys::SHEAF_OPT_MAX_REDIRECTS,
            ClientOption::CrossOrigin => sys::SHEAF_OPT_CROSS_ORIGIN,
            ClientOption::TlsInsecure => sys::SHEAF_OPT_TLS_INSECURE,
            ClientOption::AdaptiveWindow => sys::SHEAF_OPT_ADAPTIVE_WINDOW,
            ClientOption::MaxWindow => sys::SHEAF_OPT_MAX_WINDOW,
            ClientOption::HttpVersion => sys::SHEAF_OPT_HTTP_VERSION,
            ClientOption::MaxWaitMs => sys::SHEAF_OPT_MAX_WAIT_MS,
        }
    }
}

/// One log record, copied out of the library's `sheaf_log_record`.
#[derive(Debug, Clone)]
pub struct LogRecord {
    /// `sys::SHEAF_LOG_ERROR` .. `sys::SHEAF_LOG_DEBUG`.
    pub level: i32,
    /// `sys::SHEAF_LOG_REQUEST`, `_RETRY`, `_REDIRECT`, `_PLAN`, `_WINDOW`.
    pub kind: i32,
    /// The whole record as one line of English (redacted).
    pub message: String,
    /// The request's method, if any.
    pub method: Option<String>,
    /// The URL the record is about, if any (redacted).
    pub url: Option<String>,
    /// The answer's status; 0 when there was none.
    pub http_status: i32,
}

type LogHook = Box<dyn Fn(&LogRecord) + Send + Sync>;

/// What the library holds as a token provider's user_data: the library never calls it twice at
/// once for one client, and the mutex makes an `FnMut` safe to call from its threads regardless.
type TokenProvider = Mutex<Box<dyn FnMut(bool) -> std::result::Result<String, String> + Send>>;

/// A client of one REST API: base URL, credentials, headers and policies.
///
/// `Send + Sync`: "A sheaf_client may be shared by any number of threads and may run many lists
/// at once" (sheaf.h, Thread safety). Configuration takes `&mut self`, so it happens before the
/// client is shared. Lists and requests keep what they need alive, so they may outlive it.
pub struct Client {
    raw: NonNull<sys::sheaf_client>,
}

// SAFETY: see the type's comment: the header allows any number of threads on one client.
unsafe impl Send for Client {}
// SAFETY: as above.
unsafe impl Sync for Client {}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive() // never a credential
    }
}

impl Client {
    /// A client of `base_url` (an absolute http or https URL, a prefix of every path).
    pub fn new(base_url: &str) -> Result<Client> {
        let url = c_string(base_url, "the base URL")?;
        let mut raw = ptr::null_mut();
        // SAFETY: out-pointer and a NUL-terminated string, copied by the library.
        check(unsafe { sys::sheaf_client_new(&mut raw, url.as_ptr()) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::usage(sys::SHEAF_E_INTERNAL, "sheaf_client_new gave NULL"))?;
        Ok(Client { raw })
    }

    /// Sets the credentials (replacing any earlier ones).
    pub fn set_auth(&mut self, auth: &Auth) -> Result<&mut Self> {
        let (kind, name, value) = match auth {
            Auth::None => (sys::SHEAF_AUTH_NONE, None, None),
            Auth::Bearer(token) => (sys::SHEAF_AUTH_BEARER, None, Some(token)),
            Auth::Basic { user, password } => (sys::SHEAF_AUTH_BASIC, Some(user), Some(password)),
            Auth::ApiKeyHeader { name, value } => (sys::SHEAF_AUTH_API_KEY_HEADER, Some(name), Some(value)),
            Auth::ApiKeyQuery { name, value } => (sys::SHEAF_AUTH_API_KEY_QUERY, Some(name), Some(value)),
        };
        let name = name.map(|n| c_string(n, "the credential's name")).transpose()?;
        let value = value.map(|v| c_string(v, "the credential")).transpose()?;
        let value_ptr = value.as_ref().map_or(ptr::null(), |v| v.as_ptr());
        // SAFETY: a live client and strings copied by the library.
        check(unsafe {
            match &name {
                None => sys::sheaf_client_set_auth(self.raw.as_ptr(), kind, value_ptr),
                Some(name) => sys::sheaf_client_set_credential(self.raw.as_ptr(), kind, name.as_ptr(), value_ptr),
            }
        })?;
        Ok(self)
    }

    /// A bearer token: `set_auth(&Auth::Bearer(token))`.
    pub fn set_bearer(&mut self, token: &str) -> Result<&mut Self> {
        self.set_auth(&Auth::Bearer(token.to_string()))
    }

    /// Makes the bearer token come from `provider` (`sheaf_client_set_credential_provider`), in
    /// place of [`Client::set_auth`] (whichever is set later wins), for lists and requests made
    /// from now on. The client calls `provider(false)` for the token before its first request and
    /// keeps it; when the server answers 401 to it, `provider(true)` for a new one, and the
    /// refused request is sent again once with it (not counted as a retry; a second 401 is the
    /// request's answer). Requests refused together (a list's window) share one refresh. The
    /// token goes only to the base URL's origin and never into a message.
    ///
    /// `provider` runs on a library thread, never two calls at once for this client, and may
    /// block (a call to a token endpoint, on another client: one on this client would wait for
    /// itself); the client's request timeout bounds the wait for it. `Err(message)`, an empty
    /// token or one with a NUL byte fails the requests waiting for it with `SHEAF_E_CREDENTIAL`,
    /// its message saying `message` (which must hold no secret); the next request asks
    /// again. A panic in `provider` is caught and fails them the same way: none crosses into C.
    /// The library owns `provider` until no list or request of the client needs it, then drops it.
    pub fn set_token_provider<F>(&mut self, provider: F) -> Result<&mut Self>
    where
        F: FnMut(bool) -> std::result::Result<String, String> + Send + 'static,
    {
        let provider: Box<TokenProvider> = Box::new(Mutex::new(Box::new(provider)));
        let user_data = Box::into_raw(provider) as *mut c_void;
        // SAFETY: a live client; on success the library owns user_data until
        // destroy_token_provider, and calls on_credential with it meanwhile.
        let result = unsafe {
            sys::sheaf_client_set_credential_provider(
                self.raw.as_ptr(),
                sys::SHEAF_AUTH_BEARER,
                ptr::null(),
                Some(on_credential),
                user_data,
                Some(destroy_token_provider),
            )
        };
        if result != sys::SHEAF_OK {
            // A refused call never calls destroy: user_data is still ours.
            // SAFETY: made by Box::into_raw above, not handed over.
            drop(unsafe { Box::from_raw(user_data as *mut TokenProvider) });
        }
        check(result)?;
        Ok(self)
    }

    /// Adds a header sent with every list page and request.
    pub fn add_header(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        let (name, value) = (c_string(name, "a header name")?, c_string(value, "a header value")?);
        // SAFETY: a live client; copied strings.
        check(unsafe { sys::sheaf_client_add_header(self.raw.as_ptr(), name.as_ptr(), value.as_ptr()) })?;
        Ok(self)
    }

    /// Names a query parameter whose values messages hide.
    pub fn add_secret_param(&mut self, name: &str) -> Result<&mut Self> {
        let name = c_string(name, "a parameter name")?;
        // SAFETY: a live client; a copied string.
        check(unsafe { sys::sheaf_client_add_secret_param(self.raw.as_ptr(), name.as_ptr()) })?;
        Ok(self)
    }

    /// Sets a TLS file (`sys::SHEAF_TLS_CA_FILE`, `_CA_DIRECTORY`, `_CERT`, `_KEY`); None
    /// restores the default.
    pub fn set_tls_file(&mut self, which: i32, path: Option<&Path>) -> Result<&mut Self> {
        use std::os::unix::ffi::OsStrExt;
        let path = path
            .map(|p| CString::new(p.as_os_str().as_bytes()))
            .transpose()
            .map_err(|_| Error::usage(sys::SHEAF_E_INVALID_ARGUMENT, "the path holds a NUL byte"))?;
        // SAFETY: a live client; the path is copied.
        check(unsafe {
            sys::sheaf_client_set_tls_file(self.raw.as_ptr(), which, path.as_ref().map_or(ptr::null(), |p| p.as_ptr()))
        })?;
        Ok(self)
    }

    /// Gives the client a response cache in `folder` (None: none), at most `max_bytes` (0: 512 MiB):
    /// every GET answered 200 with an ETag or Last-Modified is stored and asked for again with
    /// its validators, a 304 answering with the stored page (see sheaf.h, `sheaf_client_set_cache`).
    pub fn set_cache(&mut self, folder: Option<&Path>, max_bytes: i64) -> Result<&mut Self> {
        use std::os::unix::ffi::OsStrExt;
        let folder = folder
            .map(|p| CString::new(p.as_os_str().as_bytes()))
            .transpose()
            .map_err(|_| Error::usage(sys::SHEAF_E_INVALID_ARGUMENT, "the path holds a NUL byte"))?;
        // SAFETY: a live client; the path is copied.
        check(unsafe {
            sys::sheaf_client_set_cache(self.raw.as_ptr(), folder.as_ref().map_or(ptr::null(), |p| p.as_ptr()), max_bytes)
        })?;
        Ok(self)
    }

    /// Sets an integer option (see [`ClientOption`] and sheaf.h's `sheaf_option`).
    pub fn set_option(&mut self, option: ClientOption, value: i64) -> Result<&mut Self> {
        // SAFETY: a live client.
        check(unsafe { sys::sheaf_client_set_option(self.raw.as_ptr(), option.raw(), value) })?;
        Ok(self)
    }

    /// Pages in flight at once (1..64), and whether the window adapts to the server from there.
    pub fn set_window(&mut self, window: i64, adaptive: bool) -> Result<&mut Self> {
        self.set_option(ClientOption::Window, window)?.set_option(ClientOption::AdaptiveWindow, adaptive as i64)
    }

    /// The whole-request and connect timeouts (None: none / the transport's default).
    pub fn set_timeouts(&mut self, request: Option<Duration>, connect: Option<Duration>) -> Result<&mut Self> {
        let ms = |d: Option<Duration>| d.map_or(0, |d| d.as_millis().clamp(1, i64::MAX as u128) as i64);
        self.set_option(ClientOption::TimeoutMs, ms(request))?.set_option(ClientOption::ConnectTimeoutMs, ms(connect))
    }

    /// Attempts per request including the first (1..100), and the backoff's base and cap.
    pub fn set_retries(&mut self, max_attempts: i64, base: Duration, max: Duration) -> Result<&mut Self> {
        self.set_option(ClientOption::MaxAttempts, max_attempts)?
            .set_option(ClientOption::RetryBaseMs, base.as_millis() as i64)?
            .set_option(ClientOption::RetryMaxMs, max.as_millis() as i64)
    }

    /// Sends the log records up to `level` (`sys::SHEAF_LOG_ERROR`..`SHEAF_LOG_DEBUG`) to
    /// `hook`, called on a library thread, one record at a time, never after the client is
    /// dropped. A panic in `hook` is caught (and the record dropped): none crosses into C.
    pub fn set_log<F: Fn(&LogRecord) + Send + Sync + 'static>(&mut self, level: i32, hook: F) -> Result<&mut Self> {
        let hook: Box<LogHook> = Box::new(Box::new(hook));
        let user_data = Box::into_raw(hook) as *mut c_void;
        // SAFETY: a live client; on success the library owns user_data until destroy_log_hook.
        let result = unsafe {
            sys::sheaf_client_set_log(self.raw.as_ptr(), level, Some(on_log), user_data, Some(destroy_log_hook))
        };
        if result != sys::SHEAF_OK {
            // A refused call never calls destroy: user_data is still ours.
            // SAFETY: made by Box::into_raw above, not handed over.
            drop(unsafe { Box::from_raw(user_data as *mut LogHook) });
        }
        check(result)?;
        Ok(self)
    }

    /// Waits until every log record made so far has been handed to the hook.
    pub fn flush_hooks(&self) -> Result<()> {
        // SAFETY: a live client.
        check(unsafe { sys::sheaf_client_flush_hooks(self.raw.as_ptr()) })
    }

    /// A list at `path` (joined to the base URL; may carry a query), to describe and run.
    pub fn list(&self, path: &str) -> Result<List> {
        let path = c_string(path, "the path")?;
        let mut raw = ptr::null_mut();
        // SAFETY: a live client; the list keeps the client alive in the library.
        check(unsafe { sys::sheaf_list_new(&mut raw, self.raw.as_ptr(), path.as_ptr()) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::usage(sys::SHEAF_E_INTERNAL, "sheaf_list_new gave NULL"))?;
        Ok(List { inner: Arc::new(ListHandle { raw }), started: false, _not_sync: PhantomData })
    }

    /// A single request: `method` ("GET", "POST", ...) at `path`.
    pub fn request(&self, method: &str, path: &str) -> Result<Request> {
        let (method, path) = (c_string(method, "the method")?, c_string(path, "the path")?);
        let mut raw = ptr::null_mut();
        // SAFETY: a live client; copied strings.
        check(unsafe { sys::sheaf_request_new(&mut raw, self.raw.as_ptr(), method.as_ptr(), path.as_ptr()) })?;
        let raw =
            NonNull::new(raw).ok_or_else(|| Error::usage(sys::SHEAF_E_INTERNAL, "sheaf_request_new gave NULL"))?;
        Ok(Request { raw, _not_sync: PhantomData })
    }

    /// A GET request at `path`.
    pub fn get(&self, path: &str) -> Result<Request> {
        self.request("GET", path)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: owned; lists and requests still open keep what they need.
        unsafe { sys::sheaf_client_free(self.raw.as_ptr()) }
    }
}

unsafe extern "C" fn on_log(record: *const sys::sheaf_log_record, user_data: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the record and its strings are borrowed for this call; user_data is the
        // LogHook set_log handed over, alive until destroy_log_hook.
        let (record, hook) = unsafe { (&*record, &*(user_data as *const LogHook)) };
        let text =
            |p: *const c_char| (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
        hook(&LogRecord {
            level: record.level,
            kind: record.kind,
            message: text(record.message).unwrap_or_default(),
            method: text(record.method),
            url: text(record.url),
            http_status: record.http_status,
        });
    }));
}

unsafe extern "C" fn on_credential(reply: *mut sys::sheaf_credential_reply, user_data: *mut c_void) {
    let answered = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: user_data is the TokenProvider set_token_provider handed over, alive until
        // destroy_token_provider; the reply is valid during this call.
        let provider = unsafe { &*(user_data as *const TokenProvider) };
        let refresh = unsafe { sys::sheaf_credential_reply_is_refresh(reply) } != 0;
        let given = {
            // A provider that panicked before poisons the mutex; it is still the provider.
            let mut provide = provider.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            catch_unwind(AssertUnwindSafe(|| provide(refresh)))
        };
        let failure = match given {
            Ok(Ok(token)) if token.is_empty() => "the token provider gave an empty token".to_string(),
            Ok(Ok(token)) => match CString::new(token) {
                // SAFETY: as above; the token is copied by the library.
                Ok(token) if unsafe { sys::sheaf_credential_reply_set(reply, token.as_ptr()) } == sys::SHEAF_OK => {
                    return;
                }
                Ok(_) => "the token provider gave a token that cannot be sent".to_string(),
                Err(_) => "the token provider gave a token with a NUL byte".to_string(),
            },
            Ok(Err(message)) => format!("the token provider failed: {message}"),
            Err(_) => "the token provider panicked".to_string(),
        };
        let message = CString::new(failure.replace('\0', " ")).unwrap_or_default();
        // SAFETY: as above; the message is copied by the library.
        unsafe { sys::sheaf_credential_reply_fail(reply, message.as_ptr()) };
    }));
    if answered.is_err() {
        // SAFETY: the reply is valid during this call; a static NUL-terminated message.
        unsafe { sys::sheaf_credential_reply_fail(reply, b"the token provider failed\0".as_ptr() as *const c_char) };
    }
}

unsafe extern "C" fn destroy_token_provider(user_data: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called once, when the library no longer needs the provider.
        drop(unsafe { Box::from_raw(user_data as *mut TokenProvider) });
    }));
}

unsafe extern "C" fn destroy_log_hook(user_data: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called once, when the library no longer needs the hook.
        drop(unsafe { Box::from_raw(user_data as *mut LogHook) });
    }));
}

// ---- lists ----------------------------------------------------------------------------------

/// The C list, shared by a [`List`] and its [`Canceller`]s: freed when the last goes.
struct ListHandle {
    raw: NonNull<sys::sheaf_list>,
}

// SAFETY: the handle is only used by the one List that owns it (one thread at a time, List is
// not Sync) and by Cancellers, which call nothing but sheaf_list_cancel: "sheaf_list_cancel is
// the one exception: it may be called from any thread" (sheaf.h, Thread safety).
unsafe impl Send for ListHandle {}
// SAFETY: as above: the only call made through a shared reference from several threads is
// sheaf_list_cancel.
unsafe impl Sync for ListHandle {}

impl Drop for ListHandle {
    fn drop(&mut self) {
        // SAFETY: the last owner; a running list is cancelled first by the library.
        unsafe { sys::sheaf_list_free(self.raw.as_ptr()) }
    }
}

/// Asks a running list to stop, from any thread (`sheaf_list_cancel`). Keeps the list's memory
/// alive while it exists, so it never meets a freed list. `Send + Sync`.
#[derive(Clone)]
pub struct Canceller {
    inner: Arc<ListHandle>,
}

impl fmt::Debug for Canceller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Canceller")
    }
}

impl Canceller {
    /// Stops the list: in-flight requests are abandoned, the outcome becomes cancelled (the
    /// iterator ends with an error whose [`Error::is_cancelled`]). A no-op when it does not run.
    pub fn cancel(&self) {
        // SAFETY: a live list (kept by the Arc); callable from any thread.
        unsafe { sys::sheaf_list_cancel(self.inner.raw.as_ptr()) };
    }
}

/// How the pages of a list are reached (`sheaf_paging`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Paging {
    /// Detected from the first page (the default).
    Detect,
    /// One response.
    Single,
    /// Follow the next signal page by page.
    Next,
    /// Page k is ?param=first+k.
    PageNumber {
        /// The query parameter.
        param: String,
        /// The first page's number.
        first: i64,
    },
    /// Page k is ?param=first+k*served.
    Offset {
        /// The query parameter.
        param: String,
        /// The first offset.
        first: i64,
    },
    /// The next page is ?param=<cursor>.
    Cursor {
        /// The query parameter.
        param: String,
    },
}

/// A page or request budget (`sheaf_budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Items delivered (as [`List::max_items`]).
    Items,
    /// Pages fetched.
    Pages,
    /// Requests sent, retries and redirects included.
    Requests,
    /// Milliseconds from the start; ends with `SHEAF_E_DEADLINE`.
    DeadlineMs,
}

/// Why a list ended (`sheaf_stop_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// It has not ended.
    None,
    /// Every page arrived.
    Complete,
    /// The item limit was reached; the resume token goes on from there.
    ItemLimit,
    /// The page budget was reached.
    PageBudget,
    /// The request budget was reached.
    RequestBudget,
    /// It failed, was stopped or cancelled.
    Failed,
    /// It reached an item at or below its "until" bound (what an earlier run saw).
    Bound,
    /// It ended after one full page that nothing confirmed was the last: every item the server
    /// showed is in, but a server paging by a parameter it was not told of has more.
    Unconfirmed,
    /// A reason this binding does not know (a newer library).
    Other(i32),
}

impl StopReason {
    fn from_raw(raw: sys::sheaf_stop_reason) -> StopReason {
        match raw {
            sys::SHEAF_STOP_NONE => StopReason::None,
            sys::SHEAF_STOP_COMPLETE => StopReason::Complete,
            sys::SHEAF_STOP_ITEM_LIMIT => StopReason::ItemLimit,
            sys::SHEAF_STOP_PAGE_BUDGET => StopReason::PageBudget,
            sys::SHEAF_STOP_REQUEST_BUDGET => StopReason::RequestBudget,
            sys::SHEAF_STOP_FAILED => StopReason::Failed,
            sys::SHEAF_STOP_BOUND => StopReason::Bound,
            sys::SHEAF_STOP_UNCONFIRMED => StopReason::Unconfirmed,
            other => StopReason::Other(other),
        }
    }
}

/// Where a list stands (`sheaf_list_status`, asked for with `SHEAF_LIST_STATUS_VERSION`).
#[derive(Debug, Clone, Copy)]
pub struct Status {
    /// `sys::SHEAF_LIST_NEW`, `_LOADING`, `_IDLE`, `_ENDED`.
    pub state: i32,
    /// Items delivered so far.
    pub items: i64,
    /// Pages delivered so far.
    pub pages: i64,
    /// The server's total, if known.
    pub expected_items: Option<i64>,
    /// Requests sent so far.
    pub requests_made: i64,
    /// Why it ended (None while it runs).
    pub stop_reason: StopReason,
    /// Of `requests_made`, those answered 304 from the client's response cache.
    pub requests_revalidated: i64,
    /// What the origin's rate limit has left, and the milliseconds to its reset, if a server said.
    pub quota: Option<(i64, i64)>,
}

/// Every item of a list that ended: the raw JSON array, each item's JSON text, why it stopped
/// and the token that goes on from there (None once the list completed).
#[derive(Debug, Clone)]
pub struct Items {
    /// The items as one JSON array, as the library returned it.
    pub json: String,
    /// Each item's JSON text, in order.
    pub items: Vec<String>,
    /// Why the list stopped (Complete, or a limit or budget).
    pub stop_reason: StopReason,
    /// Goes on where the list stopped; None when it completed.
    pub resume_token: Option<String>,
}

impl Items {
    /// How many items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// A list that failed ([`List::fetch_all_partial`]): the items that arrived before the failure
/// and the failure. `Display` and `source` are the error's; `From<Partial> for Error` keeps the
/// error alone, so `?` works where a function returns `sheaf::Result`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Partial {
    /// The items delivered before the failure, in order and de-duplicated (none when it failed
    /// before the first page): `stop_reason` is [`StopReason::Failed`] (or `None` for a list
    /// that never started), `resume_token` goes on after them.
    pub items: Items,
    /// What ended the list; its `resume_token` is `items.resume_token`.
    pub error: Error,
}

impl Partial {
    /// A failure before any item could arrive (the list was not started).
    fn before_any(error: Error) -> Partial {
        let items =
            Items { json: "[]".to_string(), items: Vec::new(), stop_reason: StopReason::None, resume_token: None };
        Partial { items, error }
    }

    /// The error, the items dropped.
    pub fn into_error(self) -> Error {
        self.error
    }
}

impl fmt::Display for Partial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (after {} items)", self.error, self.items.len())
    }
}

impl std::error::Error for Partial {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<Partial> for Error {
    fn from(partial: Partial) -> Error {
        partial.error
    }
}

/// One paginated list of a client: describe it, then run it once ([`List::fetch_all`] or
/// [`List::items`]).
///
/// `Send`, not `Sync`: "A sheaf_list is used by one thread at a time" (sheaf.h); to stop it
/// from another thread take a [`Canceller`] first.
pub struct List {
    inner: Arc<ListHandle>,
    started: bool,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("List").field("started", &self.started).finish_non_exhaustive()
    }
}

impl List {
    fn raw(&self) -> *mut sys::sheaf_list {
        self.inner.raw.as_ptr()
    }

    /// The list's last error, else the thread's.
    fn error(&self, code: i32) -> Error {
        // SAFETY: a live list; the copy is taken (and freed) by Error::take.
        let mut error = unsafe { Error::take(sys::sheaf_list_error(self.raw()), code) };
        if error.code == sys::SHEAF_OK {
            error.code = code;
        }
        error
    }

    fn check(&self, code: sys::sheaf_result) -> Result<()> {
        if code == sys::SHEAF_OK {
            Ok(())
        } else {
            Err(Error::last(code))
        }
    }

    /// Pins the shape of a known API ("github", "stripe", ...; see [`presets`]).
    pub fn preset(&mut self, name: &str) -> Result<&mut Self> {
        let name = c_string(name, "the preset")?;
        // SAFETY: a live list, used by this thread.
        self.check(unsafe { sys::sheaf_list_use_preset(self.raw(), name.as_ptr()) })?;
        Ok(self)
    }

    /// Describes the list from the description's JSON form (see sheaf.h and
    /// include/sheaf/description.schema.json).
    pub fn set_description(&mut self, json: &str) -> Result<&mut Self> {
        let json = c_string(json, "the description")?;
        // SAFETY: as above.
        self.check(unsafe { sys::sheaf_list_set_description(self.raw(), json.as_ptr()) })?;
        Ok(self)
    }

    /// The list's description as JSON (after a run: what was detected).
    pub fn description(&self) -> Result<String> {
        let (mut json, mut length) = (ptr::null_mut(), 0usize);
        // SAFETY: as above; the string is taken and freed.
        self.check(unsafe { sys::sheaf_list_description(self.raw(), &mut json, &mut length) })?;
        Ok(into_string(unsafe { take_bytes(json, Some(length)) }.unwrap_or_default()))
    }

    /// How pages are reached (`sheaf_list_set_paging`), without a page size parameter.
    pub fn paging(&mut self, paging: &Paging) -> Result<&mut Self> {
        let (kind, param, first) = match paging {
            Paging::Detect => (sys::SHEAF_PAGING_DETECT, None, 0),
            Paging::Single => (sys::SHEAF_PAGING_SINGLE, None, 0),
            Paging::Next => (sys::SHEAF_PAGING_NEXT, None, 0),
            Paging::PageNumber { param, first } => (sys::SHEAF_PAGING_PAGE_NUMBER, Some(param), *first),
            Paging::Offset { param, first } => (sys::SHEAF_PAGING_OFFSET, Some(param), *first),
            Paging::Cursor { param } => (sys::SHEAF_PAGING_CURSOR, Some(param), 0),
        };
        let param = param.map(|p| c_string(p, "the paging parameter")).transpose()?;
        let param = param.as_ref().map_or(ptr::null(), |p| p.as_ptr());
        // SAFETY: as above.
        self.check(unsafe { sys::sheaf_list_set_paging(self.raw(), kind, param, first, ptr::null(), 0) })?;
        Ok(self)
    }

    /// Adds a query parameter to every page request.
    pub fn query(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        let (name, value) = (c_string(name, "a parameter name")?, c_string(value, "a parameter value")?);
        // SAFETY: as above.
        self.check(unsafe { sys::sheaf_list_add_query(self.raw(), name.as_ptr(), value.as_ptr()) })?;
        Ok(self)
    }

    /// Adds a header to every page request.
    pub fn header(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        let (name, value) = (c_string(name, "a header name")?, c_string(value, "a header value")?);
        // SAFETY: as above.
        self.check(unsafe { sys::sheaf_list_add_header(self.raw(), name.as_ptr(), value.as_ptr()) })?;
        Ok(self)
    }

    /// Asks for every page with `method` and `body` (`sheaf_list_set_body`): a list behind a
    /// POST, such as Notion's database query or Elasticsearch's `_search`. `content_type` None is
    /// "application/json". The body is copied (the caller keeps `body`) and is never part of a
    /// message, a log record, a resume token or a description. Paging parameters named "body:"
    /// and a JSON pointer (the notion preset's "body:/start_cursor") are set inside the body page
    /// by page: the body must then be a JSON object (an empty body is `{}`), or the run fails with
    /// `SHEAF_E_INVALID_ARGUMENT`. A POST page that failed is sent again (retries, rate limits)
    /// only when the description says the endpoint only reads (`"read_only": true`, which the
    /// notion and elasticsearch presets set) or for a GraphQL query; otherwise the first transient
    /// failure fails the list. `body("GET", None, b"")` undoes it. A method that is no HTTP token,
    /// HEAD or CONNECT is refused here.
    pub fn body(&mut self, method: &str, content_type: Option<&str>, body: &[u8]) -> Result<&mut Self> {
        let method = c_string(method, "the method")?;
        let content_type = content_type.map(|t| c_string(t, "the content type")).transpose()?;
        let content_type = content_type.as_ref().map_or(ptr::null(), |t| t.as_ptr());
        // SAFETY: as above; `body` is copied.
        self.check(unsafe {
            sys::sheaf_list_set_body(
                self.raw(),
                method.as_ptr(),
                content_type,
                body.as_ptr() as *const c_void,
                body.len(),
            )
        })?;
        Ok(self)
    }

    /// Posts `json` (a JSON object's text) with every page: `body("POST", None, json.as_bytes())`.
    pub fn post_json(&mut self, json: &str) -> Result<&mut Self> {
        self.body("POST", None, json.as_bytes())
    }

    /// Makes the list a GraphQL connection: every page is a POST of
    /// `{"query": query, "variables": variables}`, `variables` being a JSON object's text (`""`
    /// is `{}`; [`json_string`] quotes a string for it), and the description gets
    /// `"graphql": {"connection": connection}`, `connection` being the JSON pointer to the
    /// connection in the answer (`"/data/repository/issues"`). The library then sets the page
    /// size in `variables.first` (100, or the description's `"graphql"` `"page_size"`) and the
    /// cursor in `variables.after`, page by page: the query takes `$first` and `$after` (leave them
    /// out of `variables`) and selects `pageInfo { hasNextPage endCursor }` and `nodes` (or
    /// `edges { node }`), and `totalCount` for a total. The items are the nodes.
    ///
    /// An answer with `"errors"` fails the list with `SHEAF_E_API`, its message naming the first
    /// error's message and path ([`List::fetch_all_partial`] keeps the items of the pages before
    /// it), unless the description says `"graphql": {"allow_partial": true}`; a GraphQL rate limit
    /// (RATE_LIMITED, THROTTLED) is waited out, and a failed page sent again (a query, never a
    /// mutation).
    ///
    /// The connection is added to what the description pins so far: its preset, `read_only`,
    /// `until`, `since`, `split` and identity stay, and a `"graphql"` object set before keeps its
    /// other parts (`first`, `after`, `page_size`, `allow_partial`, `nested`); its paging and other
    /// signals are the connection's. Call it after [`List::preset`] and [`List::set_description`],
    /// which replace the description, the connection included, and before [`List::nested`], which
    /// completes the connections inside each node that the query cuts short.
    pub fn graphql(&mut self, query: &str, variables: &str, connection: &str) -> Result<&mut Self> {
        let variables = match variables.trim() {
            "" => "{}",
            given => given,
        };
        if object_members(variables).is_none() {
            return Err(Error::usage(
                sys::SHEAF_E_INVALID_ARGUMENT,
                "the GraphQL variables must be a JSON object's text (\"\" or {} for none)",
            ));
        }
        if connection.is_empty() {
            return Err(Error::usage(
                sys::SHEAF_E_INVALID_ARGUMENT,
                "a GraphQL list needs its connection: the JSON pointer to it in the answer (\"/data/repository/issues\")",
            ));
        }
        let printed = self.description()?;
        let described =
            with_graphql(&printed, &[("\"connection\"", json_string(connection))]).ok_or_else(not_printed)?;
        self.set_description(&described)?;
        let body = format!("{{\"query\":{},\"variables\":{variables}}}", json_string(query));
        self.body("POST", None, body.as_bytes())
    }

    /// Completes the connection at `field` inside each node of a GraphQL list, such as an issue's
    /// comments that the list's query cuts short at `comments(first: 5)`: for each node whose
    /// connection there says `pageInfo.hasNextPage`, the library fetches the rest with `query`,
    /// which takes `$id` (the node's id), `$first` (100) and `$after` (the node's `endCursor`,
    /// then the last page's), and finds the connection in its answer at `/data/node` and `field`
    /// (GitHub's `node(id: $id) { ... on Issue { comments(first: $first, after: $after) { ... } } }`).
    /// The node is then delivered whole: its `nodes` (or `edges`) hold all of them,
    /// `pageInfo.hasNextPage` is false, and a `totalCount` that disagrees fails the list with
    /// `SHEAF_E_INCOMPLETE`. Those requests share the origin's window with the list, which goes on
    /// meanwhile and keeps its order. A nested connection that fails fails the list
    /// (`SHEAF_E_API` for a GraphQL error), its message naming the connection and the node's id,
    /// the items of the pages before it delivered ([`List::fetch_all_partial`]).
    ///
    /// It is an entry of the description's `"graphql"` `"nested"`: call it after [`List::graphql`]
    /// (or a [`List::set_description`] with a `"graphql"` object), which keep it when called again;
    /// a `field` given again replaces the earlier entry. [`List::nested_with`] sets the rest of an
    /// entry (its page size, its variables' names, where the connection is in the answer).
    pub fn nested(&mut self, field: &str, query: &str) -> Result<&mut Self> {
        self.nested_with(&NestedConnection::new(field, query))
    }

    /// Completes a connection inside each node of a GraphQL list, as [`List::nested`] does, with
    /// the parts of the entry that `nested` leaves to the library's defaults.
    pub fn nested_with(&mut self, nested: &NestedConnection<'_>) -> Result<&mut Self> {
        if nested.field.is_empty() || nested.query.is_empty() {
            return Err(Error::usage(
                sys::SHEAF_E_INVALID_ARGUMENT,
                "a nested connection needs its field (the JSON pointer to it inside each node, \"/comments\") and the query that pages it",
            ));
        }
        let printed = self.description()?;
        let members = object_members(&printed).ok_or_else(not_printed)?;
        let graphql = members
            .iter()
            .find(|(key, value)| *key == "\"graphql\"" && *value != "null")
            .and_then(|(_, value)| object_members(value))
            .filter(|graphql| graphql.iter().any(|(key, _)| *key == "\"connection\""))
            .ok_or_else(|| {
                Error::usage(
                    sys::SHEAF_E_INVALID_ARGUMENT,
                    "a nested connection goes with a GraphQL list: call List::graphql (or describe a \"graphql\" connection) first",
                )
            })?;
        let field = json_string(nested.field);
        let mut entries: Vec<String> = graphql
            .iter()
            .find(|(key, value)| *key == "\"nested\"" && *value != "null")
            .map(|(_, value)| split_array(value))
            .unwrap_or_default();
        entries.retain(|entry| {
            object_members(entry)
                .map_or(true, |parts| !parts.iter().any(|(key, value)| *key == "\"field\"" && *value == field))
        });
        entries.push(nested.json());
        let described =
            with_graphql(&printed, &[("\"nested\"", format!("[{}]", entries.join(",")))]).ok_or_else(not_printed)?;
        self.set_description(&described)
    }

    /// Stops after `max_items` items (0: no limit), with [`StopReason::ItemLimit`].
    pub fn max_items(&mut self, max_items: i64) -> Result<&mut Self> {
        // SAFETY: as above.
        self.check(unsafe { sys::sheaf_list_set_max_items(self.raw(), max_items) })?;
        Ok(self)
    }

    /// Sets a budget (0: none).
    pub fn budget(&mut self, budget: Budget, value: i64) -> Result<&mut Self> {
        let raw = match budget {
            Budget::Items => sys::SHEAF_BUDGET_ITEMS,
            Budget::Pages => sys::SHEAF_BUDGET_PAGES,
            Budget::Requests => sys::SHEAF_BUDGET_REQUESTS,
            Budget::DeadlineMs => sys::SHEAF_BUDGET_DEADLINE_MS,
        };
        // SAFETY: as above.
        self.check(unsafe { sys::sheaf_list_set_budget(self.raw(), raw, value) })?;
        Ok(self)
    }

    /// Goes on where the run that made `token` stopped (the list described alike).
    pub fn resume(&mut self, token: &str) -> Result<&mut Self> {
        let token = c_string(token, "the resume token")?;
        // SAFETY: as above.
        self.check(unsafe { sys::sheaf_list_set_resume(self.raw(), token.as_ptr()) })?;
        Ok(self)
    }

    /// A handle that cancels this list from any thread.
    pub fn canceller(&self) -> Canceller {
        Canceller { inner: Arc::clone(&self.inner) }
    }

    /// Where the list stands (`sheaf_list_get_status`).
    pub fn status(&self) -> Status {
        // SAFETY: all-zero is a valid sheaf_list_status; the version is set as the header asks.
        let mut raw: sys::sheaf_list_status = unsafe { std::mem::zeroed() };
        raw.version = sys::SHEAF_LIST_STATUS_VERSION;
        // SAFETY: a live list and a struct of this header's version.
        unsafe { sys::sheaf_list_get_status(self.raw(), &mut raw) };
        Status {
            state: raw.state,
            items: raw.items,
            pages: raw.pages,
            expected_items: (raw.expected_items >= 0).then_some(raw.expected_items),
            requests_made: raw.requests_made,
            stop_reason: StopReason::from_raw(raw.stop_reason),
            requests_revalidated: raw.requests_revalidated,
            quota: (raw.quota_remaining >= 0).then_some((raw.quota_remaining, raw.quota_reset_ms)),
        }
    }

    /// The token that goes on after the items delivered so far; None when nothing is left.
    pub fn resume_token(&self) -> Option<String> {
        let mut token = ptr::null_mut();
        // SAFETY: a live list; the string is taken and freed.
        if unsafe { sys::sheaf_list_resume_token(self.raw(), &mut token) } != sys::SHEAF_OK {
            return None;
        }
        unsafe { take_bytes(token, None) }.map(into_string)
    }

    fn start_once(&mut self) -> Result<()> {
        if self.started {
            return Err(Error::usage(sys::SHEAF_E_STATE, "a list runs once"));
        }
        self.started = true;
        Ok(())
    }

    /// Runs the list to its end and returns every item (blocks). On a failure, the error
    /// carries the resume token after the items that arrived; [`List::fetch_all_partial`]
    /// returns those items with it.
    pub fn fetch_all(self) -> Result<Items> {
        self.fetch_all_partial().map_err(|partial| partial.error)
    }

    /// As [`List::fetch_all`], but a failure after some pages hands over the items that arrived
    /// before it, in order, with the error: a [`Partial`] (as `sheaf_list_fetch_all` hands C
    /// callers the prefix on failure). `?` turns a `Partial` into its [`Error`] where a function
    /// returns `sheaf::Result`.
    pub fn fetch_all_partial(mut self) -> Result<Items, Partial> {
        self.start_once().map_err(|error| Partial::before_any(error))?;
        let (mut json, mut length) = (ptr::null_mut(), 0usize);
        // SAFETY: a live list; the array is taken and freed. The library sets it on failure too
        // (the items before the failure), "[]" when none arrived.
        let result = unsafe { sys::sheaf_list_fetch_all(self.raw(), &mut json, &mut length) };
        let bytes = unsafe { take_bytes(json, Some(length)) }.unwrap_or_else(|| b"[]".to_vec());
        let json = into_string(bytes);
        let items = Items {
            items: split_array(&json),
            json,
            stop_reason: self.status().stop_reason,
            resume_token: self.resume_token(),
        };
        if result != sys::SHEAF_OK {
            let mut error = self.error(result);
            error.resume_token = items.resume_token.clone();
            return Err(Partial { items, error });
        }
        Ok(items)
    }

    /// Starts the list in the background and iterates over its items in order as they arrive
    /// (`sheaf_list_start_pull` + `sheaf_list_next`, on the caller's thread: no callback).
    /// A failure is the iterator's last element; cancelling ends it with a cancelled error.
    pub fn items(mut self) -> Result<ItemIter> {
        self.start_once()?;
        // SAFETY: a live list, used by this thread.
        self.check(unsafe { sys::sheaf_list_start_pull(self.raw()) })?;
        Ok(ItemIter {
            list: self,
            pending: Default::default(),
            ended: false,
            stop_reason: StopReason::None,
            resume_token: None,
        })
    }
}

impl Drop for List {
    fn drop(&mut self) {
        // Cancellers may keep the handle alive: the list must not run on without its owner.
        if self.started {
            // SAFETY: a live list.
            unsafe { sys::sheaf_list_cancel(self.raw()) };
        }
    }
}

/// The items of a running list, in order, as JSON texts ([`List::items`]). `Send`, not `Sync`.
pub struct ItemIter {
    list: List,
    pending: std::collections::VecDeque<String>,
    ended: bool,
    stop_reason: StopReason,
    resume_token: Option<String>,
}

impl fmt::Debug for ItemIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemIter").field("ended", &self.ended).finish_non_exhaustive()
    }
}

impl ItemIter {
    /// A handle that cancels the list from any thread.
    pub fn canceller(&self) -> Canceller {
        self.list.canceller()
    }

    /// Why the list stopped, once the iterator has ended (None before).
    pub fn stop_reason(&self) -> StopReason {
        self.stop_reason
    }

    /// Where the list stands.
    pub fn status(&self) -> Status {
        self.list.status()
    }

    /// Once ended: the token that goes on from the items delivered (None when it completed).
    /// Before: the token after the snapshots taken so far.
    pub fn resume_token(&self) -> Option<String> {
        if self.ended {
            self.resume_token.clone()
        } else {
            self.list.resume_token()
        }
    }

    /// Takes the next snapshot's items into `pending`; Ok(false) at the end.
    fn pull(&mut self) -> Result<bool> {
        let mut snapshot: *const sys::sheaf_snapshot = ptr::null();
        // SAFETY: a live list started for pulling, used by this thread; the snapshot stays
        // valid until the next sheaf_list_next, and is copied out before that.
        let result = unsafe { sys::sheaf_list_next(self.list.raw(), -1, &mut snapshot) };
        if result != sys::SHEAF_OK {
            return Err(self.list.error(result));
        }
        let Some(snapshot) = (unsafe { snapshot.as_ref() }) else {
            return Ok(false);
        };
        if snapshot.version < 1 {
            return Err(Error::usage(sys::SHEAF_E_INTERNAL, "a snapshot of version 0"));
        }
        if snapshot.delta_length > 0 && !snapshot.delta_json.is_null() {
            // SAFETY: delta_length bytes at delta_json, borrowed until the next call.
            let bytes = unsafe { std::slice::from_raw_parts(snapshot.delta_json as *const u8, snapshot.delta_length) };
            self.pending.extend(split_array(&String::from_utf8_lossy(bytes)));
        }
        Ok(true)
    }

    /// The end: the outcome, the stop reason and the resume token.
    fn finish(&mut self) -> Option<Error> {
        self.ended = true;
        // SAFETY: every snapshot was taken: sheaf_list_wait returns the outcome at once.
        let outcome = unsafe { sys::sheaf_list_wait(self.list.raw()) };
        self.stop_reason = self.list.status().stop_reason;
        self.resume_token = self.list.resume_token();
        (outcome != sys::SHEAF_OK).then(|| {
            let mut error = self.list.error(outcome);
            error.resume_token = self.resume_token.clone();
            error
        })
    }
}

impl Iterator for ItemIter {
    type Item = Result<String>;

    fn next(&mut self) -> Option<Result<String>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(Ok(item));
            }
            if self.ended {
                return None;
            }
            match self.pull() {
                Ok(true) => continue,
                Ok(false) => return self.finish().map(Err),
                Err(error) => {
                    self.ended = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

/// A connection inside each node of a GraphQL list that the list's query cuts short (an issue's
/// `comments(first: 5)` of 40), completed by a query of its own ([`List::nested_with`]): an entry
/// of the description's `"graphql"` `"nested"` (include/sheaf/description.schema.json). `field`
/// and `query` are required; a part left `None` is the library's default.
///
/// ```
/// let query = "query($id: ID!, $first: Int!, $after: String) { node(id: $id) { ... } }";
/// let comments = sheaf::NestedConnection { page_size: Some(50), ..sheaf::NestedConnection::new("/comments", query) };
/// assert_eq!((comments.field, comments.connection), ("/comments", None));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NestedConnection<'a> {
    /// The connection inside each node, a JSON pointer (`"/comments"`).
    pub field: &'a str,
    /// The query that pages one node's connection, taking the node's id, the page size and the
    /// cursor.
    pub query: &'a str,
    /// Where the connection is in that query's answer (None: `/data/node` and `field`).
    pub connection: Option<&'a str>,
    /// The query's page-size variable (None: `first`).
    pub first: Option<&'a str>,
    /// Its cursor variable (None: `after`).
    pub after: Option<&'a str>,
    /// The variable the node's id is sent in, and the node's field that holds it (None: `id`).
    pub id: Option<&'a str>,
    /// The size sent in the page-size variable (None: 100).
    pub page_size: Option<i64>,
}

impl<'a> NestedConnection<'a> {
    /// The connection at `field` inside each node, paged by `query`; the rest the defaults.
    pub fn new(field: &'a str, query: &'a str) -> Self {
        NestedConnection { field, query, ..Default::default() }
    }

    /// The entry's JSON text.
    fn json(&self) -> String {
        use std::fmt::Write;
        let mut out = format!("{{\"field\":{},\"query\":{}", json_string(self.field), json_string(self.query));
        for (name, value) in
            [("connection", self.connection), ("first", self.first), ("after", self.after), ("id", self.id)]
        {
            if let Some(value) = value {
                let _ = write!(out, ",\"{name}\":{}", json_string(value));
            }
        }
        if let Some(size) = self.page_size {
            let _ = write!(out, ",\"page_size\":{size}");
        }
        out.push('}');
        out
    }
}

/// `text` as a JSON string literal, quotes included (`"`, `\` and control characters escaped):
/// for writing a body or GraphQL variables without a JSON library, e.g.
/// `format!(r#"{{"owner": {}}}"#, sheaf::json_string(owner))`.
pub fn json_string(text: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Where a byte of valid JSON text is: inside a string or not (the scanners below share it).
#[derive(Default)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Whether `b` is structure: outside every string (a string's opening quote included).
    fn structural(&mut self, b: u8) -> bool {
        if self.inside {
            match b {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.inside = false,
                _ => {}
            }
            return false;
        }
        self.inside = b == b'"';
        true
    }
}

/// The members of a JSON object's text (valid JSON, as the library prints it): each key's text,
/// quotes included, and its value's text. None when it is not an object.
fn object_members(json: &str) -> Option<Vec<(&str, &str)>> {
    let inner = json.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut pieces = Vec::new();
    let (mut depth, mut strings, mut start) = (0usize, Strings::default(), 0usize);
    for (i, &b) in inner.as_bytes().iter().enumerate() {
        if !strings.structural(b) {
            continue;
        }
        match b {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => {
                pieces.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if strings.inside || depth != 0 {
        return None;
    }
    if !inner.trim().is_empty() {
        pieces.push(&inner[start..]);
    }
    pieces
        .into_iter()
        .map(|piece| {
            let piece = piece.trim();
            let bytes = piece.as_bytes();
            if bytes.first() != Some(&b'"') {
                return None;
            }
            let mut escaped = false;
            let end = bytes.iter().enumerate().skip(1).find_map(|(i, &b)| {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => return Some(i + 1),
                    _ => {}
                }
                None
            })?;
            let value = piece[end..].trim_start().strip_prefix(':')?.trim();
            (!value.is_empty()).then_some((&piece[..end], value))
        })
        .collect()
}

/// The error of a description the library printed that this crate cannot read.
fn not_printed() -> Error {
    Error::usage(sys::SHEAF_E_INTERNAL, "the library printed a description that is not a JSON object")
}

/// The description `printed` (sheaf_list_description's text) with the members `parts` (each
/// key's text, quotes included, and its value's text) in its "graphql" object, over that object's
/// members of the same keys (in their place; the others after them): its paging, its plan and its
/// signals but the identity left out (the connection pins them).
fn with_graphql(printed: &str, parts: &[(&str, String)]) -> Option<String> {
    let mut members = Vec::new();
    let (mut graphql, mut replaced) = (Vec::new(), Vec::new());
    for (key, value) in object_members(printed)? {
        match key {
            "\"paging\"" | "\"plan\"" => {}
            "\"signals\"" => {
                if let Some((_, identity)) = object_members(value)?.into_iter().find(|(k, _)| *k == "\"identity\"") {
                    members.push(format!("\"signals\":{{\"identity\":{identity}}}"));
                }
            }
            "\"graphql\"" if value != "null" => {
                for (k, v) in object_members(value)? {
                    match parts.iter().find(|(part, _)| *part == k) {
                        Some((_, given)) => {
                            graphql.push(format!("{k}:{given}"));
                            replaced.push(k);
                        }
                        None => graphql.push(format!("{k}:{v}")),
                    }
                }
            }
            "\"graphql\"" => {}
            _ => members.push(format!("{key}:{value}")),
        }
    }
    graphql
        .extend(parts.iter().filter(|(key, _)| !replaced.contains(key)).map(|(key, value)| format!("{key}:{value}")));
    members.push(format!("\"graphql\":{{{}}}", graphql.join(",")));
    Some(format!("{{{}}}", members.join(",")))
}

/// Splits a JSON array (as the library hands it: valid JSON) into its elements' texts.
fn split_array(json: &str) -> Vec<String> {
    let bytes = json.as_bytes();
    let mut items = Vec::new();
    let (mut depth, mut strings, mut start) = (0usize, Strings::default(), None::<usize>);
    for (i, &b) in bytes.iter().enumerate() {
        if !strings.structural(b) {
            continue;
        }
        match b {
            b'"' => {
                if depth == 1 && start.is_none() {
                    start = Some(i);
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth == 2 && start.is_none() {
                    start = Some(i);
                }
            }
            b']' | b'}' if depth == 1 => {
                if let Some(s) = start.take() {
                    items.push(json[s..i].trim().to_string());
                }
                depth = 0;
            }
            b']' | b'}' => depth -= 1,
            b',' if depth == 1 => {
                if let Some(s) = start.take() {
                    items.push(json[s..i].trim().to_string());
                }
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if depth == 1 && start.is_none() => start = Some(i),
            _ => {}
        }
    }
    items
}

// ---- single requests ------------------------------------------------------------------------

/// One HTTP request of a client; [`Request::send`] sends it and returns its [`Response`].
///
/// `Send`, not `Sync`: "so is a sheaf_request" (used by one thread at a time, sheaf.h).
pub struct Request {
    raw: NonNull<sys::sheaf_request>,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

// SAFETY: one thread at a time is all the header asks of a request; Request is not Sync and its
// methods take &mut self or self.
unsafe impl Send for Request {}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Request")
    }
}

/// A response, copied out of the request.
#[derive(Debug, Clone)]
pub struct Response {
    /// The final HTTP status.
    pub status: i32,
    /// The URL that answered, after redirects (secret query values redacted).
    pub url: String,
    /// The headers, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body (empty for a download: it is in the file).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Request {
    fn raw(&self) -> *mut sys::sheaf_request {
        self.raw.as_ptr()
    }

    /// Appends one path segment, percent-encoded ("a/b c" is one segment).
    pub fn segment(self, segment: &str) -> Result<Self> {
        let segment = c_string(segment, "a path segment")?;
        // SAFETY: a live request, used by this thread; copied string.
        check(unsafe { sys::sheaf_request_add_segment(self.raw(), segment.as_ptr()) })?;
        Ok(self)
    }

    /// Appends a query parameter.
    pub fn query(self, name: &str, value: &str) -> Result<Self> {
        let (name, value) = (c_string(name, "a parameter name")?, c_string(value, "a parameter value")?);
        // SAFETY: as above.
        check(unsafe { sys::sheaf_request_add_query(self.raw(), name.as_ptr(), value.as_ptr()) })?;
        Ok(self)
    }

    /// Adds a request header.
    pub fn header(self, name: &str, value: &str) -> Result<Self> {
        let (name, value) = (c_string(name, "a header name")?, c_string(value, "a header value")?);
        // SAFETY: as above.
        check(unsafe { sys::sheaf_request_add_header(self.raw(), name.as_ptr(), value.as_ptr()) })?;
        Ok(self)
    }

    /// Sets the body and its content type.
    pub fn body(self, content_type: &str, data: &[u8]) -> Result<Self> {
        let content_type = c_string(content_type, "the content type")?;
        // SAFETY: as above; `data` is copied.
        check(unsafe {
            sys::sheaf_request_set_body(self.raw(), content_type.as_ptr(), data.as_ptr() as *const c_void, data.len())
        })?;
        Ok(self)
    }

    /// A JSON body (`application/json`), given as its text.
    pub fn json(self, json: &str) -> Result<Self> {
        self.body("application/json", json.as_bytes())
    }

    /// Appends a field of an application/x-www-form-urlencoded body.
    pub fn form(self, name: &str, value: &str) -> Result<Self> {
        let (name, value) = (c_string(name, "a field name")?, c_string(value, "a field value")?);
        // SAFETY: as above.
        check(unsafe { sys::sheaf_request_add_form(self.raw(), name.as_ptr(), value.as_ptr()) })?;
        Ok(self)
    }

    /// Makes the request a download into the file `path` (written whole or not at all).
    pub fn output_file(self, path: impl AsRef<Path>) -> Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let path = CString::new(path.as_ref().as_os_str().as_bytes())
            .map_err(|_| Error::usage(sys::SHEAF_E_INVALID_ARGUMENT, "the path holds a NUL byte"))?;
        // SAFETY: as above.
        check(unsafe { sys::sheaf_request_set_output_file(self.raw(), path.as_ptr()) })?;
        Ok(self)
    }

    /// Retries transient failures even for a method that is not idempotent.
    pub fn retry(self, retry: bool) -> Result<Self> {
        // SAFETY: as above.
        check(unsafe { sys::sheaf_request_set_retry(self.raw(), retry as c_int) })?;
        Ok(self)
    }

    /// Sends the request and waits for its response. A non-2xx status is an `Err` with
    /// `code == SHEAF_E_HTTP`, `http_status`, the body's start and the server's message; see
    /// [`Request::send_any_status`] to get such a response as a `Response`.
    pub fn send(self) -> Result<Response> {
        let (result, response) = self.exchange()?;
        match result {
            Ok(()) => Ok(response),
            Err(error) => Err(error),
        }
    }

    /// Sends the request; any HTTP status is a `Response` (only failures without a response,
    /// such as a timeout or a refused connection, are errors).
    pub fn send_any_status(self) -> Result<Response> {
        let (result, response) = self.exchange()?;
        match result {
            Err(error) if error.code != sys::SHEAF_E_HTTP => Err(error),
            _ => Ok(response),
        }
    }

    fn exchange(self) -> Result<(Result<()>, Response)> {
        // SAFETY: a live request, used by this thread; the response's borrowed pointers are
        // copied out before the request is freed (on drop).
        unsafe {
            let code = sys::sheaf_request_send(self.raw());
            let outcome = if code == sys::SHEAF_OK {
                Ok(())
            } else {
                Err(Error::take(sys::sheaf_request_error(self.raw()), code))
            };
            if let Err(error) = &outcome {
                if error.code != sys::SHEAF_E_HTTP {
                    return Err(error.clone());
                }
            }
            let text = |p: *const c_char| {
                if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            let mut headers = Vec::new();
            for index in 0..sys::sheaf_request_header_count(self.raw()) {
                let (mut name, mut value) = (ptr::null(), ptr::null());
                if sys::sheaf_request_header(self.raw(), index, &mut name, &mut value) == sys::SHEAF_OK {
                    headers.push((text(name), text(value)));
                }
            }
            let mut length = 0usize;
            let body = sys::sheaf_request_body(self.raw(), &mut length);
            let body = if body.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(body as *const u8, length).to_vec()
            };
            let response = Response {
                status: sys::sheaf_request_status(self.raw()),
                url: text(sys::sheaf_request_url(self.raw())),
                headers,
                body,
            };
            Ok((outcome, response))
        }
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        // SAFETY: owned; cancelled first by the library if in flight.
        unsafe { sys::sheaf_request_free(self.raw()) }
    }
}

#[cfg(test)]
mod tests {
    use super::{json_string, object_members, split_array, with_graphql, NestedConnection};

    #[test]
    fn quotes_json_strings() {
        assert_eq!(json_string(""), "\"\"");
        assert_eq!(json_string("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }

    #[test]
    fn reads_object_members() {
        assert_eq!(object_members("{}"), Some(vec![]));
        assert_eq!(
            object_members(r#" {"a": 1, "b\"{": {"c": [1, "}"]}, "d":null} "#),
            Some(vec![("\"a\"", "1"), ("\"b\\\"{\"", r#"{"c": [1, "}"]}"#), ("\"d\"", "null")])
        );
        assert_eq!(object_members("[1]"), None);
        assert_eq!(object_members("{\"a\"}"), None);
        assert_eq!(object_members("{\"a\": [}"), None);
    }

    #[test]
    fn adds_a_graphql_connection_to_a_description() {
        let printed = r#"{"paging":{"kind":"detect"},"signals":{"items":null,"identity":{"source":"item","where":"/id"}},"plan":null,"preset":null,"graphql":{"connection":"/data/x","page_size":40}}"#;
        let connection = |pointer: &str| [("\"connection\"", json_string(pointer))];
        assert_eq!(
            with_graphql(printed, &connection("/data/repository/issues")).unwrap(),
            r#"{"signals":{"identity":{"source":"item","where":"/id"}},"preset":null,"graphql":{"connection":"/data/repository/issues","page_size":40}}"#
        );
        assert_eq!(with_graphql("{}", &connection("/data/a")).unwrap(), r#"{"graphql":{"connection":"/data/a"}}"#);
        assert_eq!(
            with_graphql(r#"{"graphql":{"connection":"/data/a","nested":null}}"#, &[("\"nested\"", "[1]".to_string())])
                .unwrap(),
            r#"{"graphql":{"connection":"/data/a","nested":[1]}}"#
        );
        assert_eq!(
            with_graphql(r#"{"graphql":{"connection":"/data/a","nestedness":1}}"#, &[("\"nested\"", "[]".to_string())])
                .unwrap(),
            r#"{"graphql":{"connection":"/data/a","nestedness":1,"nested":[]}}"#
        );
    }

    #[test]
    fn writes_a_nested_connection() {
        assert_eq!(NestedConnection::new("/comments", "q\"").json(), r#"{"field":"/comments","query":"q\""}"#);
        let full = NestedConnection { id: Some("key"), page_size: Some(50), ..NestedConnection::new("/c", "q") };
        assert_eq!(full.json(), r#"{"field":"/c","query":"q","id":"key","page_size":50}"#);
    }

    #[test]
    fn splits_arrays() {
        assert_eq!(split_array("[]"), Vec::<String>::new());
        assert_eq!(
            split_array("[1, \"a,]\\\"\" ,{\"x\":[1,2]},null,[3]]"),
            vec!["1", "\"a,]\\\"\"", "{\"x\":[1,2]}", "null", "[3]"]
        );
        assert_eq!(split_array("[\n  {\"id\": 0},\n  {\"id\": 1}\n]\n"), vec!["{\"id\": 0}", "{\"id\": 1}"]);
    }

    fn _assert_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<super::Client>();
        send_sync::<super::Canceller>();
        send::<super::List>();
        send::<super::Request>();
        send::<super::ItemIter>();
    }
}
