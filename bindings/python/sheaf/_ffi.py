"""The ctypes mirror of include/sheaf.h: finding and loading libsheaf.so, and every declaration.

Nothing here is public API. Each function is declared under its C prototype, copied from the
header, so the two can be compared line by line. Opaque handles are distinct ``c_void_p``
subclasses, so passing a list where a client is expected fails in ctypes, not in the library.
Strings the library hands over for the caller to free come back as ``c_void_p`` (a ``c_char_p``
result would be copied by ctypes and the original leaked); ``take_string`` copies and frees them.
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
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

#: The major version of the C ABI this package was written for (SHEAF_VERSION_MAJOR).
ABI_MAJOR = 0
#: SHEAF_SNAPSHOT_VERSION of the header this package mirrors.
SNAPSHOT_VERSION = 1

LIBRARY_PATH_VARIABLE = "SHEAF_LIBRARY_PATH"

_PACKAGE_DIR = Path(__file__).resolve().parent
#: <repo>/bindings/python/sheaf/_ffi.py -> <repo>/build/lib/libsheaf.so.0
_BUILD_TREE_LIBRARY = _PACKAGE_DIR.parent.parent.parent / "build" / "lib" / "libsheaf.so.0"


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

SHEAF_TRANSPORT_OTHER = 0
SHEAF_TRANSPORT_TIMEOUT = 1
SHEAF_TRANSPORT_CONNECT = 2
SHEAF_TRANSPORT_DNS = 3
SHEAF_TRANSPORT_TLS = 4
SHEAF_TRANSPORT_TOO_LARGE = 5

SHEAF_OPT_WINDOW = 1
SHEAF_OPT_MAX_PAGES = 2
SHEAF_OPT_MAX_BODY_BYTES = 3
SHEAF_OPT_MAX_ATTEMPTS = 4
SHEAF_OPT_RETRY_BASE_MS = 5
SHEAF_OPT_RETRY_MAX_MS = 6
SHEAF_OPT_TIMEOUT_MS = 7
SHEAF_OPT_CONNECT_TIMEOUT_MS = 8
SHEAF_OPT_MAX_REDIRECTS = 9

SHEAF_NEXT_NONE = 0
SHEAF_NEXT_BODY_POINTER = 1
SHEAF_NEXT_LINK_HEADER = 2

SHEAF_TOTAL_NONE = 0
SHEAF_TOTAL_BODY_POINTER = 1
SHEAF_TOTAL_HEADER = 2


# ---- handles and structures -------------------------------------------------------------------

class ClientHandle(c_void_p):
    """``sheaf_client *``"""


class ListHandle(c_void_p):
    """``sheaf_list *``"""


class RequestHandle(c_void_p):
    """``sheaf_request *``"""


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


# typedef void (*sheaf_transport_fn)(sheaf_request *request, void *user_data);
TRANSPORT_FN = CFUNCTYPE(None, RequestHandle, c_void_p)

# typedef int (*sheaf_snapshot_fn)(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data);
SNAPSHOT_FN = CFUNCTYPE(c_int, ListHandle, POINTER(SnapshotStruct), c_void_p)

_sheaf_result = c_int  # enum sheaf_result


# ---- finding the library ----------------------------------------------------------------------

def candidate_paths(environ: Optional[Mapping[str, str]] = None) -> List[Tuple[str, Optional[Path]]]:
    """Where the library is looked for, in order: (description, path or None when not applicable)."""
    candidates: List[Tuple[str, Optional[Path]]] = []
    configured = (os.environ if environ is None else environ).get(LIBRARY_PATH_VARIABLE)
    if configured:
        candidates.append((f"${LIBRARY_PATH_VARIABLE}", Path(configured)))
    else:
        candidates.append((f"${LIBRARY_PATH_VARIABLE}", None))
    bundled_dir = _PACKAGE_DIR / "lib"
    bundled = sorted(bundled_dir.glob("libsheaf.so*"), key=lambda p: (p.name != "libsheaf.so.0", p.name))
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
    """Why `library` does not fit this package (None when it does): it must be major ABI_MAJOR."""
    try:
        function = library.sheaf_version_number
    except AttributeError:
        return "not a Sheaf library (no sheaf_version_number)"
    function.argtypes = []
    function.restype = c_int
    number = function()
    if number < 0 or number // 10000 != ABI_MAJOR:
        major, minor, patch = number // 10000, number // 100 % 100, number % 100
        return (f"version {major}.{minor}.{patch} (sheaf_version_number {number}), "
                f"but this package needs major version {ABI_MAJOR}")
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

    # ---- Transport (request accessors; strings borrowed until the request is answered)
    # const char *sheaf_request_method(const sheaf_request *request);
    fn("sheaf_request_method", c_char_p, [RequestHandle])
    # const char *sheaf_request_url(const sheaf_request *request);
    fn("sheaf_request_url", c_char_p, [RequestHandle])
    # size_t sheaf_request_header_count(const sheaf_request *request);
    fn("sheaf_request_header_count", c_size_t, [RequestHandle])
    # sheaf_result sheaf_request_header(const sheaf_request *request, size_t index,
    #                                   const char **out_name, const char **out_value);
    fn("sheaf_request_header", _sheaf_result, [RequestHandle, c_size_t, POINTER(c_char_p), POINTER(c_char_p)])
    # const char *sheaf_request_body(const sheaf_request *request, size_t *out_length);
    fn("sheaf_request_body", c_void_p, [RequestHandle, POINTER(c_size_t)])
    # int64_t sheaf_request_timeout_ms(const sheaf_request *request);
    fn("sheaf_request_timeout_ms", c_int64, [RequestHandle])
    # int64_t sheaf_request_max_body_bytes(const sheaf_request *request);
    fn("sheaf_request_max_body_bytes", c_int64, [RequestHandle])
    # int sheaf_request_is_cancelled(const sheaf_request *request);
    fn("sheaf_request_is_cancelled", c_int, [RequestHandle])
    # sheaf_result sheaf_request_add_response_header(sheaf_request *request,
    #                                                const char *name, const char *value);
    fn("sheaf_request_add_response_header", _sheaf_result, [RequestHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_request_respond(sheaf_request *request, int status,
    #                                    const char *body, size_t body_length);
    fn("sheaf_request_respond", _sheaf_result, [RequestHandle, c_int, c_char_p, c_size_t])
    # sheaf_result sheaf_request_fail(sheaf_request *request, sheaf_transport_error kind,
    #                                 const char *message);
    fn("sheaf_request_fail", _sheaf_result, [RequestHandle, c_int, c_char_p])

    # ---- Client
    # sheaf_result sheaf_client_new(sheaf_client **out_client, const char *base_url,
    #                               const char *bearer_token);
    fn("sheaf_client_new", _sheaf_result, [POINTER(ClientHandle), c_char_p, c_char_p])
    # void sheaf_client_free(sheaf_client *client);
    fn("sheaf_client_free", None, [ClientHandle])
    # const char *sheaf_client_errmsg(const sheaf_client *client);   (borrowed)
    fn("sheaf_client_errmsg", c_char_p, [ClientHandle])
    # sheaf_result sheaf_client_set_option(sheaf_client *client, sheaf_option option, int64_t value);
    fn("sheaf_client_set_option", _sheaf_result, [ClientHandle, c_int, c_int64])
    # sheaf_result sheaf_client_set_transport(sheaf_client *client,
    #                                         sheaf_transport_fn transport, void *user_data);
    fn("sheaf_client_set_transport", _sheaf_result, [ClientHandle, TRANSPORT_FN, c_void_p])

    # ---- Describing a list
    # sheaf_result sheaf_list_new(sheaf_list **out_list, sheaf_client *client, const char *path);
    fn("sheaf_list_new", _sheaf_result, [POINTER(ListHandle), ClientHandle, c_char_p])
    # void sheaf_list_free(sheaf_list *list);
    fn("sheaf_list_free", None, [ListHandle])
    # const char *sheaf_list_errmsg(const sheaf_list *list);   (borrowed)
    fn("sheaf_list_errmsg", c_char_p, [ListHandle])
    # int sheaf_list_http_status(const sheaf_list *list);
    fn("sheaf_list_http_status", c_int, [ListHandle])
    # const char *sheaf_list_http_body(const sheaf_list *list);   (borrowed)
    fn("sheaf_list_http_body", c_char_p, [ListHandle])
    # sheaf_result sheaf_list_add_query(sheaf_list *list, const char *name, const char *value);
    fn("sheaf_list_add_query", _sheaf_result, [ListHandle, c_char_p, c_char_p])
    # sheaf_result sheaf_list_set_items(sheaf_list *list, const char *json_pointer);
    fn("sheaf_list_set_items", _sheaf_result, [ListHandle, c_char_p])
    # sheaf_result sheaf_list_set_page_number(sheaf_list *list, const char *page_param,
    #                                         int first_page, const char *size_param, int page_size);
    fn("sheaf_list_set_page_number", _sheaf_result, [ListHandle, c_char_p, c_int, c_char_p, c_int])
    # sheaf_result sheaf_list_set_offset_limit(sheaf_list *list, const char *offset_param,
    #                                          const char *limit_param, int limit);
    fn("sheaf_list_set_offset_limit", _sheaf_result, [ListHandle, c_char_p, c_char_p, c_int])
    # sheaf_result sheaf_list_set_cursor(sheaf_list *list, const char *cursor_param);
    fn("sheaf_list_set_cursor", _sheaf_result, [ListHandle, c_char_p])
    # sheaf_result sheaf_list_set_next(sheaf_list *list, sheaf_next_source source,
    #                                  const char *json_pointer);
    fn("sheaf_list_set_next", _sheaf_result, [ListHandle, c_int, c_char_p])
    # sheaf_result sheaf_list_set_total(sheaf_list *list, sheaf_total_source source,
    #                                   const char *location);
    fn("sheaf_list_set_total", _sheaf_result, [ListHandle, c_int, c_char_p])
    # sheaf_result sheaf_list_set_identity(sheaf_list *list, const char *json_pointer);
    fn("sheaf_list_set_identity", _sheaf_result, [ListHandle, c_char_p])
    # sheaf_result sheaf_list_set_max_items(sheaf_list *list, int64_t max_items);
    fn("sheaf_list_set_max_items", _sheaf_result, [ListHandle, c_int64])
    # sheaf_result sheaf_list_set_keep_items(sheaf_list *list, int keep);
    fn("sheaf_list_set_keep_items", _sheaf_result, [ListHandle, c_int])
    # sheaf_result sheaf_list_set_transport(sheaf_list *list, sheaf_transport_fn transport, void *user_data);
    fn("sheaf_list_set_transport", _sheaf_result, [ListHandle, TRANSPORT_FN, c_void_p])

    # ---- Running a list
    # sheaf_result sheaf_list_start(sheaf_list *list, sheaf_snapshot_fn on_snapshot, void *user_data);
    fn("sheaf_list_start", _sheaf_result, [ListHandle, SNAPSHOT_FN, c_void_p])
    # sheaf_result sheaf_list_start_pull(sheaf_list *list);
    fn("sheaf_list_start_pull", _sheaf_result, [ListHandle])
    # sheaf_result sheaf_list_next(sheaf_list *list, int64_t timeout_ms, const sheaf_snapshot **out_snapshot);
    fn("sheaf_list_next", _sheaf_result, [ListHandle, c_int64, POINTER(POINTER(SnapshotStruct))])
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

    # Results of the configuration calls become exceptions carrying the handle's message.
    for name in _CHECKED:
        getattr(library, name).errcheck = _errcheck


#: Functions whose sheaf_result is turned into an exception by `_errcheck`. The run functions
#: (start, wait, prefix, fetch_all) are checked by the caller, which also needs the items and the
#: HTTP detail; the request functions run inside the transport bridge, which must never raise.
_CHECKED = (
    "sheaf_client_set_option", "sheaf_client_set_transport",
    "sheaf_list_new", "sheaf_list_add_query", "sheaf_list_set_items", "sheaf_list_set_page_number",
    "sheaf_list_set_offset_limit", "sheaf_list_set_cursor", "sheaf_list_set_next",
    "sheaf_list_set_total", "sheaf_list_set_identity", "sheaf_list_set_max_items",
    "sheaf_list_set_keep_items", "sheaf_list_set_transport", "sheaf_list_cancel",
)


def _errcheck(result: int, function: Any, arguments: Tuple[Any, ...]) -> int:
    """Raises the Error subclass for a failing result, with the message of the handle involved."""
    if result in (SHEAF_OK, SHEAF_LIMIT_REACHED):
        return result
    message = ""
    for argument in arguments:  # the first handle among the arguments holds the message
        if isinstance(argument, ListHandle):
            message = decode(lib.sheaf_list_errmsg(argument))
            break
        if isinstance(argument, ClientHandle):
            message = decode(lib.sheaf_client_errmsg(argument))
            break
    from .errors import error_for  # errors imports this module for the code names

    raise error_for(result, message)


# ---- small helpers ----------------------------------------------------------------------------

def decode(raw: Optional[bytes]) -> str:
    """A borrowed C string (already copied by ctypes) as text."""
    return "" if raw is None else raw.decode("utf-8", "replace")


def encode(text: Optional[str]) -> Optional[bytes]:
    """Text for a `const char *` parameter (None stays NULL)."""
    return None if text is None else text.encode("utf-8")


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


lib, library_path = load_library()
declare(lib)
