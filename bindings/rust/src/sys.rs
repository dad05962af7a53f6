//! The raw C interface of `include/sheaf.h`, declared by hand (no bindgen).
//!
//! Everything here is `unsafe` to call and follows the header's rules to the letter: see its top
//! comment for thread safety, ownership (strings the library returns are freed with
//! [`sheaf_free`], errors with [`sheaf_error_free`]) and versioned structs. The safe API of this
//! crate ([`crate::Client`], [`crate::List`], [`crate::Request`]) is built on it.
//!
//! The declarations are written through four small macros that also record what they declare
//! (names, parameter and field types as text, offsets and sizes, constant values, and the address
//! of every function). `tests/sys_drift.rs` compares that record with the header itself (parsed,
//! and compiled by `cc` into a program that prints `sizeof`/`offsetof` and every constant), so
//! this file cannot drift from `sheaf.h` unnoticed. All 110 functions are here (1.0.0's 89, the partitions'
//! three, the groups' fifteen, `sheaf_list_url`, `sheaf_list_delta_has_long_digits` and
//! `sheaf_arrow_from_json`).
//!
//! C enums are `c_int` type aliases with one constant per value (a C enum is an `int` on every
//! platform Sheaf supports; the drift test checks the size), so a value a newer library appends
//! is never undefined behaviour on the Rust side.

#![allow(non_camel_case_types, missing_docs)]

use std::marker::{PhantomData, PhantomPinned};
pub use std::os::raw::{c_char, c_int, c_uint, c_void};

/// A function as declared here: for the drift test.
#[doc(hidden)]
#[derive(Debug)]
pub struct FunctionDecl {
    pub name: &'static str,
    pub params: &'static [(&'static str, &'static str)],
    pub ret: &'static str,
    /// The resolved address: taking it makes the test link every symbol of the library.
    pub address: usize,
}

/// A callback type as declared here: for the drift test.
#[doc(hidden)]
#[derive(Debug)]
pub struct CallbackDecl {
    pub name: &'static str,
    pub params: &'static [(&'static str, &'static str)],
    pub ret: &'static str,
}

/// A struct field as declared here: for the drift test.
#[doc(hidden)]
#[derive(Debug)]
pub struct FieldDecl {
    pub name: &'static str,
    pub ty: &'static str,
    pub offset: usize,
    pub size: usize,
}

/// A struct as declared here: for the drift test.
#[doc(hidden)]
#[derive(Debug)]
pub struct StructDecl {
    pub name: &'static str,
    pub size: usize,
    pub align: usize,
    pub fields: Vec<FieldDecl>,
}

macro_rules! ret_text {
    () => {
        ""
    };
    ($r:ty) => {
        stringify!($r)
    };
}

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {
        $(
            /// An opaque handle of the header (only ever behind a pointer).
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
                _marker: PhantomData<(*mut u8, PhantomPinned)>,
            }
        )*
        /// The opaque handle types declared here: for the drift test.
        #[doc(hidden)]
        pub const OPAQUE: &[&str] = &[$(stringify!($name)),*];
    };
}

macro_rules! callbacks {
    ($($name:ident($($p:ident: $t:ty),* $(,)?) $(-> $r:ty)?;)*) => {
        $(pub type $name = Option<unsafe extern "C" fn($($p: $t),*) $(-> $r)?>;)*
        /// The callback types declared here: for the drift test.
        #[doc(hidden)]
        pub fn callbacks() -> Vec<CallbackDecl> {
            vec![$(CallbackDecl {
                name: stringify!($name),
                params: &[$((stringify!($p), stringify!($t))),*],
                ret: ret_text!($($r)?),
            }),*]
        }
    };
}

macro_rules! enums {
    ($($name:ident { $($constant:ident = $value:literal,)* })*) => {
        $(
            pub type $name = c_int;
            $(pub const $constant: $name = $value;)*
        )*
        /// Every enum declared here with its constants: for the drift test.
        #[doc(hidden)]
        pub const ENUMS: &[(&str, &[(&str, i64)])] = &[$((stringify!($name), &[$((stringify!($constant), $value)),*])),*];
    };
}

macro_rules! structs {
    ($($name:ident { $($field:ident: $t:ty,)* })*) => {
        $(
            #[repr(C)]
            #[derive(Debug, Clone, Copy)]
            pub struct $name {
                $(pub $field: $t,)*
            }
        )*
        /// Every struct declared here, with its layout as Rust computes it: for the drift test.
        #[doc(hidden)]
        pub fn structs() -> Vec<StructDecl> {
            vec![$(StructDecl {
                name: stringify!($name),
                size: std::mem::size_of::<$name>(),
                align: std::mem::align_of::<$name>(),
                fields: vec![$(FieldDecl {
                    name: stringify!($field),
                    ty: stringify!($t),
                    offset: std::mem::offset_of!($name, $field),
                    size: std::mem::size_of::<$t>(),
                }),*],
            }),*]
        }
    };
}

macro_rules! functions {
    ($(fn $name:ident($($p:ident: $t:ty),* $(,)?) $(-> $r:ty)?;)*) => {
        extern "C" {
            $(pub fn $name($($p: $t),*) $(-> $r)?;)*
        }
        /// Every function declared here, with its address: for the drift test.
        #[doc(hidden)]
        pub fn functions() -> Vec<FunctionDecl> {
            vec![$(FunctionDecl {
                name: stringify!($name),
                params: &[$((stringify!($p), stringify!($t))),*],
                ret: ret_text!($($r)?),
                address: $name as *const () as usize,
            }),*]
        }
    };
}

/* ---- #define constants ----------------------------------------------------------------- */

pub const SHEAF_VERSION_MAJOR: c_int = 1;
pub const SHEAF_VERSION_MINOR: c_int = 0;
pub const SHEAF_VERSION_PATCH: c_int = 0;
pub const SHEAF_VERSION_STRING: &str = "1.0.0";
pub const SHEAF_VERSION_NUMBER: c_int = SHEAF_VERSION_MAJOR * 10000 + SHEAF_VERSION_MINOR * 100 + SHEAF_VERSION_PATCH;
pub const SHEAF_ERROR_VERSION: c_uint = 1;
pub const SHEAF_LOG_RECORD_VERSION: c_uint = 1;
pub const SHEAF_EVENT_VERSION: c_uint = 1;
pub const SHEAF_SNAPSHOT_VERSION: c_uint = 1;
pub const SHEAF_LIST_STATUS_VERSION: c_uint = 2;
pub const SHEAF_GROUP_DELTA_VERSION: c_uint = 2;
// The Arrow C data interface's flags, for `ArrowSchema::flags` (an i64 there, so i64 here).
pub const ARROW_FLAG_DICTIONARY_ORDERED: i64 = 1;
pub const ARROW_FLAG_NULLABLE: i64 = 2;
pub const ARROW_FLAG_MAP_KEYS_SORTED: i64 = 4;

/// The integer `#define`s of the header with their values: for the drift test.
#[doc(hidden)]
pub const DEFINES: &[(&str, i64)] = &[
    ("SHEAF_VERSION_MAJOR", SHEAF_VERSION_MAJOR as i64),
    ("SHEAF_VERSION_MINOR", SHEAF_VERSION_MINOR as i64),
    ("SHEAF_VERSION_PATCH", SHEAF_VERSION_PATCH as i64),
    ("SHEAF_VERSION_NUMBER", SHEAF_VERSION_NUMBER as i64),
    ("SHEAF_ERROR_VERSION", SHEAF_ERROR_VERSION as i64),
    ("SHEAF_LOG_RECORD_VERSION", SHEAF_LOG_RECORD_VERSION as i64),
    ("SHEAF_EVENT_VERSION", SHEAF_EVENT_VERSION as i64),
    ("SHEAF_SNAPSHOT_VERSION", SHEAF_SNAPSHOT_VERSION as i64),
    ("SHEAF_LIST_STATUS_VERSION", SHEAF_LIST_STATUS_VERSION as i64),
    ("SHEAF_GROUP_DELTA_VERSION", SHEAF_GROUP_DELTA_VERSION as i64),
    ("ARROW_FLAG_DICTIONARY_ORDERED", ARROW_FLAG_DICTIONARY_ORDERED),
    ("ARROW_FLAG_NULLABLE", ARROW_FLAG_NULLABLE),
    ("ARROW_FLAG_MAP_KEYS_SORTED", ARROW_FLAG_MAP_KEYS_SORTED),
];

/* ---- handles ---------------------------------------------------------------------------- */

opaque!(sheaf_client, sheaf_list, sheaf_group, sheaf_request, sheaf_credential_reply, sheaf_exchange);

/* ---- callbacks, enums, structs, functions (in the header's order) ------------------------- */

callbacks! {
    sheaf_destroy_fn(user_data: *mut c_void);
    sheaf_credential_fn(reply: *mut sheaf_credential_reply, user_data: *mut c_void);
    sheaf_log_fn(record: *const sheaf_log_record, user_data: *mut c_void);
    sheaf_event_fn(event: *const sheaf_event, user_data: *mut c_void);
    sheaf_snapshot_fn(list: *mut sheaf_list, snapshot: *const sheaf_snapshot, user_data: *mut c_void) -> c_int;
    sheaf_write_fn(bytes: *const c_char, length: usize, user_data: *mut c_void) -> c_int;
    sheaf_group_fn(group: *mut sheaf_group, delta: *const sheaf_group_delta, user_data: *mut c_void) -> c_int;
    sheaf_request_done_fn(request: *mut sheaf_request, result: sheaf_result, user_data: *mut c_void);
    sheaf_transport_fn(exchange: *mut sheaf_exchange, user_data: *mut c_void);
}

enums! {
    sheaf_result {
        SHEAF_OK = 0,
        SHEAF_LIMIT_REACHED = 1,
        SHEAF_E_INVALID_ARGUMENT = 2,
        SHEAF_E_UNSUPPORTED = 3,
        SHEAF_E_STATE = 4,
        SHEAF_E_REENTRANT = 5,
        SHEAF_E_HTTP = 6,
        SHEAF_E_TRANSPORT = 7,
        SHEAF_E_BAD_PAGE = 8,
        SHEAF_E_INCOMPLETE = 9,
        SHEAF_E_LOOP = 10,
        SHEAF_E_PAGE_LIMIT = 11,
        SHEAF_E_BODY_TOO_LARGE = 12,
        SHEAF_E_CROSS_ORIGIN = 13,
        SHEAF_E_STOPPED = 14,
        SHEAF_E_CANCELLED = 15,
        SHEAF_E_INTERNAL = 16,
        SHEAF_PENDING = 17,
        SHEAF_E_NOT_FOLLOWED = 18,
        SHEAF_E_UNDETECTED = 19,
        SHEAF_E_REPEATED_PAGE = 20,
        SHEAF_E_IO = 21,
        SHEAF_PAGE_BUDGET_REACHED = 22,
        SHEAF_REQUEST_BUDGET_REACHED = 23,
        SHEAF_E_DEADLINE = 24,
        SHEAF_E_CREDENTIAL = 25,
        SHEAF_E_PARTIAL = 26,
        SHEAF_E_RATE_LIMITED = 27,
        SHEAF_E_API = 28,
    }
    sheaf_auth {
        SHEAF_AUTH_NONE = 0,
        SHEAF_AUTH_BEARER = 1,
        SHEAF_AUTH_BASIC = 2,
        SHEAF_AUTH_API_KEY_HEADER = 3,
        SHEAF_AUTH_API_KEY_QUERY = 4,
    }
    sheaf_tls_file {
        SHEAF_TLS_CA_FILE = 1,
        SHEAF_TLS_CA_DIRECTORY = 2,
        SHEAF_TLS_CERT = 3,
        SHEAF_TLS_KEY = 4,
    }
    sheaf_option {
        SHEAF_OPT_WINDOW = 1,
        SHEAF_OPT_MAX_PAGES = 2,
        SHEAF_OPT_MAX_BODY_BYTES = 3,
        SHEAF_OPT_MAX_ATTEMPTS = 4,
        SHEAF_OPT_RETRY_BASE_MS = 5,
        SHEAF_OPT_RETRY_MAX_MS = 6,
        SHEAF_OPT_TIMEOUT_MS = 7,
        SHEAF_OPT_CONNECT_TIMEOUT_MS = 8,
        SHEAF_OPT_MAX_REDIRECTS = 9,
        SHEAF_OPT_CROSS_ORIGIN = 10,
        SHEAF_OPT_TLS_INSECURE = 11,
        SHEAF_OPT_ADAPTIVE_WINDOW = 12,
        SHEAF_OPT_MAX_WINDOW = 13,
        SHEAF_OPT_HTTP_VERSION = 14,
        SHEAF_OPT_MAX_WAIT_MS = 15,
    }
    sheaf_http_version {
        SHEAF_HTTP_AUTO = 0,
        SHEAF_HTTP_1_1 = 1,
        SHEAF_HTTP_2_PRIOR_KNOWLEDGE = 2,
    }
    sheaf_log_level {
        SHEAF_LOG_ERROR = 1,
        SHEAF_LOG_WARNING = 2,
        SHEAF_LOG_INFO = 3,
        SHEAF_LOG_DEBUG = 4,
    }
    sheaf_log_kind {
        SHEAF_LOG_REQUEST = 1,
        SHEAF_LOG_RETRY = 2,
        SHEAF_LOG_REDIRECT = 3,
        SHEAF_LOG_PLAN = 4,
        SHEAF_LOG_WINDOW = 5,
    }
    sheaf_event_kind {
        SHEAF_EVENT_AUTH_REFUSED = 1,
        SHEAF_EVENT_OFFLINE = 2,
        SHEAF_EVENT_SERVER_UNAVAILABLE = 3,
        SHEAF_EVENT_RATE_LIMITED = 4,
        SHEAF_EVENT_RETRYING = 5,
    }
    sheaf_paging {
        SHEAF_PAGING_DETECT = 0,
        SHEAF_PAGING_SINGLE = 1,
        SHEAF_PAGING_NEXT = 2,
        SHEAF_PAGING_PAGE_NUMBER = 3,
        SHEAF_PAGING_OFFSET = 4,
        SHEAF_PAGING_CURSOR = 5,
    }
    sheaf_signal {
        SHEAF_SIGNAL_ITEMS = 1,
        SHEAF_SIGNAL_NEXT = 2,
        SHEAF_SIGNAL_CURSOR = 3,
        SHEAF_SIGNAL_TOTAL = 4,
        SHEAF_SIGNAL_PAGE_COUNT = 5,
        SHEAF_SIGNAL_HAS_MORE = 6,
        SHEAF_SIGNAL_IS_LAST = 7,
        SHEAF_SIGNAL_IDENTITY = 8,
    }
    sheaf_source {
        SHEAF_SOURCE_NONE = 0,
        SHEAF_SOURCE_DETECT = 1,
        SHEAF_SOURCE_BODY = 2,
        SHEAF_SOURCE_HEADER = 3,
        SHEAF_SOURCE_LINK = 4,
        SHEAF_SOURCE_ITEM = 5,
        SHEAF_SOURCE_LAST_ITEM = 6,
    }
    sheaf_budget {
        SHEAF_BUDGET_ITEMS = 1,
        SHEAF_BUDGET_PAGES = 2,
        SHEAF_BUDGET_REQUESTS = 3,
        SHEAF_BUDGET_DEADLINE_MS = 4,
    }
    sheaf_format {
        SHEAF_FORMAT_JSON = 0,
        SHEAF_FORMAT_JSON_LINES = 1,
    }
    sheaf_list_state {
        SHEAF_LIST_NEW = 0,
        SHEAF_LIST_LOADING = 1,
        SHEAF_LIST_IDLE = 2,
        SHEAF_LIST_ENDED = 3,
    }
    sheaf_stop_reason {
        SHEAF_STOP_NONE = 0,
        SHEAF_STOP_COMPLETE = 1,
        SHEAF_STOP_ITEM_LIMIT = 2,
        SHEAF_STOP_PAGE_BUDGET = 3,
        SHEAF_STOP_REQUEST_BUDGET = 4,
        SHEAF_STOP_FAILED = 5,
        SHEAF_STOP_BOUND = 6,
        SHEAF_STOP_UNCONFIRMED = 7,
    }
    sheaf_group_option {
        SHEAF_GROUP_ORDERED = 1,
        SHEAF_GROUP_FAIL_FAST = 2,
        SHEAF_GROUP_MISSING_FAILS = 3,
    }
    sheaf_transport_error {
        SHEAF_TRANSPORT_OTHER = 0,
        SHEAF_TRANSPORT_TIMEOUT = 1,
        SHEAF_TRANSPORT_CONNECT = 2,
        SHEAF_TRANSPORT_DNS = 3,
        SHEAF_TRANSPORT_TLS = 4,
        SHEAF_TRANSPORT_TOO_LARGE = 5,
    }
}

structs! {
    sheaf_error {
        version: c_uint,
        code: sheaf_result,
        message: *const c_char,
        url: *const c_char,
        http_status: c_int,
        body: *const c_char,
        server_message: *const c_char,
        json_pointer: *const c_char,
        json_offset: i64,
        signal: *const c_char,
        hint: *const c_char,
    }
    sheaf_log_record {
        version: c_uint,
        level: sheaf_log_level,
        kind: sheaf_log_kind,
        message: *const c_char,
        method: *const c_char,
        url: *const c_char,
        http_status: c_int,
        attempt: c_int,
        duration_ms: i64,
        bytes: i64,
        delay_ms: i64,
    }
    sheaf_event {
        version: c_uint,
        kind: sheaf_event_kind,
        message: *const c_char,
        method: *const c_char,
        url: *const c_char,
        http_status: c_int,
        transport_error: c_int,
        attempt: c_int,
        wait_ms: i64,
    }
    sheaf_snapshot {
        version: c_uint,
        delta_json: *const c_char,
        delta_length: usize,
        delta_items: usize,
        items: usize,
        pages: usize,
        expected_items: i64,
        expected_pages: i64,
    }
    sheaf_list_status {
        version: c_uint,
        state: sheaf_list_state,
        items: i64,
        pages: i64,
        expected_items: i64,
        expected_pages: i64,
        pages_ready: i64,
        requests_made: i64,
        requests_in_flight: i64,
        window: i64,
        stop_reason: sheaf_stop_reason,
        requests_revalidated: i64,
        quota_remaining: i64,
        quota_reset_ms: i64,
    }
    sheaf_group_delta {
        version: c_uint,
        list: usize,
        tag: *const c_char,
        delta_json: *const c_char,
        delta_length: usize,
        delta_items: usize,
        items: usize,
        finished: c_int,
        result: sheaf_result,
        parent: c_int,
        templates_json: *const c_char,
    }
    // The Arrow C data interface's two structs (plain `struct ArrowSchema`/`struct ArrowArray` in
    // C, laid out as Arrow fixes them). Being Copy, a copy is a move in Arrow's sense: release
    // once, through the copy that owns it. A zeroed one (`std::mem::zeroed()`) is released.
    ArrowSchema {
        format: *const c_char,
        name: *const c_char,
        metadata: *const c_char,
        flags: i64,
        n_children: i64,
        children: *mut *mut ArrowSchema,
        dictionary: *mut ArrowSchema,
        release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
        private_data: *mut c_void,
    }
    ArrowArray {
        length: i64,
        null_count: i64,
        offset: i64,
        n_buffers: i64,
        n_children: i64,
        buffers: *mut *const c_void,
        children: *mut *mut ArrowArray,
        dictionary: *mut ArrowArray,
        release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
        private_data: *mut c_void,
    }
}

functions! {
    fn sheaf_version_number() -> c_int;
    fn sheaf_version_string() -> *const c_char;
    fn sheaf_result_str(result: c_int) -> *const c_char;
    fn sheaf_free(pointer: *mut c_void);
    fn sheaf_last_error() -> *mut sheaf_error;
    fn sheaf_error_free(error: *mut sheaf_error);
    fn sheaf_client_new(out_client: *mut *mut sheaf_client, base_url: *const c_char) -> sheaf_result;
    fn sheaf_client_free(client: *mut sheaf_client);
    fn sheaf_client_flush_hooks(client: *mut sheaf_client) -> sheaf_result;
    fn sheaf_client_set_auth(client: *mut sheaf_client, kind: sheaf_auth, value: *const c_char) -> sheaf_result;
    fn sheaf_client_set_credential(client: *mut sheaf_client, kind: sheaf_auth, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_credential_reply_is_refresh(reply: *const sheaf_credential_reply) -> c_int;
    fn sheaf_credential_reply_set(reply: *mut sheaf_credential_reply, value: *const c_char) -> sheaf_result;
    fn sheaf_credential_reply_fail(reply: *mut sheaf_credential_reply, message: *const c_char) -> sheaf_result;
    fn sheaf_client_set_credential_provider(client: *mut sheaf_client, kind: sheaf_auth, name: *const c_char, provider: sheaf_credential_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_client_add_header(client: *mut sheaf_client, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_client_add_secret_param(client: *mut sheaf_client, name: *const c_char) -> sheaf_result;
    fn sheaf_client_set_tls_file(client: *mut sheaf_client, which: sheaf_tls_file, path: *const c_char) -> sheaf_result;
    fn sheaf_client_set_cache(client: *mut sheaf_client, folder: *const c_char, max_bytes: i64) -> sheaf_result;
    fn sheaf_client_set_option(client: *mut sheaf_client, option: sheaf_option, value: i64) -> sheaf_result;
    fn sheaf_client_set_log(client: *mut sheaf_client, level: sheaf_log_level, on_log: sheaf_log_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_client_set_event_handler(client: *mut sheaf_client, on_event: sheaf_event_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_list_new(out_list: *mut *mut sheaf_list, client: *mut sheaf_client, path: *const c_char) -> sheaf_result;
    fn sheaf_list_free(list: *mut sheaf_list);
    fn sheaf_list_error(list: *const sheaf_list) -> *mut sheaf_error;
    fn sheaf_list_add_query(list: *mut sheaf_list, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_list_add_header(list: *mut sheaf_list, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_list_set_body(list: *mut sheaf_list, method: *const c_char, content_type: *const c_char, body: *const c_void, length: usize) -> sheaf_result;
    fn sheaf_list_set_paging(list: *mut sheaf_list, paging: sheaf_paging, param: *const c_char, first: i64, size_param: *const c_char, size: i64) -> sheaf_result;
    fn sheaf_list_set_signal(list: *mut sheaf_list, signal: sheaf_signal, source: sheaf_source, r#where: *const c_char) -> sheaf_result;
    fn sheaf_preset_count() -> usize;
    fn sheaf_preset_name(index: usize) -> *const c_char;
    fn sheaf_preset_description(name: *const c_char, out_json: *mut *mut c_char, out_length: *mut usize) -> sheaf_result;
    fn sheaf_list_use_preset(list: *mut sheaf_list, name: *const c_char) -> sheaf_result;
    fn sheaf_list_description(list: *mut sheaf_list, out_json: *mut *mut c_char, out_length: *mut usize) -> sheaf_result;
    fn sheaf_list_url(list: *mut sheaf_list, out_url: *mut *mut c_char) -> sheaf_result;
    fn sheaf_list_set_description(list: *mut sheaf_list, json: *const c_char) -> sheaf_result;
    fn sheaf_list_set_max_items(list: *mut sheaf_list, max_items: i64) -> sheaf_result;
    fn sheaf_list_set_budget(list: *mut sheaf_list, budget: sheaf_budget, value: i64) -> sheaf_result;
    fn sheaf_list_set_resume(list: *mut sheaf_list, token: *const c_char) -> sheaf_result;
    fn sheaf_list_resume_token(list: *mut sheaf_list, out_token: *mut *mut c_char) -> sheaf_result;
    fn sheaf_list_poll(list: *mut sheaf_list, offset: *const c_char, through: *const c_char, format: sheaf_format, out_items: *mut *mut c_char, out_length: *mut usize, out_offset: *mut *mut c_char) -> sheaf_result;
    fn sheaf_list_partitions(list: *mut sheaf_list, n: i64, out_json: *mut *mut c_char, out_length: *mut usize) -> sheaf_result;
    fn sheaf_list_partitions_at_once(list: *mut sheaf_list, n: i64, at_once: i64, out_json: *mut *mut c_char, out_length: *mut usize) -> sheaf_result;
    fn sheaf_list_set_partition(list: *mut sheaf_list, json: *const c_char) -> sheaf_result;
    fn sheaf_list_set_keep_items(list: *mut sheaf_list, keep: c_int) -> sheaf_result;
    fn sheaf_list_start(list: *mut sheaf_list, on_snapshot: sheaf_snapshot_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_list_start_pull(list: *mut sheaf_list) -> sheaf_result;
    fn sheaf_list_set_notify_fd(list: *mut sheaf_list, fd: c_int) -> sheaf_result;
    fn sheaf_list_next(list: *mut sheaf_list, timeout_ms: i64, out_snapshot: *mut *const sheaf_snapshot) -> sheaf_result;
    fn sheaf_list_delta_has_long_digits(list: *mut sheaf_list, out_long: *mut c_int) -> sheaf_result;
    fn sheaf_list_wait(list: *mut sheaf_list) -> sheaf_result;
    fn sheaf_list_cancel(list: *mut sheaf_list) -> sheaf_result;
    fn sheaf_list_requests_made(list: *const sheaf_list) -> i64;
    fn sheaf_list_requests_in_flight(list: *const sheaf_list) -> i64;
    fn sheaf_list_prefix(list: *mut sheaf_list, out_json: *mut *mut c_char, out_length: *mut usize) -> sheaf_result;
    fn sheaf_list_fetch_all(list: *mut sheaf_list, out_json: *mut *mut c_char, out_length: *mut usize) -> sheaf_result;
    fn sheaf_list_start_write(list: *mut sheaf_list, format: sheaf_format, write: sheaf_write_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_list_start_write_fd(list: *mut sheaf_list, fd: c_int, format: sheaf_format) -> sheaf_result;
    fn sheaf_list_get_status(list: *mut sheaf_list, out_status: *mut sheaf_list_status) -> sheaf_result;
    fn sheaf_list_start_load_more(list: *mut sheaf_list, look_ahead: i64) -> sheaf_result;
    fn sheaf_list_more(list: *mut sheaf_list, timeout_ms: i64, out_json: *mut *mut c_char, out_length: *mut usize) -> sheaf_result;
    fn sheaf_list_reset(list: *mut sheaf_list) -> sheaf_result;
    fn sheaf_group_new(out_group: *mut *mut sheaf_group, client: *mut sheaf_client) -> sheaf_result;
    fn sheaf_group_free(group: *mut sheaf_group);
    fn sheaf_group_error(group: *const sheaf_group) -> *mut sheaf_error;
    fn sheaf_group_set_option(group: *mut sheaf_group, option: sheaf_group_option, value: i64) -> sheaf_result;
    fn sheaf_group_add(group: *mut sheaf_group, list: *mut sheaf_list, tag: *const c_char, out_index: *mut usize) -> sheaf_result;
    fn sheaf_group_add_each(group: *mut sheaf_group, parent: *mut sheaf_list, templates: *mut *const c_char, levels: usize, child: *mut sheaf_list, out_index: *mut usize) -> sheaf_result;
    fn sheaf_group_start(group: *mut sheaf_group, on_delta: sheaf_group_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_group_start_pull(group: *mut sheaf_group) -> sheaf_result;
    fn sheaf_group_set_notify_fd(group: *mut sheaf_group, fd: c_int) -> sheaf_result;
    fn sheaf_group_next(group: *mut sheaf_group, timeout_ms: i64, out_delta: *mut *const sheaf_group_delta) -> sheaf_result;
    fn sheaf_group_delta_has_long_digits(group: *mut sheaf_group, out_long: *mut c_int) -> sheaf_result;
    fn sheaf_group_wait(group: *mut sheaf_group) -> sheaf_result;
    fn sheaf_group_cancel(group: *mut sheaf_group) -> sheaf_result;
    fn sheaf_group_count(group: *const sheaf_group) -> usize;
    fn sheaf_group_list(group: *mut sheaf_group, index: usize) -> *mut sheaf_list;
    fn sheaf_arrow_from_json(json: *const c_char, length: usize, known: *const ArrowSchema, out_schema: *mut ArrowSchema, out_array: *mut ArrowArray) -> sheaf_result;
    fn sheaf_request_new(out_request: *mut *mut sheaf_request, client: *mut sheaf_client, method: *const c_char, path: *const c_char) -> sheaf_result;
    fn sheaf_request_free(request: *mut sheaf_request);
    fn sheaf_request_add_segment(request: *mut sheaf_request, segment: *const c_char) -> sheaf_result;
    fn sheaf_request_add_query(request: *mut sheaf_request, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_request_add_header(request: *mut sheaf_request, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_request_set_body(request: *mut sheaf_request, content_type: *const c_char, data: *const c_void, length: usize) -> sheaf_result;
    fn sheaf_request_add_form(request: *mut sheaf_request, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_request_set_output_file(request: *mut sheaf_request, path: *const c_char) -> sheaf_result;
    fn sheaf_request_progress(request: *const sheaf_request, out_done: *mut i64, out_expected: *mut i64) -> sheaf_result;
    fn sheaf_request_set_retry(request: *mut sheaf_request, retry: c_int) -> sheaf_result;
    fn sheaf_request_start(request: *mut sheaf_request, on_done: sheaf_request_done_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_request_wait(request: *mut sheaf_request) -> sheaf_result;
    fn sheaf_request_send(request: *mut sheaf_request) -> sheaf_result;
    fn sheaf_request_cancel(request: *mut sheaf_request) -> sheaf_result;
    fn sheaf_request_status(request: *const sheaf_request) -> c_int;
    fn sheaf_request_url(request: *const sheaf_request) -> *const c_char;
    fn sheaf_request_header_count(request: *const sheaf_request) -> usize;
    fn sheaf_request_header(request: *const sheaf_request, index: usize, out_name: *mut *const c_char, out_value: *mut *const c_char) -> sheaf_result;
    fn sheaf_request_header_value(request: *const sheaf_request, name: *const c_char) -> *const c_char;
    fn sheaf_request_body(request: *const sheaf_request, out_length: *mut usize) -> *const c_char;
    fn sheaf_request_error(request: *const sheaf_request) -> *mut sheaf_error;
    fn sheaf_exchange_method(exchange: *const sheaf_exchange) -> *const c_char;
    fn sheaf_exchange_url(exchange: *const sheaf_exchange) -> *const c_char;
    fn sheaf_exchange_header_count(exchange: *const sheaf_exchange) -> usize;
    fn sheaf_exchange_header(exchange: *const sheaf_exchange, index: usize, out_name: *mut *const c_char, out_value: *mut *const c_char) -> sheaf_result;
    fn sheaf_exchange_body(exchange: *const sheaf_exchange, out_length: *mut usize) -> *const c_char;
    fn sheaf_exchange_timeout_ms(exchange: *const sheaf_exchange) -> i64;
    fn sheaf_exchange_max_body_bytes(exchange: *const sheaf_exchange) -> i64;
    fn sheaf_exchange_is_cancelled(exchange: *const sheaf_exchange) -> c_int;
    fn sheaf_exchange_add_response_header(exchange: *mut sheaf_exchange, name: *const c_char, value: *const c_char) -> sheaf_result;
    fn sheaf_exchange_respond(exchange: *mut sheaf_exchange, status: c_int, body: *const c_char, body_length: usize) -> sheaf_result;
    fn sheaf_exchange_fail(exchange: *mut sheaf_exchange, kind: sheaf_transport_error, message: *const c_char) -> sheaf_result;
    fn sheaf_client_set_transport(client: *mut sheaf_client, transport: sheaf_transport_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
    fn sheaf_list_set_transport(list: *mut sheaf_list, transport: sheaf_transport_fn, user_data: *mut c_void, destroy: sheaf_destroy_fn) -> sheaf_result;
}
