"""The ctypes mirror of include/sheaf.h: finding and loading libsheaf.so, and every declaration.

Nothing here is public API. Each function is declared under its C prototype, copied from the
header, so the two can be compared line by line. Opaque handles are distinct ``c_void_p``
subclasses, so passing a list where a client is expected fails in ctypes, not in the library.
Strings the library hands over for the caller to free come back as ``c_void_p`` (a ``c_char_p``
result would be copied by ctypes and the original leaked); ``take_string`` copies and frees them.

This module is the bottom of the package and imports none of it: ``errors``, above it, turns
failing results into exceptions (the ``errcheck`` of the functions in ``CHECKED``) and refuses
text a C string cannot carry (``encode``).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_int,
    c_int64,
    c_size_t,
    c_uint,
    c_void_p,
)
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

#: The version of the C ABI this package was written for (SHEAF_VERSION_MAJOR, _MINOR). From 1.0
#: the ABI only grows within a major version: a library of the same major version and at least
#: this minor version has every call the package makes.
ABI_MAJOR = 1
ABI_MINOR = 0
#: SHEAF_GROUP_DELTA_VERSION of the header this package mirrors.
GROUP_DELTA_VERSION = 2
#: SHEAF_ERROR_VERSION of the header this package mirrors.
ERROR_VERSION = 1
#: SHEAF_SNAPSHOT_VERSION of the header this package mirrors.
SNAPSHOT_VERSION = 1
#: SHEAF_LIST_STATUS_VERSION: the sheaf_list_status declared here; set before each call.
LIST_STATUS_VERSION = 2

LIBRARY_PATH_VARIABLE = "SHEAF_LIBRARY_PATH"

_PACKAGE_DIR = Path(__file__).resolve().parent
#: <repo>/bindings/python/sheaf/_ffi.py -> <repo>/build/lib/libsheaf.so.1
_BUILD_TREE_LIBRARY = _PACKAGE_DIR.parent.parent.parent / "build" / "lib" / "libsheaf.so.1"


# ---- result codes and enums (mirrors of the header's enums) ---------------------------------------

SHEAF_OK = 0
SHEAF_LIMIT_REACHED = 1
SHEAF_E_INVALID_ARGUMENT = 2
SHEAF_E_UNSUPPORTED = 3
SHEAF_E_STATE = 4
SHEAF_E_REENTRANT = 5
SHEAF_E_HTTP = 6
SHEAF_E_TRANSPORT = 7
SHEAF_E_BAD_PAGE = 8
SHEAF_E_INCOMPLETE = 9
SHEAF_E_LOOP = 10
SHEAF_E_PAGE_LIMIT = 11
SHEAF_E_BODY_TOO_LARGE = 12
SHEAF_E_CROSS_ORIGIN = 13
SHEAF_E_STOPPED = 14
SHEAF_E_CANCELLED = 15
SHEAF_E_INTERNAL = 16
SHEAF_PENDING = 17
SHEAF_E_NOT_FOLLOWED = 18
SHEAF_E_UNDETECTED = 19
SHEAF_E_REPEATED_PAGE = 20
SHEAF_E_IO = 21
SHEAF_PAGE_BUDGET_REACHED = 22
SHEAF_REQUEST_BUDGET_REACHED = 23
SHEAF_E_DEADLINE = 24
SHEAF_E_CREDENTIAL = 25
SHEAF_E_PARTIAL = 26
SHEAF_E_RATE_LIMITED = 27
SHEAF_E_API = 28

#: The codes that are successes: OK alone (a list that stopped where its caller asked ends OK,
#: and says why in its status's stop_reason; LIMIT_REACHED and the two BUDGET_REACHED are retired).
SUCCESSES = frozenset((SHEAF_OK,))

SHEAF_STOP_NONE = 0
SHEAF_STOP_COMPLETE = 1
SHEAF_STOP_ITEM_LIMIT = 2
SHEAF_STOP_PAGE_BUDGET = 3
SHEAF_STOP_REQUEST_BUDGET = 4
SHEAF_STOP_FAILED = 5
SHEAF_STOP_BOUND = 6
SHEAF_STOP_UNCONFIRMED = 7

SHEAF_BUDGET_ITEMS = 1
SHEAF_BUDGET_PAGES = 2
SHEAF_BUDGET_REQUESTS = 3
SHEAF_BUDGET_DEADLINE_MS = 4

SHEAF_LIST_NEW = 0
SHEAF_LIST_LOADING = 1
SHEAF_LIST_IDLE = 2
SHEAF_LIST_ENDED = 3

# enum sheaf_group_option
SHEAF_GROUP_ORDERED = 1
SHEAF_GROUP_FAIL_FAST = 2
SHEAF_GROUP_MISSING_FAILS = 3

# enum sheaf_format
SHEAF_FORMAT_JSON = 0
SHEAF_FORMAT_JSON_LINES = 1

SHEAF_TRANSPORT_OTHER = 0
SHEAF_TRANSPORT_TIMEOUT = 1
SHEAF_TRANSPORT_CONNECT = 2
SHEAF_TRANSPORT_DNS = 3
SHEAF_TRANSPORT_TLS = 4
SHEAF_TRANSPORT_TOO_LARGE = 5

SHEAF_LOG_ERROR = 1
SHEAF_LOG_WARNING = 2
SHEAF_LOG_INFO = 3
SHEAF_LOG_DEBUG = 4

SHEAF_LOG_REQUEST = 1
SHEAF_LOG_RETRY = 2
SHEAF_LOG_REDIRECT = 3
SHEAF_LOG_PLAN = 4
SHEAF_LOG_WINDOW = 5

SHEAF_EVENT_AUTH_REFUSED = 1
SHEAF_EVENT_OFFLINE = 2
SHEAF_EVENT_SERVER_UNAVAILABLE = 3
SHEAF_EVENT_RATE_LIMITED = 4
SHEAF_EVENT_RETRYING = 5

SHEAF_OPT_WINDOW = 1
SHEAF_OPT_MAX_PAGES = 2
SHEAF_OPT_MAX_BODY_BYTES = 3
SHEAF_OPT_MAX_ATTEMPTS = 4
SHEAF_OPT_RETRY_BASE_MS = 5
SHEAF_OPT_RETRY_MAX_MS = 6
SHEAF_OPT_TIMEOUT_MS = 7
SHEAF_OPT_CONNECT_TIMEOUT_MS = 8
SHEAF_OPT_MAX_REDIRECTS = 9
SHEAF_OPT_CROSS_ORIGIN = 10
SHEAF_OPT_TLS_INSECURE = 11
SHEAF_OPT_ADAPTIVE_WINDOW = 12
SHEAF_OPT_MAX_WINDOW = 13
SHEAF_OPT_HTTP_VERSION = 14
SHEAF_OPT_MAX_WAIT_MS = 15

# enum sheaf_http_version
SHEAF_HTTP_AUTO = 0
SHEAF_HTTP_1_1 = 1
SHEAF_HTTP_2_PRIOR_KNOWLEDGE = 2

SHEAF_AUTH_NONE = 0
SHEAF_AUTH_BEARER = 1
SHEAF_AUTH_BASIC = 2
SHEAF_AUTH_API_KEY_HEADER = 3
SHEAF_AUTH_API_KEY_QUERY = 4

SHEAF_TLS_CA_FILE = 1
SHEAF_TLS_CA_DIRECTORY = 2
SHEAF_TLS_CERT = 3
SHEAF_TLS_KEY = 4

SHEAF_PAGING_DETECT = 0
SHEAF_PAGING_SINGLE = 1
SHEAF_PAGING_NEXT = 2
SHEAF_PAGING_PAGE_NUMBER = 3
SHEAF_PAGING_OFFSET = 4
SHEAF_PAGING_CURSOR = 5

SHEAF_SIGNAL_ITEMS = 1
SHEAF_SIGNAL_NEXT = 2
SHEAF_SIGNAL_CURSOR = 3
SHEAF_SIGNAL_TOTAL = 4
SHEAF_SIGNAL_PAGE_COUNT = 5
SHEAF_SIGNAL_HAS_MORE = 6
SHEAF_SIGNAL_IS_LAST = 7
SHEAF_SIGNAL_IDENTITY = 8

SHEAF_SOURCE_NONE = 0
SHEAF_SOURCE_DETECT = 1
SHEAF_SOURCE_BODY = 2
SHEAF_SOURCE_HEADER = 3
SHEAF_SOURCE_LINK = 4
SHEAF_SOURCE_ITEM = 5
SHEAF_SOURCE_LAST_ITEM = 6


# ---- handles and structures -------------------------------------------------------------------

class ClientHandle(c_void_p):
    """``sheaf_client *``"""


class ListHandle(c_void_p):
    """``sheaf_list *``"""


class ExchangeHandle(c_void_p):
    """``sheaf_exchange *``"""


class RequestHandle(c_void_p):
    """``sheaf_request *``"""


class GroupHandle(c_void_p):
    """``sheaf_group *``"""


class SnapshotStruct(Structure):
    """``struct sheaf_snapshot`` (SHEAF_SNAPSHOT_VERSION 1)."""

    _fields_ = [
        ("version", c_uint),            # unsigned int version;
        ("delta_json", c_void_p),       # const char *delta_json;  (borrowed; read with string_at)
        ("delta_length", c_size_t),     # size_t delta_length;
        ("delta_items", c_size_t),      # size_t delta_items;
        ("items", c_size_t),            # size_t items;
        ("pages", c_size_t),            # size_t pages;
        ("expected_items", c_int64),    # int64_t expected_items;
        ("expected_pages", c_int64),    # int64_t expected_pages;
    ]


class GroupDeltaStruct(Structure):
    """``struct sheaf_group_delta`` (SHEAF_GROUP_DELTA_VERSION 2; the version 2 fields are read
    only when ``version`` says the library filled them)."""

    _fields_ = [
        ("version", c_uint),            # unsigned int version;
        ("list", c_size_t),             # size_t list;
        ("tag", c_char_p),              # const char *tag;  (borrowed)
        ("delta_json", c_void_p),       # const char *delta_json;  (borrowed; read with string_at)
        ("delta_length", c_size_t),     # size_t delta_length;
        ("delta_items", c_size_t),      # size_t delta_items;
        ("items", c_size_t),            # size_t items;
        ("finished", c_int),            # int finished;
        ("result", c_int),              # sheaf_result result;
        # Version 2.
        ("parent", c_int),              # int parent;
        ("templates_json", c_char_p),   # const char *templates_json;  (borrowed; NULL for a list of items)
    ]


class ArrowSchemaStruct(Structure):
    """``struct ArrowSchema`` of the Arrow C data interface (its layout is Arrow's, for good).
    Filled by sheaf_arrow_from_json; pyarrow's ``_import_from_c`` takes it (and releases it)."""

    _fields_ = [
        ("format", c_void_p),           # const char *format;
        ("name", c_void_p),             # const char *name;
        ("metadata", c_void_p),         # const char *metadata;
        ("flags", c_int64),             # int64_t flags;
        ("n_children", c_int64),        # int64_t n_children;
        ("children", c_void_p),         # struct ArrowSchema **children;
        ("dictionary", c_void_p),       # struct ArrowSchema *dictionary;
        ("release", c_void_p),          # void (*release)(struct ArrowSchema *);
        ("private_data", c_void_p),     # void *private_data;
    ]


class ArrowArrayStruct(Structure):
    """``struct ArrowArray`` of the Arrow C data interface."""

    _fields_ = [
        ("length", c_int64),            # int64_t length;
        ("null_count", c_int64),        # int64_t null_count;
        ("offset", c_int64),            # int64_t offset;
        ("n_buffers", c_int64),         # int64_t n_buffers;
        ("n_children", c_int64),        # int64_t n_children;
        ("buffers", c_void_p),          # const void **buffers;
        ("children", c_void_p),         # struct ArrowArray **children;
        ("dictionary", c_void_p),       # struct ArrowArray *dictionary;
        ("release", c_void_p),          # void (*release)(struct ArrowArray *);
        ("private_data", c_void_p),     # void *private_data;
    ]


class ListStatusStruct(Structure):
    """``struct sheaf_list_status`` (``version`` is set to LIST_STATUS_VERSION before the call)."""

    _fields_ = [
        ("version", c_uint),                # unsigned int version;
        ("state", c_int),                   # sheaf_list_state state;
        ("items", c_int64),                 # int64_t items;
        ("pages", c_int64),                 # int64_t pages;
        ("expected_items", c_int64),        # int64_t expected_items;
        ("expected_pages", c_int64),        # int64_t expected_pages;
        ("pages_ready", c_int64),           # int64_t pages_ready;
        ("requests_made", c_int64),         # int64_t requests_made;
        ("requests_in_flight", c_int64),    # int64_t requests_in_flight;
        ("window", c_int64),                # int64_t window;
        ("stop_reason", c_int),             # sheaf_stop_reason stop_reason;
        # Version 2.
        ("requests_revalidated", c_int64),  # int64_t requests_revalidated;
        ("quota_remaining", c_int64),       # int64_t quota_remaining;
        ("quota_reset_ms", c_int64),        # int64_t quota_reset_ms;
    ]


class ErrorStruct(Structure):
    """``struct sheaf_error`` (SHEAF_ERROR_VERSION 1); read through a pointer, then freed."""

    _fields_ = [
        ("version", c_uint),            # unsigned int version;
        ("code", c_int),                # sheaf_result code;
        ("message", c_char_p),          # const char *message;
        ("url", c_char_p),              # const char *url;
        ("http_status", c_int),         # int http_status;
        ("body", c_char_p),             # const char *body;
        ("server_message", c_char_p),   # const char *server_message;
        ("json_pointer", c_char_p),     # const char *json_pointer;
        ("json_offset", c_int64),       # int64_t json_offset;
        ("signal", c_char_p),           # const char *signal;
        ("hint", c_char_p),             # const char *hint;
    ]


# typedef void (*sheaf_transport_fn)(sheaf_exchange *exchange, void *user_data);
class LogRecordStruct(Structure):
    """struct sheaf_log_record (version 1; later versions only append fields)."""
    _fields_ = [
        ("version", c_uint),
        ("level", c_int),
        ("kind", c_int),
        ("message", c_char_p),
        ("method", c_char_p),
        ("url", c_char_p),
        ("http_status", c_int),
        ("attempt", c_int),
        ("duration_ms", c_int64),
        ("bytes", c_int64),
        ("delay_ms", c_int64),
    ]


class EventStruct(Structure):
    """struct sheaf_event (version 1; later versions only append fields)."""
    _fields_ = [
        ("version", c_uint),
        ("kind", c_int),
        ("message", c_char_p),
        ("method", c_char_p),
        ("url", c_char_p),
        ("http_status", c_int),
        ("transport_error", c_int),
        ("attempt", c_int),
        ("wait_ms", c_int64),
    ]


# typedef void (*sheaf_log_fn)(const sheaf_log_record *record, void *user_data);
LOG_FN = CFUNCTYPE(None, POINTER(LogRecordStruct), c_void_p)
# typedef void (*sheaf_event_fn)(const sheaf_event *event, void *user_data);
EVENT_FN = CFUNCTYPE(None, POINTER(EventStruct), c_void_p)

TRANSPORT_FN = CFUNCTYPE(None, ExchangeHandle, c_void_p)
#: void (*sheaf_credential_fn)(sheaf_credential_reply *reply, void *user_data)
CREDENTIAL_FN = CFUNCTYPE(None, c_void_p, c_void_p)
#: void (*sheaf_destroy_fn)(void *user_data)
DESTROY_FN = CFUNCTYPE(None, c_void_p)

# typedef int (*sheaf_snapshot_fn)(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data);
SNAPSHOT_FN = CFUNCTYPE(c_int, ListHandle, POINTER(SnapshotStruct), c_void_p)

_sheaf_result = c_int  # enum sheaf_result

# typedef int (*sheaf_group_fn)(sheaf_group *group, const sheaf_group_delta *delta, void *user_data);
GROUP_FN = CFUNCTYPE(c_int, GroupHandle, POINTER(GroupDeltaStruct), c_void_p)

# typedef void (*sheaf_request_done_fn)(sheaf_request *request, sheaf_result result, void *user_data);
REQUEST_DONE_FN = CFUNCTYPE(None, RequestHandle, _sheaf_result, c_void_p)
# int (*sheaf_write_fn)(const char *bytes, size_t length, void *user_data);
WRITE_FN = CFUNCTYPE(c_int, c_void_p, c_size_t, c_void_p)


# ---- finding the library ----------------------------------------------------------------------

def candidate_paths(environ: Optional[Mapping[str, str]] = None) -> List[Tuple[str, Optional[Path]]]:
    """Where the library is looked for, in order: (description, path or None when not applicable).
    $SHEAF_LIBRARY_PATH, when set, is the only place: a wrong one is an error, never a silent
    fall back to another library."""
    configured = (os.environ if environ is None else environ).get(LIBRARY_PATH_VARIABLE)
    if configured:
        return [(f"${LIBRARY_PATH_VARIABLE}", Path(configured))]
    candidates: List[Tuple[str, Optional[Path]]] = [(f"${LIBRARY_PATH_VARIABLE}", None)]
    bundled_dir = _PACKAGE_DIR / "lib"
    bundled = sorted(bundled_dir.glob("libsheaf.so*"), key=lambda p: (p.name != "libsheaf.so.1", p.name))
    if bundled:
        candidates.extend(("the package's lib/", path) for path in bundled)
    else:
        candidates.append(("the package's lib/", bundled_dir / "libsheaf.so*"))
    candidates.append(("the build tree", _BUILD_TREE_LIBRARY))
    return candidates


def load_library(environ: Optional[Mapping[str, str]] = None,
                 loader: Callable[[str], Any] = ctypes.CDLL) -> Tuple[Any, str]:
    """Loads the first library that exists, loads and has the right major version.

    Returns (library, path). Raises ImportError listing every place tried and why it failed.
    """
    tried: List[str] = []
    for where, path in candidate_paths(environ):
        if path is None:
            tried.append(f"  {where}: not set")
            continue
        if "*" in path.name:
            tried.append(f"  {where}: no file matches {path}")
            continue
        if not path.exists():
            tried.append(f"  {where}: {path}: no such file")
            continue
        if path.is_dir():
            tried.append(f"  {where}: {path}: is a directory (name the library file itself)")
            continue
        try:
            library = loader(str(path))
        except OSError as error:
            tried.append(f"  {where}: {path}: cannot be loaded: {error}")
            continue
        problem = version_problem(library)
        if problem is not None:
            tried.append(f"  {where}: {path}: {problem}")
            continue
        return library, str(path)
    raise ImportError("sheaf: cannot load libsheaf.so; tried, in order:\n" + "\n".join(tried)
                      + f"\nBuild it (cmake --build build) or set {LIBRARY_PATH_VARIABLE} to the library file.")


def version_problem(library: Any) -> Optional[str]:
    """Why `library` does not fit this package (None when it does): ABI_MAJOR, minor ABI_MINOR or later."""
    try:
        function = library.sheaf_version_number
    except AttributeError:
        return "not a Sheaf library (no sheaf_version_number)"
    function.argtypes = []
    function.restype = c_int
    number = function()
    if number < 0 or number // 10000 != ABI_MAJOR or number // 100 % 100 < ABI_MINOR:
        major, minor, patch = number // 10000, number // 100 % 100, number % 100
        return (f"version {major}.{minor}.{patch} (sheaf_version_number {number}), "
                f"but this package needs version {ABI_MAJOR}.x, {ABI_MAJOR}.{ABI_MINOR} or later")
    return None


# ---- declarations -----------------------------------------------------------------------------

def declare(library: Any) -> None:
    """Sets argtypes and restype for every function of sheaf.h on `library`."""

    def fn(name: str, restype: Any, argtypes: Sequence[Any]) -> None:
        function = getattr(library, name)
        function.restype = restype
        function.argtypes = list(argtypes)

    # ---- Versions
    # int sheaf_version_number(void);
    fn("sheaf_version_number", c_int, [])
    # const char *sheaf_version_string(void);   (static storage: c_char_p is right here)
    fn("sheaf_version_string", c_char_p, [])

    # ---- Results
    # const char *sheaf_result_str(int result);   (static)
    fn("sheaf_result_str", c_char_p, [c_int])
    # void sheaf_free(void *pointer);
    fn("sheaf_free", None, [c_void_p])

    # ---- Errors
    # sheaf_error *sheaf_last_error(void);   (owned: sheaf_error_free)
    fn("sheaf_last_error", c_void_p, [])
    # void sheaf_error_free(sheaf_error *error);
    fn("sheaf_error_free", None, [c_void_p])

    # ---- Transport (exchange accessors; strings borrowed until the exchange is answered)
    # const char *sheaf_exchange_method(const sheaf_exchange *exchange);
    fn("sheaf_exchange_method", c_char_p, [ExchangeHandle])
    # const char *sheaf_exchange_url(const sheaf_exchange *exchange);
    fn("sheaf_exchange_url", c_char_p, [ExchangeHandle])
    # size_t sheaf_exchange_header_count(const sheaf_exchange *exchange);
    fn("sheaf_exchange_header_count", c_size_t, [ExchangeHandle])
    # sheaf_result sheaf_exchange_header(const sheaf_exchange *exchange, size_t index,
    #                                    const char **out_name, const char **out_value);
    fn("sheaf_exchange_header", _sheaf_result, [ExchangeHandle, c_size_t, POINTER(c_char_p), POINTER(c_char_p)])
    # const char *sheaf_exchange_body(const sheaf_exchange *exchange, size_t *out_length);
    fn("sheaf_exchange_body", c_void_p, [ExchangeHandle, POINTER(c_size_t)])
    # int64_t sheaf_exchange_timeout_ms(const sheaf_exchange *exchange);
    fn("sheaf_exchange_timeout_ms", c_int64, [ExchangeHandle])
    # int64_t sheaf_exchange_max_body_bytes(const sheaf_exchange *exchange);
    fn("sheaf_exchange_max_body_bytes", c_int64, [ExchangeHandle])
    # int sheaf_exchange_is_cancelled(const sheaf_exchange *exchange);
    fn("sheaf_exchange_is_cancelled", c_int, [ExchangeHandle])
    # sheaf_result sheaf_exchange_add_response_header(sheaf_exchange *exchange,
    #                                                 const char *name, const char *value);
    fn("sheaf_exchange_add_response_header", _sheaf_result, [ExchangeHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_exchange_respond(sheaf_exchange *exchange, int status,
    #                                     const char *body, size_t body_length);
    fn("sheaf_exchange_respond", _sheaf_result, [ExchangeHandle, c_int, c_char_p, c_size_t])
    # sheaf_result sheaf_exchange_fail(sheaf_exchange *exchange, sheaf_transport_error kind,
    #                                  const char *message);
    fn("sheaf_exchange_fail", _sheaf_result, [ExchangeHandle, c_int, c_char_p])

    # ---- Client
    # sheaf_result sheaf_client_new(sheaf_client **out_client, const char *base_url);
    fn("sheaf_client_new", _sheaf_result, [POINTER(ClientHandle), c_char_p])
    # void sheaf_client_free(sheaf_client *client);
    fn("sheaf_client_free", None, [ClientHandle])
    # sheaf_result sheaf_client_flush_hooks(sheaf_client *client);
    fn("sheaf_client_flush_hooks", _sheaf_result, [ClientHandle])
    # sheaf_result sheaf_client_set_auth(sheaf_client *client, sheaf_auth kind, const char *value);
    fn("sheaf_client_set_auth", _sheaf_result, [ClientHandle, c_int, c_char_p])
    # sheaf_result sheaf_client_set_credential(sheaf_client *client, sheaf_auth kind,
    #                                          const char *name, const char *value);
    fn("sheaf_client_set_credential", _sheaf_result, [ClientHandle, c_int, c_char_p, c_char_p])
    # sheaf_result sheaf_client_add_header(sheaf_client *client, const char *name, const char *value);
    fn("sheaf_client_add_header", _sheaf_result, [ClientHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_client_add_secret_param(sheaf_client *client, const char *name);
    fn("sheaf_client_add_secret_param", _sheaf_result, [ClientHandle, c_char_p])
    # sheaf_result sheaf_client_set_tls_file(sheaf_client *client, sheaf_tls_file which, const char *path);
    fn("sheaf_client_set_tls_file", _sheaf_result, [ClientHandle, c_int, c_char_p])
    # sheaf_result sheaf_client_set_cache(sheaf_client *client, const char *folder, int64_t max_bytes);
    fn("sheaf_client_set_cache", _sheaf_result, [ClientHandle, c_char_p, c_int64])
    # sheaf_result sheaf_client_set_option(sheaf_client *client, sheaf_option option, int64_t value);
    fn("sheaf_client_set_option", _sheaf_result, [ClientHandle, c_int, c_int64])
    # sheaf_result sheaf_client_set_transport(sheaf_client *client, sheaf_transport_fn transport,
    #                                         void *user_data, sheaf_destroy_fn destroy);
    fn("sheaf_client_set_transport", _sheaf_result, [ClientHandle, TRANSPORT_FN, c_void_p, c_void_p])
    # sheaf_result sheaf_client_set_log(sheaf_client *client, sheaf_log_level level, sheaf_log_fn on_log,
    #                                   void *user_data, sheaf_destroy_fn destroy);
    fn("sheaf_client_set_log", _sheaf_result, [ClientHandle, c_int, LOG_FN, c_void_p, c_void_p])
    # sheaf_result sheaf_client_set_event_handler(sheaf_client *client, sheaf_event_fn on_event,
    #                                             void *user_data, sheaf_destroy_fn destroy);
    fn("sheaf_client_set_event_handler", _sheaf_result, [ClientHandle, EVENT_FN, c_void_p, DESTROY_FN])
    # sheaf_result sheaf_client_set_credential_provider(sheaf_client *client, sheaf_auth kind, const char *name,
    #     sheaf_credential_fn provider, void *user_data, sheaf_destroy_fn destroy);
    fn("sheaf_client_set_credential_provider", _sheaf_result,
       [ClientHandle, c_int, c_char_p, CREDENTIAL_FN, c_void_p, DESTROY_FN])
    # int sheaf_credential_reply_is_refresh(const sheaf_credential_reply *reply);
    fn("sheaf_credential_reply_is_refresh", c_int, [c_void_p])
    # sheaf_result sheaf_credential_reply_set(sheaf_credential_reply *reply, const char *value);
    fn("sheaf_credential_reply_set", _sheaf_result, [c_void_p, c_char_p])
    # sheaf_result sheaf_credential_reply_fail(sheaf_credential_reply *reply, const char *message);
    fn("sheaf_credential_reply_fail", _sheaf_result, [c_void_p, c_char_p])

    # ---- Describing a list
    # sheaf_result sheaf_list_new(sheaf_list **out_list, sheaf_client *client, const char *path);
    fn("sheaf_list_new", _sheaf_result, [POINTER(ListHandle), ClientHandle, c_char_p])
    # void sheaf_list_free(sheaf_list *list);
    fn("sheaf_list_free", None, [ListHandle])
    # sheaf_error *sheaf_list_error(const sheaf_list *list);   (owned: sheaf_error_free)
    fn("sheaf_list_error", c_void_p, [ListHandle])
    # sheaf_result sheaf_list_add_query(sheaf_list *list, const char *name, const char *value);
    fn("sheaf_list_add_query", _sheaf_result, [ListHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_list_add_header(sheaf_list *list, const char *name, const char *value);
    fn("sheaf_list_add_header", _sheaf_result, [ListHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_list_set_body(sheaf_list *list, const char *method, const char *content_type,
    #                                  const void *body, size_t length);
    fn("sheaf_list_set_body", _sheaf_result, [ListHandle, c_char_p, c_char_p, c_char_p, c_size_t])
    # sheaf_result sheaf_list_set_paging(sheaf_list *list, sheaf_paging paging, const char *param,
    #                                    int64_t first, const char *size_param, int64_t size);
    fn("sheaf_list_set_paging", _sheaf_result, [ListHandle, c_int, c_char_p, c_int64, c_char_p, c_int64])
    # sheaf_result sheaf_list_set_signal(sheaf_list *list, sheaf_signal signal, sheaf_source source,
    #                                    const char *where);
    fn("sheaf_list_set_signal", _sheaf_result, [ListHandle, c_int, c_int, c_char_p])
    # size_t sheaf_preset_count(void);
    fn("sheaf_preset_count", c_size_t, [])
    # const char *sheaf_preset_name(size_t index);   (static)
    fn("sheaf_preset_name", c_char_p, [c_size_t])
    # sheaf_result sheaf_preset_description(const char *name, char **out_json, size_t *out_length);
    fn("sheaf_preset_description", _sheaf_result, [c_char_p, POINTER(c_void_p), POINTER(c_size_t)])
    # sheaf_result sheaf_list_use_preset(sheaf_list *list, const char *name);
    fn("sheaf_list_use_preset", _sheaf_result, [ListHandle, c_char_p])
    # sheaf_result sheaf_list_description(sheaf_list *list, char **out_json, size_t *out_length);
    fn("sheaf_list_description", _sheaf_result, [ListHandle, POINTER(c_void_p), POINTER(c_size_t)])
    # sheaf_result sheaf_list_url(sheaf_list *list, char **out_url);
    fn("sheaf_list_url", _sheaf_result, [ListHandle, POINTER(c_void_p)])
    # sheaf_result sheaf_list_set_description(sheaf_list *list, const char *json);
    fn("sheaf_list_set_description", _sheaf_result, [ListHandle, c_char_p])
    # sheaf_result sheaf_list_set_transport(sheaf_list *list, sheaf_transport_fn transport,
    #                                       void *user_data, sheaf_destroy_fn destroy);
    fn("sheaf_list_set_transport", _sheaf_result, [ListHandle, TRANSPORT_FN, c_void_p, c_void_p])
    # sheaf_result sheaf_list_set_max_items(sheaf_list *list, int64_t max_items);
    fn("sheaf_list_set_max_items", _sheaf_result, [ListHandle, c_int64])
    # sheaf_result sheaf_list_set_keep_items(sheaf_list *list, int keep);
    fn("sheaf_list_set_keep_items", _sheaf_result, [ListHandle, c_int])
    # sheaf_result sheaf_list_set_budget(sheaf_list *list, sheaf_budget budget, int64_t value);
    fn("sheaf_list_set_budget", _sheaf_result, [ListHandle, c_int, c_int64])
    # sheaf_result sheaf_list_set_resume(sheaf_list *list, const char *token);
    fn("sheaf_list_set_resume", _sheaf_result, [ListHandle, c_char_p])
    # sheaf_result sheaf_list_resume_token(sheaf_list *list, char **out_token);
    fn("sheaf_list_resume_token", _sheaf_result, [ListHandle, POINTER(c_void_p)])
    # sheaf_result sheaf_list_partitions(sheaf_list *list, int64_t n, char **out_json, size_t *out_length);
    fn("sheaf_list_partitions", _sheaf_result, [ListHandle, c_int64, POINTER(c_void_p), POINTER(c_size_t)])
    # sheaf_result sheaf_list_poll(sheaf_list *list, const char *offset, const char *through, sheaf_format format,
    #                              char **out_items, size_t *out_length, char **out_offset);   (experimental)
    fn("sheaf_list_poll", _sheaf_result, [ListHandle, c_char_p, c_char_p, c_int, POINTER(c_void_p), POINTER(c_size_t),
                                          POINTER(c_void_p)])
    # sheaf_result sheaf_list_partitions_at_once(sheaf_list *list, int64_t n, int64_t at_once, char **out_json,
    #                                            size_t *out_length);
    fn("sheaf_list_partitions_at_once", _sheaf_result, [ListHandle, c_int64, c_int64, POINTER(c_void_p), POINTER(c_size_t)])
    # sheaf_result sheaf_list_set_partition(sheaf_list *list, const char *json);
    fn("sheaf_list_set_partition", _sheaf_result, [ListHandle, c_char_p])

    # ---- Running a list
    # sheaf_result sheaf_list_start(sheaf_list *list, sheaf_snapshot_fn on_snapshot, void *user_data,
    #                              sheaf_destroy_fn destroy);
    fn("sheaf_list_start", _sheaf_result, [ListHandle, SNAPSHOT_FN, c_void_p, c_void_p])
    # sheaf_result sheaf_list_start_pull(sheaf_list *list);
    fn("sheaf_list_start_pull", _sheaf_result, [ListHandle])
    # sheaf_result sheaf_list_set_notify_fd(sheaf_list *list, int fd);
    fn("sheaf_list_set_notify_fd", _sheaf_result, [ListHandle, c_int])
    # sheaf_result sheaf_list_next(sheaf_list *list, int64_t timeout_ms, const sheaf_snapshot **out_snapshot);
    fn("sheaf_list_next", _sheaf_result, [ListHandle, c_int64, POINTER(POINTER(SnapshotStruct))])
    # sheaf_result sheaf_list_delta_has_long_digits(sheaf_list *list, int *out_long);
    fn("sheaf_list_delta_has_long_digits", _sheaf_result, [ListHandle, POINTER(c_int)])
    # sheaf_result sheaf_list_wait(sheaf_list *list);
    fn("sheaf_list_wait", _sheaf_result, [ListHandle])
    # sheaf_result sheaf_list_cancel(sheaf_list *list);
    fn("sheaf_list_cancel", _sheaf_result, [ListHandle])
    # int64_t sheaf_list_requests_made(const sheaf_list *list);
    fn("sheaf_list_requests_made", c_int64, [ListHandle])
    # int64_t sheaf_list_requests_in_flight(const sheaf_list *list);
    fn("sheaf_list_requests_in_flight", c_int64, [ListHandle])
    # sheaf_result sheaf_list_prefix(sheaf_list *list, char **out_json, size_t *out_length);
    fn("sheaf_list_prefix", _sheaf_result, [ListHandle, POINTER(c_void_p), POINTER(c_size_t)])
    # sheaf_result sheaf_list_fetch_all(sheaf_list *list, char **out_json, size_t *out_length);
    fn("sheaf_list_fetch_all", _sheaf_result, [ListHandle, POINTER(c_void_p), POINTER(c_size_t)])
    # sheaf_result sheaf_list_get_status(sheaf_list *list, sheaf_list_status *out_status);
    fn("sheaf_list_get_status", _sheaf_result, [ListHandle, POINTER(ListStatusStruct)])

    # ---- Loading more
    # sheaf_result sheaf_list_start_load_more(sheaf_list *list, int64_t look_ahead);
    fn("sheaf_list_start_load_more", _sheaf_result, [ListHandle, c_int64])
    # sheaf_result sheaf_list_start_write(sheaf_list *list, sheaf_format format, sheaf_write_fn write,
    #                                     void *user_data, sheaf_destroy_fn destroy);
    fn("sheaf_list_start_write", _sheaf_result, [ListHandle, c_int, WRITE_FN, c_void_p, DESTROY_FN])
    # sheaf_result sheaf_list_start_write_fd(sheaf_list *list, int fd, sheaf_format format);
    fn("sheaf_list_start_write_fd", _sheaf_result, [ListHandle, c_int, c_int])
    # sheaf_result sheaf_list_more(sheaf_list *list, int64_t timeout_ms, char **out_json, size_t *out_length);
    fn("sheaf_list_more", _sheaf_result, [ListHandle, c_int64, POINTER(c_void_p), POINTER(c_size_t)])
    # sheaf_result sheaf_list_reset(sheaf_list *list);
    fn("sheaf_list_reset", _sheaf_result, [ListHandle])

    # ---- Groups: many lists as one job
    # sheaf_result sheaf_group_new(sheaf_group **out_group, sheaf_client *client);
    fn("sheaf_group_new", _sheaf_result, [POINTER(GroupHandle), ClientHandle])
    # void sheaf_group_free(sheaf_group *group);
    fn("sheaf_group_free", None, [GroupHandle])
    # sheaf_error *sheaf_group_error(const sheaf_group *group);   (owned: sheaf_error_free)
    fn("sheaf_group_error", c_void_p, [GroupHandle])
    # sheaf_result sheaf_group_set_option(sheaf_group *group, sheaf_group_option option, int64_t value);
    fn("sheaf_group_set_option", _sheaf_result, [GroupHandle, c_int, c_int64])
    # sheaf_result sheaf_group_add(sheaf_group *group, sheaf_list *list, const char *tag, size_t *out_index);
    fn("sheaf_group_add", _sheaf_result, [GroupHandle, ListHandle, c_char_p, POINTER(c_size_t)])
    # sheaf_result sheaf_group_add_each(sheaf_group *group, sheaf_list *parent, const char *const *templates,
    #                                   size_t levels, sheaf_list *child, size_t *out_index);
    fn("sheaf_group_add_each", _sheaf_result, [GroupHandle, ListHandle, POINTER(c_char_p), c_size_t, ListHandle,
                                               POINTER(c_size_t)])
    # typedef int (*sheaf_group_fn)(sheaf_group *group, const sheaf_group_delta *delta, void *user_data);
    # sheaf_result sheaf_group_start(sheaf_group *group, sheaf_group_fn on_delta, void *user_data,
    #                                sheaf_destroy_fn destroy);
    fn("sheaf_group_start", _sheaf_result, [GroupHandle, GROUP_FN, c_void_p, c_void_p])
    # sheaf_result sheaf_group_start_pull(sheaf_group *group);
    fn("sheaf_group_start_pull", _sheaf_result, [GroupHandle])
    # sheaf_result sheaf_group_set_notify_fd(sheaf_group *group, int fd);
    fn("sheaf_group_set_notify_fd", _sheaf_result, [GroupHandle, c_int])
    # sheaf_result sheaf_group_next(sheaf_group *group, int64_t timeout_ms, const sheaf_group_delta **out_delta);
    fn("sheaf_group_next", _sheaf_result, [GroupHandle, c_int64, POINTER(POINTER(GroupDeltaStruct))])
    # sheaf_result sheaf_group_delta_has_long_digits(sheaf_group *group, int *out_long);
    fn("sheaf_group_delta_has_long_digits", _sheaf_result, [GroupHandle, POINTER(c_int)])
    # sheaf_result sheaf_group_wait(sheaf_group *group);
    fn("sheaf_group_wait", _sheaf_result, [GroupHandle])
    # sheaf_result sheaf_group_cancel(sheaf_group *group);
    fn("sheaf_group_cancel", _sheaf_result, [GroupHandle])
    # size_t sheaf_group_count(const sheaf_group *group);
    fn("sheaf_group_count", c_size_t, [GroupHandle])
    # sheaf_list *sheaf_group_list(sheaf_group *group, size_t index);   (borrowed: the group owns it)
    fn("sheaf_group_list", ListHandle, [GroupHandle, c_size_t])

    # ---- Items as Arrow
    # sheaf_result sheaf_arrow_from_json(const char *json, size_t length, const struct ArrowSchema *known,
    #                                    struct ArrowSchema *out_schema, struct ArrowArray *out_array);
    fn("sheaf_arrow_from_json", _sheaf_result, [c_char_p, c_size_t, c_void_p, POINTER(ArrowSchemaStruct),
                                                POINTER(ArrowArrayStruct)])

    # ---- Single requests
    # sheaf_result sheaf_request_new(sheaf_request **out_request, sheaf_client *client,
    #                                const char *method, const char *path);
    fn("sheaf_request_new", _sheaf_result, [POINTER(RequestHandle), ClientHandle, c_char_p, c_char_p])
    # void sheaf_request_free(sheaf_request *request);
    fn("sheaf_request_free", None, [RequestHandle])
    # sheaf_result sheaf_request_add_segment(sheaf_request *request, const char *segment);
    fn("sheaf_request_add_segment", _sheaf_result, [RequestHandle, c_char_p])
    # sheaf_result sheaf_request_add_query(sheaf_request *request, const char *name, const char *value);
    fn("sheaf_request_add_query", _sheaf_result, [RequestHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_request_add_header(sheaf_request *request, const char *name, const char *value);
    fn("sheaf_request_add_header", _sheaf_result, [RequestHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_request_set_body(sheaf_request *request, const char *content_type,
    #                                     const void *data, size_t length);
    fn("sheaf_request_set_body", _sheaf_result, [RequestHandle, c_char_p, c_char_p, c_size_t])
    # sheaf_result sheaf_request_add_form(sheaf_request *request, const char *name, const char *value);
    fn("sheaf_request_add_form", _sheaf_result, [RequestHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_request_set_output_file(sheaf_request *request, const char *path);
    fn("sheaf_request_set_output_file", _sheaf_result, [RequestHandle, c_char_p])
    # sheaf_result sheaf_request_progress(const sheaf_request *request, int64_t *out_done, int64_t *out_expected);
    fn("sheaf_request_progress", _sheaf_result, [RequestHandle, POINTER(c_int64), POINTER(c_int64)])
    # sheaf_result sheaf_request_set_retry(sheaf_request *request, int retry);
    fn("sheaf_request_set_retry", _sheaf_result, [RequestHandle, c_int])
    # sheaf_result sheaf_request_start(sheaf_request *request, sheaf_request_done_fn on_done,
    #                                  void *user_data, sheaf_destroy_fn destroy);
    fn("sheaf_request_start", _sheaf_result, [RequestHandle, REQUEST_DONE_FN, c_void_p, c_void_p])
    # sheaf_result sheaf_request_wait(sheaf_request *request);
    fn("sheaf_request_wait", _sheaf_result, [RequestHandle])
    # sheaf_result sheaf_request_send(sheaf_request *request);
    fn("sheaf_request_send", _sheaf_result, [RequestHandle])
    # sheaf_result sheaf_request_cancel(sheaf_request *request);
    fn("sheaf_request_cancel", _sheaf_result, [RequestHandle])
    # int sheaf_request_status(const sheaf_request *request);
    fn("sheaf_request_status", c_int, [RequestHandle])
    # const char *sheaf_request_url(const sheaf_request *request);   (borrowed)
    fn("sheaf_request_url", c_char_p, [RequestHandle])
    # size_t sheaf_request_header_count(const sheaf_request *request);
    fn("sheaf_request_header_count", c_size_t, [RequestHandle])
    # sheaf_result sheaf_request_header(const sheaf_request *request, size_t index,
    #                                   const char **out_name, const char **out_value);
    fn("sheaf_request_header", _sheaf_result, [RequestHandle, c_size_t, POINTER(c_char_p), POINTER(c_char_p)])
    # const char *sheaf_request_header_value(const sheaf_request *request, const char *name);   (borrowed)
    fn("sheaf_request_header_value", c_char_p, [RequestHandle, c_char_p])
    # const char *sheaf_request_body(const sheaf_request *request, size_t *out_length);   (borrowed)
    fn("sheaf_request_body", c_void_p, [RequestHandle, POINTER(c_size_t)])
    # sheaf_error *sheaf_request_error(const sheaf_request *request);   (owned: sheaf_error_free)
    fn("sheaf_request_error", c_void_p, [RequestHandle])


#: Functions whose sheaf_result is turned into an exception by an ``errcheck``: the configuration
#: calls, where the exception carries this thread's last error. ``errors`` sets it, as this module
#: knows no exception classes. The run functions (start, wait, prefix, fetch_all) are checked by
#: the caller, which also needs the items and the HTTP detail; the request functions run inside
#: the transport bridge, which must never raise.
CHECKED = (
    "sheaf_client_new", "sheaf_client_set_auth", "sheaf_client_set_option", "sheaf_client_set_transport",
    "sheaf_client_set_log", "sheaf_client_set_event_handler", "sheaf_client_set_credential_provider",
    "sheaf_client_set_credential", "sheaf_client_add_header", "sheaf_client_add_secret_param",
    "sheaf_client_set_tls_file", "sheaf_client_set_cache", "sheaf_list_add_header", "sheaf_list_set_body",
    "sheaf_request_new", "sheaf_request_add_segment", "sheaf_request_add_query", "sheaf_request_add_header",
    "sheaf_request_set_body", "sheaf_request_add_form", "sheaf_request_set_retry", "sheaf_request_start",
    "sheaf_request_set_output_file",
    "sheaf_list_new", "sheaf_list_add_query", "sheaf_list_set_paging", "sheaf_list_set_signal",
    "sheaf_list_use_preset", "sheaf_list_description", "sheaf_preset_description", "sheaf_list_set_description",
    "sheaf_list_set_max_items", "sheaf_list_set_keep_items", "sheaf_list_set_budget", "sheaf_list_set_resume", "sheaf_list_partitions", "sheaf_list_partitions_at_once", "sheaf_list_poll", "sheaf_list_set_partition", "sheaf_list_set_transport", "sheaf_list_set_notify_fd", "sheaf_list_cancel",
    "sheaf_list_get_status", "sheaf_list_reset",
    "sheaf_request_cancel",
    "sheaf_group_new", "sheaf_group_set_option", "sheaf_group_add", "sheaf_group_add_each",
    "sheaf_group_set_notify_fd", "sheaf_group_start_pull", "sheaf_group_cancel",
)


def error_detail(pointer: Optional[int]) -> Dict[str, Any]:
    """The fields of a ``sheaf_error *`` the library handed over, as keyword arguments of
    ``error_for`` (empty for NULL); frees it."""
    if not pointer:
        return {}
    try:
        error = ctypes.cast(pointer, POINTER(ErrorStruct)).contents
        detail: Dict[str, Any] = {"message": decode(error.message), "url": decode(error.url),
                                  "status": error.http_status, "body": decode(error.body),
                                  "server_message": decode(error.server_message),
                                  "json_pointer": decode(error.json_pointer), "json_offset": error.json_offset,
                                  "signal": decode(error.signal), "hint": decode(error.hint)}
        return detail
    finally:
        lib.sheaf_error_free(pointer)


def group_error_detail(handle: GroupHandle) -> Dict[str, Any]:
    """``error_detail`` of ``sheaf_group_error(handle)``: the group's outcome."""
    return error_detail(lib.sheaf_group_error(handle))


def last_error_detail() -> Dict[str, Any]:
    """``error_detail`` of ``sheaf_last_error()``: the last failing call on this thread."""
    return error_detail(lib.sheaf_last_error())


def list_error_detail(handle: ListHandle) -> Dict[str, Any]:
    """``error_detail`` of ``sheaf_list_error(handle)``: the list's outcome."""
    return error_detail(lib.sheaf_list_error(handle))


# ---- small helpers ----------------------------------------------------------------------------

def decode(raw: Optional[bytes]) -> str:
    """A borrowed C string (already copied by ctypes) as text."""
    return "" if raw is None else raw.decode("utf-8", "replace")


def take_string(pointer: c_void_p, length: Optional[int] = None) -> bytes:
    """Copies a library-owned string and frees it with sheaf_free."""
    if not pointer.value:
        return b""
    try:
        return ctypes.string_at(pointer.value, length) if length is not None else ctypes.string_at(pointer.value)
    finally:
        lib.sheaf_free(pointer)


def result_text(result: int) -> str:
    """sheaf_result_str(result)."""
    return decode(lib.sheaf_result_str(result))


class _Unloaded:
    """Stands in for a library that could not be loaded: every use raises the ImportError that
    says where it was looked for. So `import sheaf` works without it, and what needs no library
    (``sheaf --version``, ``--help``) still answers."""

    def __init__(self, error: ImportError) -> None:
        self._error = error

    def __getattr__(self, name: str) -> Any:
        raise ImportError(str(self._error))


library_path: Optional[str]
try:
    lib, library_path = load_library()
except ImportError as _error:
    lib, library_path = _Unloaded(_error), None
else:
    declare(lib)
