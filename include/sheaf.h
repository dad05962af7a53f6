/*
 * sheaf.h - the public C interface of Sheaf, a client for paginated REST list endpoints.
 *
 * Sheaf turns a paginated list endpoint into one call (sheaf_list_fetch_all) or into a stream
 * of growing, correctly ordered snapshots (sheaf_list_start + a sheaf_snapshot_fn, or
 * sheaf_list_start_pull + sheaf_list_next to take them on the caller's own thread).
 *
 * A list is described by values: a paging kind (sheaf_list_set_paging) and where each signal is
 * read (sheaf_list_set_signal: the items, the next link, a cursor, the total, ...). Whatever is
 * not pinned is detected from the first page, so an undescribed list works with every common
 * convention; a preset (sheaf_list_use_preset) pins the shape of a known API at once. The whole
 * description has one JSON form: sheaf_list_description prints it, sheaf_list_set_description
 * takes it (include/sheaf/description.schema.json publishes it). When page
 * k can be addressed (page numbers or offsets, given or inferred from the first next link), the
 * remaining pages are fetched concurrently in a bounded window (without a total,
 * speculatively); otherwise the next links or cursors are walked one by one. A list ends
 * SHEAF_OK only when its own description established the end: a page that signals more than
 * the description follows ends it with SHEAF_E_NOT_FOLLOWED.
 *
 * Contents, in the order a caller meets them (each a "---- Name ----" section below):
 *   Versions             SHEAF_VERSION_*, SHEAF_VERSION_CHECK, sheaf_version_number
 *   Results, Errors      sheaf_result codes; sheaf_error, sheaf_last_error
 *   Handles, Client      sheaf_client_new, credentials, headers, TLS files, options
 *   Watching a client    log records and events
 *   Describing a list    sheaf_list_new, paging and signals, presets, the description JSON,
 *                        budgets, resume tokens, partitions
 *   Running a list       fetch_all, snapshots (callback or pulled), writing, status
 *   Loading more         a list page by page, as its caller asks
 *   Groups               many lists as one job
 *   Single requests      any method, bodies, downloads
 *   Writing a transport  for embedders that replace libcurl
 *
 * Two tiers
 * ---------
 * This header is the stable tier: what it declares keeps the 1.0 promise (CHANGELOG.md) for all
 * of major version 1. Its calls, types and values are never removed or changed, only added to;
 * Tests/abi/check_compat.sh holds the library to it, against Tests/abi/baseline/libsheaf.abi.
 * Each call is used by at least two of the bindings (Python, Go, Rust), or its comment says, in
 * a line that starts "C only:", why it is kept for C callers although fewer do (a callback form
 * where the bindings pull, a shorthand of another call, a transport's side of an exchange, ...).
 * Tests/abi/check_tiers.py checks that.
 *
 * The experimental tier is <sheaf/experimental.h> (include it; it includes this header): calls
 * added since 1.0.0 that fewer than two bindings use yet, and hooks that exist for one binding's
 * speed (Arrow batches of a delta, the digit scan Python's orjson path asks for, partitions of a
 * plan that all run at once, an event loop's descriptor for a group). They may change or go in a
 * minor release, and the ABI baseline check leaves them out. One moves here, as it is, once two
 * bindings use it; nothing here ever moves there.
 *
 * Thread safety
 * -------------
 * A sheaf_client may be shared by any number of threads and may run many lists at once.
 * A sheaf_list is used by one thread at a time (sheaf_list_cancel is the one exception: it may
 * be called from any thread, and from a callback); so is a sheaf_request (sheaf_request_cancel
 * likewise the exception). A sheaf_exchange belongs to the transport that received it until it
 * answers, from any one thread at a time. Callbacks (snapshots, the transport, log and
 * event hooks, the credential provider) run on threads owned by the library, never on the caller's thread, never two
 * snapshot callbacks of one list at once and never two hooks of one client at once. A blocking Sheaf function (sheaf_list_wait, sheaf_list_fetch_all,
 * sheaf_list_next with a timeout, sheaf_client_free) called from inside a Sheaf callback returns
 * SHEAF_E_REENTRANT (or, for sheaf_client_free, is deferred) instead of deadlocking.
 *
 * Memory
 * ------
 * Strings passed in are copied before the call returns. Strings handed to a callback are
 * borrowed for the duration of that callback. Everything the library returns to the caller as
 * an owned pointer is released with sheaf_free (errors with sheaf_error_free). Every *_free
 * function accepts NULL. A callback whose user_data outlives the call that registered it takes
 * a sheaf_destroy_fn, called once when the library no longer needs user_data. The library takes
 * user_data only from a call that succeeds: a call that is refused (any result but SHEAF_OK)
 * never calls destroy, and user_data stays the caller's to free.
 *
 * Versioned structs
 * -----------------
 * Every public struct starts with `unsigned int version`, and its fields are only ever appended.
 * Whoever allocates the struct sets the version: the library for the structs it hands out
 * (sheaf_error, sheaf_snapshot, sheaf_log_record, sheaf_event: check `version` before reading a
 * field added after version 1), the caller for the structs it passes in (sheaf_list_status: set
 * `version` to the SHEAF_*_VERSION of this header; the library fills the fields both know).
 * Handles are opaque; nothing else crosses the interface by value.
 *
 * Errors
 * ------
 * Functions that can fail return a sheaf_result. The codes are stable and append-only; their
 * static text is sheaf_result_str. The detail of a failure is data the caller owns: a
 * sheaf_error (code, message, URL, HTTP status, body excerpt, the server's own error text, the
 * JSON location), from sheaf_last_error (the last call on this thread) or sheaf_list_error (a
 * list's outcome). Credentials never appear in messages.
 */
#ifndef SHEAF_H
#define SHEAF_H

#include <stddef.h>
#include <stdint.h>

#ifndef SHEAF_API
#define SHEAF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions --------------------------------------------------------------------------- */

#define SHEAF_VERSION_MAJOR 1
#define SHEAF_VERSION_MINOR 0
#define SHEAF_VERSION_PATCH 0
#define SHEAF_VERSION_STRING "1.0.0"
/** MAJOR * 10000 + MINOR * 100 + PATCH, as sheaf_version_number() returns it. */
#define SHEAF_VERSION_NUMBER (SHEAF_VERSION_MAJOR * 10000 + SHEAF_VERSION_MINOR * 100 + SHEAF_VERSION_PATCH)
/**
 * Whether this header is version MAJOR.MINOR.PATCH or newer, for code that uses a call added
 * later:  #if SHEAF_VERSION_CHECK(1, 1, 0) ... #endif.  That the library loaded at run time is
 * as new is sheaf_version_number() >= the same number.
 */
#define SHEAF_VERSION_CHECK(major, minor, patch) \
    (SHEAF_VERSION_NUMBER >= (major) * 10000 + (minor) * 100 + (patch))

/**
 * The version of the library actually loaded, as SHEAF_VERSION_NUMBER computes it.
 * Compare it with SHEAF_VERSION_NUMBER to check that header and library agree.
 * Thread-safe; no allocation.
 */
SHEAF_API int sheaf_version_number(void);

/** The version of the loaded library as "MAJOR.MINOR.PATCH". Static storage: do not free. */
SHEAF_API const char *sheaf_version_string(void);

/* ---- Results ---------------------------------------------------------------------------- */

/**
 * Result codes. Append-only: a value is never renumbered or removed.
 * SHEAF_OK is the one success; SHEAF_PENDING means "not yet" (only the non-blocking calls
 * sheaf_list_next and sheaf_list_more return it); every other code is a failure. A list that
 * stops where its caller asked (an item limit, a page or request budget) ends SHEAF_OK, and
 * sheaf_list_status.stop_reason says why it stopped. Three codes of 0.4 that reported those stops
 * (1, 22, 23) are retired: never returned, kept so that their numbers are never reused.
 */
typedef enum sheaf_result {
    SHEAF_OK = 0,                  /**< Done; for a list, its description established the end and the items agree with the total. */
    SHEAF_LIMIT_REACHED = 1,       /**< Retired (0.4: the item limit was reached); never returned: the list ends SHEAF_OK with SHEAF_STOP_ITEM_LIMIT. */
    SHEAF_E_INVALID_ARGUMENT = 2,  /**< A NULL handle, a malformed URL or JSON pointer, an option out of range, a signal read from a source it cannot come from. */
    SHEAF_E_UNSUPPORTED = 3,       /**< Not supported by this version of the library. */
    SHEAF_E_STATE = 4,             /**< The handle is not in a state for this call (e.g. a list started twice). */
    SHEAF_E_REENTRANT = 5,         /**< A blocking call was made from inside a Sheaf callback. */
    SHEAF_E_HTTP = 6,              /**< The server answered with a failing HTTP status (after retries). */
    SHEAF_E_TRANSPORT = 7,         /**< The request failed below HTTP: timeout, connect, DNS, TLS (after retries). */
    SHEAF_E_BAD_PAGE = 8,          /**< A page is not JSON, or a signal is not where or what the description says. */
    SHEAF_E_INCOMPLETE = 9,        /**< Every page arrived, but the items disagree with the server's total. */
    SHEAF_E_LOOP = 10,             /**< A next link or cursor repeats one already followed. */
    SHEAF_E_PAGE_LIMIT = 11,       /**< The walk needs more pages than the page cap allows. */
    SHEAF_E_BODY_TOO_LARGE = 12,   /**< A response body exceeds the body cap. */
    SHEAF_E_CROSS_ORIGIN = 13,     /**< A next link or redirect leaves the base URL's origin (or https for http). */
    SHEAF_E_STOPPED = 14,          /**< A snapshot callback returned non-zero. */
    SHEAF_E_CANCELLED = 15,        /**< sheaf_list_cancel was called, or the list was freed while running. */
    SHEAF_E_INTERNAL = 16,         /**< A bug in Sheaf; the message says where. */
    SHEAF_PENDING = 17,            /**< sheaf_list_next: no snapshot yet within the timeout (not a failure). */
    SHEAF_E_NOT_FOLLOWED = 18,     /**< The last page signals more (a Link rel="next", has_more, a next field, a total above what arrived) that the description does not follow; the error names the signal and the option or preset that would. */
    SHEAF_E_UNDETECTED = 19,       /**< Detection could not decide the list's shape (no items array, or several candidates), or how to reach page two of a first page that promises more (no next page, and no page parameter that the probe tried gave the next items); the error names the candidates or what was tried, and the options that choose. */
    SHEAF_E_REPEATED_PAGE = 20,    /**< Two consecutive pages hold the same items byte for byte: the server ignores the paging parameter (or the description names the wrong one). */
    SHEAF_E_IO = 21,               /**< A download's file could not be written: its folder cannot be created, it is not writable, or the disk is full (the destination is left as it was); or a list's output (sheaf_list_start_write_fd) could not be written; or a response cache's folder (sheaf_client_set_cache) could not be made or given a key. */
    SHEAF_PAGE_BUDGET_REACHED = 22,    /**< Retired (0.4: the page budget was reached); never returned: the list ends SHEAF_OK with SHEAF_STOP_PAGE_BUDGET. */
    SHEAF_REQUEST_BUDGET_REACHED = 23, /**< Retired (0.4: the request budget was reached); never returned: the list ends SHEAF_OK with SHEAF_STOP_REQUEST_BUDGET. */
    SHEAF_E_DEADLINE = 24,         /**< The list did not end within the caller's deadline (SHEAF_BUDGET_DEADLINE_MS); what arrived before stays delivered. */
    SHEAF_E_CREDENTIAL = 25,       /**< The credential provider (sheaf_client_set_credential_provider) gave no credential. */
    SHEAF_E_PARTIAL = 26,          /**< Some lists of a group failed; the others ended well (each list's own result and error say which and why). */
    SHEAF_E_RATE_LIMITED = 27,     /**< The server's rate limit is spent until a reset further off than SHEAF_OPT_MAX_WAIT_MS: its headers (X-RateLimit-Remaining/-Reset, RateLimit) said nothing is left, or it refused a request (403, 429) saying so. Nothing more was sent; the message names the limit (X-RateLimit-Resource), its size and when it resets; what arrived before stays delivered, and a list's resume token goes on after it. Never reported as SHEAF_E_HTTP's refused credential. */
    SHEAF_E_API = 28               /**< The API answered 2xx with errors in the body: a GraphQL answer's "errors" (the message names the first one's message and path, and how many more). Partial data with errors is this failure unless the description allows it ("graphql": {"allow_partial": true}). A GraphQL rate limit (RATE_LIMITED, THROTTLED) is waited out as a 429 is. */
} sheaf_result;

/** Whether a result code is a success (SHEAF_OK: why a list stopped is its status's stop_reason). */
#define SHEAF_SUCCEEDED(result) ((result) == SHEAF_OK)
/** Whether a result code is a failure: neither SHEAF_OK nor SHEAF_PENDING ("not yet"). */
#define SHEAF_FAILED(result) ((result) != SHEAF_OK && (result) != SHEAF_PENDING)

/** Static English text for a result code (unknown codes get a generic text). Never NULL; do not free. */
SHEAF_API const char *sheaf_result_str(int result);

/** Releases memory the library returned to the caller (JSON strings). NULL is a no-op. */
SHEAF_API void sheaf_free(void *pointer);

/** Releases what user_data points to once the library no longer needs it. */
typedef void (*sheaf_destroy_fn)(void *user_data);

/* ---- Errors ----------------------------------------------------------------------------- */

/**
 * The detail of a failure, owned by the caller (sheaf_error_free). Fields are appended in later
 * versions, never reordered: check `version` (SHEAF_ERROR_VERSION of the library that filled
 * it) before reading a field added after version 1. Every string is non-NULL and
 * NUL-terminated ("" when absent), UTF-8, and never contains a credential.
 */
typedef struct sheaf_error {
    unsigned int version;        /**< SHEAF_ERROR_VERSION of the library that filled it. */
    sheaf_result code;           /**< The result code of the failure. */
    const char *message;         /**< A sentence for people: what failed, where, and what to do. */
    const char *url;             /**< The URL concerned (secrets redacted), or "". */
    int http_status;             /**< The HTTP status for SHEAF_E_HTTP, else 0. */
    const char *body;            /**< For SHEAF_E_HTTP: the start of the response body (at most 1 KiB). */
    const char *server_message;  /**< The server's own error text from its error fields ("error", "message", "detail", ...), or "". */
    const char *json_pointer;    /**< For SHEAF_E_BAD_PAGE: the JSON pointer concerned, or "". */
    int64_t json_offset;         /**< For SHEAF_E_BAD_PAGE: the byte offset in the body where reading failed, or -1. */
    const char *signal;          /**< For SHEAF_E_NOT_FOLLOWED: the signal seen (e.g. "Link rel=\"next\""), or "". */
    const char *hint;            /**< The option or preset that would help (e.g. "sheaf_list_set_signal(NEXT, LINK, \"next\")"), or "". */
} sheaf_error;

#define SHEAF_ERROR_VERSION 1

/**
 * The error of the most recent call on this thread that returned a failure code, as a new copy
 * (free with sheaf_error_free); NULL when the most recent call that returns a sheaf_result
 * succeeded. Every function returning a sheaf_result records or clears it; functions returning
 * no result code leave it alone. Thread-safe: each thread has its own.
 */
SHEAF_API sheaf_error *sheaf_last_error(void);

/** Frees an error returned by sheaf_last_error or sheaf_list_error. NULL is a no-op. */
SHEAF_API void sheaf_error_free(sheaf_error *error);

/* ---- Handles ---------------------------------------------------------------------------- */

/** A configured client: base URL, credentials, transport and policies. */
typedef struct sheaf_client sheaf_client;
/** One paginated list of one client: its description, then one run of it. */
typedef struct sheaf_list sheaf_list;
/** One single HTTP request of a client (any method, a body), then its response. */
typedef struct sheaf_request sheaf_request;
/** Many lists run as one job on one client: one stream of deltas tagged by list, one outcome. */
typedef struct sheaf_group sheaf_group;

/* ---- Client ----------------------------------------------------------------------------- */

/**
 * Creates a client for `base_url` (absolute http or https URL, without user:password; list
 * paths are resolved against it; copied). It sends no credentials until sheaf_client_set_auth.
 * On success *out_client owns a new client, freed with sheaf_client_free; on failure it is set
 * to NULL and sheaf_last_error says why. The default transport is libcurl's multi interface.
 */
SHEAF_API sheaf_result sheaf_client_new(sheaf_client **out_client, const char *base_url);

/**
 * Frees a client. Lists still open keep what they need alive, so lists may be freed after their
 * client. NULL is a no-op. Called from inside a callback, the release is deferred (never blocks).
 * Its log and event hooks are closed: none is called after this returns. A hook call running on
 * another thread is waited for (only that one); records and events still queued for the hooks
 * are dropped, not handed over. Called from a hook of this client, none runs after that one.
 */
SHEAF_API void sheaf_client_free(sheaf_client *client);

/**
 * Waits until every log record and event made so far has been handed to the client's hooks, the
 * ones sheaf_client_free would drop: call it before the free to keep them (a command-line tool's
 * last log lines). Blocks for as long as the hooks take; SHEAF_E_REENTRANT from inside a Sheaf
 * callback.
 */
SHEAF_API sheaf_result sheaf_client_flush_hooks(sheaf_client *client);

/** How a client authenticates. Append-only. */
typedef enum sheaf_auth {
    SHEAF_AUTH_NONE = 0,            /**< No credentials (the default). */
    SHEAF_AUTH_BEARER = 1,          /**< "Authorization: Bearer <value>". */
    SHEAF_AUTH_BASIC = 2,           /**< "Authorization: Basic base64(name:value)" (RFC 7617): `name` is the user (no ':'), `value` the password. */
    SHEAF_AUTH_API_KEY_HEADER = 3,  /**< The header `name` set to `value` (not a header that frames the message, such as Content-Length or Host). */
    SHEAF_AUTH_API_KEY_QUERY = 4    /**< The query parameter `name` set to `value`. */
} sheaf_auth;

/**
 * Sets the client's bearer token (SHEAF_AUTH_BEARER, `value` the token) or removes its
 * credentials (SHEAF_AUTH_NONE, `value` ignored); the other kinds need a name and are set with
 * sheaf_client_set_credential. Otherwise as sheaf_client_set_credential.
 */
SHEAF_API sheaf_result sheaf_client_set_auth(sheaf_client *client, sheaf_auth kind, const char *value);

/**
 * Sets the client's credentials (copied; replacing any earlier ones) for lists and requests
 * started from now on. `name` is the Basic user or the API key's header or parameter name (NULL
 * for NONE and BEARER). Credentials go only to the base URL's origin (scheme, host, port) and
 * never appear in messages (nor does a Basic password, or its base64 form). A name or value that
 * cannot be sent (a header name that is not a token, control characters, a ':' in a Basic user,
 * an empty token or key) is refused with SHEAF_E_INVALID_ARGUMENT. Thread-safe.
 */
SHEAF_API sheaf_result sheaf_client_set_credential(sheaf_client *client, sheaf_auth kind,
                                                   const char *name, const char *value);

/** One call of a credential provider: what it is asked, and where it answers. Valid only during the call. */
typedef struct sheaf_credential_reply sheaf_credential_reply;

/**
 * A credential provider: answers with sheaf_credential_reply_set (or _fail) before returning.
 * Called on a library thread of its own, never two at once for one client, so it may block (an
 * HTTP call to a token endpoint, on another client: a call on this one would wait for itself).
 */
typedef void (*sheaf_credential_fn)(sheaf_credential_reply *reply, void *user_data);

/**
 * 1 when the provider is asked again because the server refused (401) the last credential it
 * gave; 0 for the first.
 *
 * C only: a credential provider's side of the call (sheaf_client_set_credential_provider).
 */
SHEAF_API int sheaf_credential_reply_is_refresh(const sheaf_credential_reply *reply);

/**
 * The credential's value (copied): the token, the Basic password or the API key. Empty or NULL:
 * SHEAF_E_INVALID_ARGUMENT.
 *
 * C only: a credential provider's side of the call (sheaf_client_set_credential_provider).
 */
SHEAF_API sheaf_result sheaf_credential_reply_set(sheaf_credential_reply *reply, const char *value);

/**
 * The provider has no credential; `message` (copied, may be NULL) says why, and must hold no
 * secret. The requests waiting for it fail with SHEAF_E_CREDENTIAL (as they do when the provider
 * answers neither way); the next request asks again.
 *
 * C only: a credential provider's side of the call (sheaf_client_set_credential_provider).
 */
SHEAF_API sheaf_result sheaf_credential_reply_fail(sheaf_credential_reply *reply, const char *message);

/**
 * Makes the client's credentials come from `provider` (in place of sheaf_client_set_credential,
 * which in turn replaces the provider; NULL removes it), for lists and requests started from now
 * on. `kind` and `name` are as for sheaf_client_set_credential (not SHEAF_AUTH_NONE); the value
 * comes from the provider: asked once for the first request, and once more each time the server
 * answers 401 to a credential it gave (refresh-once-on-401: the request is sent again once with
 * the new credential, without counting as a retry; a second 401 is the request's answer).
 * Requests refused together (a list's window) share one refresh. The request's timeout
 * (SHEAF_OPT_TIMEOUT_MS) covers the wait for the provider: a request whose provider has not
 * answered within it fails with SHEAF_E_CREDENTIAL, and the answer, when it comes, serves the
 * requests that follow. Every credential given goes
 * only to the base URL's origin and is kept out of every message. `destroy` (may be NULL) is
 * called with `user_data` once no client, list or request needs the provider any more; a refused
 * call never calls it (user_data stays the caller's).
 *
 * C only: a callback the library calls on a thread of its own (Python's credential providers
 * use it; Go and Rust set the credential itself, sheaf_client_set_credential).
 */
SHEAF_API sheaf_result sheaf_client_set_credential_provider(sheaf_client *client, sheaf_auth kind, const char *name,
                                                            sheaf_credential_fn provider, void *user_data,
                                                            sheaf_destroy_fn destroy);

/**
 * Adds a header (copied) sent with every list page and request from now on; a list's or a
 * request's header of the same name (case-insensitive) replaces it, as does a later call with
 * the same name. Headers named Authorization, Proxy-Authorization or Cookie are not sent to
 * another origin. A name that is not an HTTP token, a value with CR, LF or another control
 * character, or a header that frames the message (Content-Length, Transfer-Encoding, Host,
 * Connection, in any case: the transport writes them from the URL and the body) is refused with
 * SHEAF_E_INVALID_ARGUMENT.
 */
SHEAF_API sheaf_result sheaf_client_add_header(sheaf_client *client, const char *name, const char *value);

/**
 * Names a query parameter whose values are secret (copied): messages, error URLs and body
 * excerpts show "<redacted>" in its place. Built in: api_key, apikey, api-key, key,
 * access_token, refresh_token, id_token, token, auth, client_secret, secret, password, passwd,
 * signature, sig, X-Amz-Signature, X-Amz-Security-Token, X-Amz-Credential, X-Goog-Signature,
 * X-Goog-Credential (compared case-insensitively), and the API key's own parameter. The API
 * key's parameter and those named here are also taken out of every URL at another origin before
 * it is sent (a redirect's Location or a next link may echo them); the built-in names are not
 * (another origin's presigned URL needs its own signature).
 */
SHEAF_API sheaf_result sheaf_client_add_secret_param(sheaf_client *client, const char *name);

/** TLS settings of a client, each a path. Append-only. */
typedef enum sheaf_tls_file {
    SHEAF_TLS_CA_FILE = 1,      /**< A PEM bundle of the certificate authorities to trust instead of the system's (default: $SSL_CERT_FILE when set). */
    SHEAF_TLS_CA_DIRECTORY = 2, /**< A directory of hashed PEM certificates to trust (default: $SSL_CERT_DIR when set). */
    SHEAF_TLS_CERT = 3,         /**< The client certificate (PEM) for mutual TLS. */
    SHEAF_TLS_KEY = 4           /**< The client certificate's private key (PEM). */
} sheaf_tls_file;

/**
 * Sets a TLS file (the path is copied; NULL restores the default) for lists and requests
 * started from now on. The file is read by the transport when it connects: a missing or invalid
 * file fails those requests with SHEAF_E_TRANSPORT. SHEAF_OPT_TLS_INSECURE turns verification
 * off instead. Custom transports receive no TLS settings: they apply their own.
 */
SHEAF_API sheaf_result sheaf_client_set_tls_file(sheaf_client *client, sheaf_tls_file which, const char *path);

/**
 * Gives the client a response cache in `folder` (the path is copied; NULL: none, the default)
 * for the lists, requests and fan-out children started from now on. Every GET answered 200 with
 * an ETag or Last-Modified is stored there (not a download, not a request with validators of its
 * own, not `Cache-Control: no-store` or `Vary: *`), and asked for again with If-None-Match /
 * If-Modified-Since: a 304 answers with the stored status, headers and body (the 304's headers
 * replacing stored ones), so a re-sync costs a 304 per unchanged page (GitHub charges no quota
 * for one), and the list is as current as one fetched. Nothing is served without asking.
 * An entry's key is an HMAC of the method, the URL and every request header under a key made
 * with the folder: one credential's answers never answer another's, and no URL, token or header
 * value is written to disk. The folder is made when missing (0700; its parents too) and made
 * private when it is the caller's own; files are 0600, written whole and renamed into place
 * (several processes may share the folder). An entry cut short, edited or forged is a miss. Past
 * `max_bytes` (65536 to 2^50; 0: 512 MiB) the least recently used entries go. A folder that cannot
 * be written to (read only, full) still answers from what it holds.
 * SHEAF_E_INVALID_ARGUMENT for an empty path, a symbolic link, a file, a folder of another user's
 * or `max_bytes` out of range; SHEAF_E_IO when the folder cannot be made or holds no key that can
 * be read or written. sheaf_list_get_status counts the 304s (requests_revalidated).
 */
SHEAF_API sheaf_result sheaf_client_set_cache(sheaf_client *client, const char *folder, int64_t max_bytes);

/** Integer options of a client. Append-only. Set before starting lists; running lists keep theirs. */
typedef enum sheaf_option {
    SHEAF_OPT_WINDOW = 1,             /**< Requests in flight at once to one origin, 1..64; default 8: every list, request and download the client runs there shares this one window. With SHEAF_OPT_ADAPTIVE_WINDOW (the default), where the window starts, and the most pages a list asks for before its page one answers. */
    SHEAF_OPT_MAX_PAGES = 2,          /**< Page cap per list, >= 1; default 10000. */
    SHEAF_OPT_MAX_BODY_BYTES = 3,     /**< Body cap per response, 1..2^40 (1 TiB); default 64 MiB. */
    SHEAF_OPT_MAX_ATTEMPTS = 4,       /**< Attempts per request including the first, 1..100; default 4. */
    SHEAF_OPT_RETRY_BASE_MS = 5,      /**< Backoff base in ms, >= 0; default 100 (full jitter). */
    SHEAF_OPT_RETRY_MAX_MS = 6,       /**< Backoff and Retry-After cap in ms, >= 0; default 30000. */
    SHEAF_OPT_TIMEOUT_MS = 7,         /**< Whole-request timeout in ms, 0 = none; default 30000. It covers the wait for a credential provider's answer. */
    SHEAF_OPT_CONNECT_TIMEOUT_MS = 8, /**< Connect timeout in ms, 0 = transport default; default 10000. */
    SHEAF_OPT_MAX_REDIRECTS = 9,      /**< Redirects followed per request, 0..50; default 10. */
    SHEAF_OPT_CROSS_ORIGIN = 10,      /**< A next link, redirect or absolute path at another origin: 0 = refused with SHEAF_E_CROSS_ORIGIN (default), 1 = followed without credentials and without the API key's or sheaf_client_add_secret_param's query parameters (never https to http). */
    SHEAF_OPT_TLS_INSECURE = 11,      /**< 1 = do not verify the server's certificate or host name (for tests against self-signed servers; never in production); default 0. */
    SHEAF_OPT_ADAPTIVE_WINDOW = 12,   /**< 1 = the window adapts to the server (default), and what it learns is kept for the client's next lists to that origin: it grows while latency holds, up to SHEAF_OPT_MAX_WINDOW; shrinks when latency rises (not below where it started) and on 429, 503, 504 or a timeout (down to 1). 0 = it stays at SHEAF_OPT_WINDOW. Either way Retry-After and rate-limit headers (RateLimit, X-RateLimit-Remaining/-Reset) hold new requests back. */
    SHEAF_OPT_MAX_WINDOW = 13,        /**< The most requests an adaptive window lets in flight to one origin, 1..64; default 64 (a lower value caps the starting window too). */
    SHEAF_OPT_HTTP_VERSION = 14,      /**< Which HTTP the libcurl transport speaks, a sheaf_http_version; default SHEAF_HTTP_AUTO. Custom transports choose their own. */
    SHEAF_OPT_MAX_WAIT_MS = 15        /**< The longest, in ms (>= 0), a request waits for a spent rate limit to reset; default 60000. The client reads every answer's rate-limit headers into one budget per origin that its lists, groups, requests and downloads share: it never has more requests in flight than the server said are left, and when none are, a request waits for the reset when it is at most this far off, else fails with SHEAF_E_RATE_LIMITED before it is sent. 0: never waits. */
} sheaf_option;

/** Values of SHEAF_OPT_HTTP_VERSION. Append-only. */
typedef enum sheaf_http_version {
    SHEAF_HTTP_AUTO = 0,                 /**< HTTP/2 where TLS negotiates it (ALPN), else HTTP/1.1. Requests started together wait for the origin's first connection and share it when it speaks HTTP/2: a list's whole window then goes over one connection. */
    SHEAF_HTTP_1_1 = 1,                  /**< HTTP/1.1 only: one connection per request in flight. */
    SHEAF_HTTP_2_PRIOR_KNOWLEDGE = 2     /**< HTTP/2 on cleartext http:// too, without asking first (h2c by prior knowledge), for servers known to speak it; over https as SHEAF_HTTP_AUTO. */
} sheaf_http_version;

/**
 * Sets an integer option. Returns SHEAF_E_INVALID_ARGUMENT for an unknown option or a value out
 * of range. Thread-safe; affects lists started afterwards.
 */
SHEAF_API sheaf_result sheaf_client_set_option(sheaf_client *client, sheaf_option option,
                                               int64_t value);

/* ---- Watching a client: log records and events -------------------------------------------- */

/** How much a log record matters. A log hook gets the records up to the level it asks for. */
typedef enum sheaf_log_level {
    SHEAF_LOG_ERROR = 1,
    SHEAF_LOG_WARNING = 2,
    SHEAF_LOG_INFO = 3,      /**< One record per request, per retry, and per list's plan. */
    SHEAF_LOG_DEBUG = 4      /**< Also the redirects followed. */
} sheaf_log_level;

/** What a log record is about. Append-only. */
typedef enum sheaf_log_kind {
    SHEAF_LOG_REQUEST = 1,   /**< One attempt at the transport and its answer or failure. */
    SHEAF_LOG_RETRY = 2,     /**< A transient failure, tried again after delay_ms. */
    SHEAF_LOG_REDIRECT = 3,  /**< A redirect followed. */
    SHEAF_LOG_PLAN = 4,      /**< How a list is fetched: parallel, speculative or sequential, and why. */
    SHEAF_LOG_WINDOW = 5     /**< A list's window changed (SHEAF_LOG_INFO when a server's refusal shrank it, SHEAF_LOG_DEBUG otherwise). */
} sheaf_log_kind;

/** The version of sheaf_log_record this header describes; fields are only ever appended. */
#define SHEAF_LOG_RECORD_VERSION 1

/**
 * One log record, borrowed for the duration of the log callback (copy what you keep). No field
 * ever holds a credential, a cookie or a secret query value: URLs and messages are redacted.
 * Read `version` first: a library newer than this header may append fields, never reorder them.
 */
typedef struct sheaf_log_record {
    unsigned int version;     /**< SHEAF_LOG_RECORD_VERSION of the library that made it (>= 1). */
    sheaf_log_level level;
    sheaf_log_kind kind;
    const char *message;      /**< The whole record as one line of English. Never NULL. */
    const char *method;       /**< The request's method, or NULL (a plan). */
    const char *url;          /**< The URL the record is about, or NULL. */
    int http_status;          /**< The answer's status; 0 when there was none. */
    int attempt;              /**< The attempt at this URL, from 1; 0 when not about an attempt. */
    int64_t duration_ms;      /**< How long the attempt took; -1 when not about an attempt. */
    int64_t bytes;            /**< The answer's body bytes; -1 when not about an answer. */
    int64_t delay_ms;         /**< The wait before a retry; -1 otherwise. */
} sheaf_log_record;

/** A log hook. `record` and its strings are borrowed for the call. */
typedef void (*sheaf_log_fn)(const sheaf_log_record *record, void *user_data);

/**
 * Sends the client's log records up to `level` to `on_log` (NULL: no log, the default; nothing
 * is then formatted at all). Records come on a library thread, one at a time per client, in the
 * order things happened, never after sheaf_client_free returns (it drops those still queued:
 * see sheaf_client_free). Lists and requests started from
 * now on use it. `destroy` (may be NULL) is called with `user_data` once nothing needs it (after
 * the client and every list and request started with this hook are freed); a refused call never
 * calls it (user_data stays the caller's).
 * Returns SHEAF_E_INVALID_ARGUMENT for a level outside SHEAF_LOG_ERROR..SHEAF_LOG_DEBUG.
 */
SHEAF_API sheaf_result sheaf_client_set_log(sheaf_client *client, sheaf_log_level level, sheaf_log_fn on_log,
                                            void *user_data, sheaf_destroy_fn destroy);

/** What happened that a caller may act on. Append-only. */
typedef enum sheaf_event_kind {
    SHEAF_EVENT_AUTH_REFUSED = 1,       /**< A final 401 or 403: a good time to ask for a new credential. */
    SHEAF_EVENT_OFFLINE = 2,            /**< The host did not resolve, or refused the connection on the last attempt. */
    SHEAF_EVENT_SERVER_UNAVAILABLE = 3, /**< A 5xx, or no answer in time, on the last attempt. */
    SHEAF_EVENT_RATE_LIMITED = 4,       /**< A 429 (or a 503 with Retry-After); wait_ms is the wait chosen, -1 when no attempt is left. */
    SHEAF_EVENT_RETRYING = 5            /**< A transient failure; the next attempt follows after wait_ms. */
} sheaf_event_kind;

/** The version of sheaf_event this header describes; fields are only ever appended. */
#define SHEAF_EVENT_VERSION 1

/** One event, borrowed for the duration of the event callback. Redacted like log records. */
typedef struct sheaf_event {
    unsigned int version;     /**< SHEAF_EVENT_VERSION of the library that made it (>= 1). */
    sheaf_event_kind kind;
    const char *message;      /**< One line of English. Never NULL. */
    const char *method;       /**< The request's method. Never NULL. */
    const char *url;          /**< The request's URL. Never NULL. */
    int http_status;          /**< The answer's status; 0 for a failure below HTTP. */
    int transport_error;      /**< A sheaf_transport_error for a failure below HTTP; -1 when the server answered. */
    int attempt;              /**< The attempt the event is about, from 1. */
    int64_t wait_ms;          /**< The wait before the next attempt; -1 when there is none. */
} sheaf_event;

/** An event hook. `event` and its strings are borrowed for the call. */
typedef void (*sheaf_event_fn)(const sheaf_event *event, void *user_data);

/**
 * Sends the client's events to `on_event` (NULL: none, the default), on the same thread and with
 * the same guarantees as the log hook (in order with the log records, never two hooks at once
 * for one client, never after sheaf_client_free returns). `destroy` as for sheaf_client_set_log
 * (a refused call never calls it).
 */
SHEAF_API sheaf_result sheaf_client_set_event_handler(sheaf_client *client, sheaf_event_fn on_event,
                                                      void *user_data, sheaf_destroy_fn destroy);

/* ---- Describing a list ------------------------------------------------------------------ */

/**
 * Creates a list of `client` at `path` (copied; may carry a query). An absolute http(s) URL is
 * used as it is; any other path is joined to the base URL's path, with or without a leading "/"
 * ("https://h/api" + "items" and + "/items" both give "https://h/api/items": a base URL is a
 * prefix), "." and ".." segments resolved; the base URL's own query comes first. Next links a
 * server sends are resolved against the page's URL (RFC 3986). Undescribed, the list is
 * detected from its first page. The list keeps the client alive. *out_list is freed with
 * sheaf_list_free; NULL on failure.
 */
SHEAF_API sheaf_result sheaf_list_new(sheaf_list **out_list, sheaf_client *client, const char *path);

/**
 * Frees a list. If it is running it is cancelled first: in-flight requests are abandoned and no
 * snapshot callback runs after this returns. NULL is a no-op. Called from inside the list's own
 * snapshot callback it cancels, and the release happens when the callback returns.
 */
SHEAF_API void sheaf_list_free(sheaf_list *list);

/**
 * The error of the list's outcome once it has ended in a failure (after sheaf_list_wait,
 * sheaf_list_fetch_all or the end of a pulled list); before that, of its last call if that call
 * failed. A new copy freed with sheaf_error_free; NULL when there is none.
 */
SHEAF_API sheaf_error *sheaf_list_error(const sheaf_list *list);

/** Adds a query parameter to every page request (name and value are copied, then encoded). */
SHEAF_API sheaf_result sheaf_list_add_query(sheaf_list *list, const char *name, const char *value);

/**
 * Adds a header (copied) to every page request, replacing the client's of the same name;
 * checked as sheaf_client_add_header checks it.
 */
SHEAF_API sheaf_result sheaf_list_add_header(sheaf_list *list, const char *name, const char *value);

/**
 * Asks for every page with `method` (an HTTP method token: "POST", "QUERY", "SEARCH"…; not
 * HEAD or CONNECT) and a body: `length` bytes at `body` (copied; may be NULL when length is 0),
 * sent with "Content-Type: <content_type>" (NULL: "application/json"). A list behind a POST:
 * Notion's database query, Elasticsearch's _search, a GraphQL connection. Set before the list
 * starts, as its description is; "GET" with length 0 undoes it.
 *
 * Paging parameters named "body:" and a JSON pointer (the notion preset's "body:/start_cursor",
 * a description's "graphql" object) are set in the body, page by page: the body must then be a
 * JSON object (an empty body is {}), or the list fails at its start with
 * SHEAF_E_INVALID_ARGUMENT. A cursor keeps its JSON type there (a string, a number, an array of
 * sort values). Without a body, such a parameter goes in the query under its field's name.
 *
 * A POST is not idempotent: a failed page is sent again (retries, rate limits) only when the
 * description says the endpoint only reads ("read_only": true, which the notion and
 * elasticsearch presets set), for a GraphQL query (never a mutation), or for GET, QUERY and
 * SEARCH. Otherwise the first transient failure fails the list. Pages of a POST are never cached.
 * The body is never part of a message, a log record, a resume token or a description.
 */
SHEAF_API sheaf_result sheaf_list_set_body(sheaf_list *list, const char *method, const char *content_type,
                                           const void *body, size_t length);

/** How the pages of a list are reached. Append-only. */
typedef enum sheaf_paging {
    SHEAF_PAGING_DETECT = 0,      /**< The default: from the first page's signals (a next link naming page 2 or an offset makes pages addressable); a first page that promises more and names no next page is probed: page=2, _page=2, p=2, offset=N, skip=N (N: its items), one request each, the first answer of new items deciding. */
    SHEAF_PAGING_SINGLE = 1,      /**< One response; nothing is followed and nothing is checked. */
    SHEAF_PAGING_NEXT = 2,        /**< Follow the next signal (a link, or a cursor) page by page; never address pages. */
    SHEAF_PAGING_PAGE_NUMBER = 3, /**< Page k is ?param=first+k. */
    SHEAF_PAGING_OFFSET = 4,      /**< Page k is ?param=first+k*served, `served` being the page size the server returned. */
    SHEAF_PAGING_CURSOR = 5       /**< The next page is ?param=<cursor>, the cursor read from each page (SHEAF_SIGNAL_CURSOR). */
} sheaf_paging;

/**
 * Sets how pages are reached. `param` names the query parameter of PAGE_NUMBER, OFFSET and
 * CURSOR (required there, ignored otherwise; brackets allowed: "page[number]"). `first` is the
 * first page number or offset (>= 0; ignored for other kinds). When `size_param` is non-NULL,
 * `size` (>= 1) is sent with it on every request (PAGE_NUMBER, OFFSET and CURSOR; refused with
 * the others: a next link names its own page size); the size used for
 * planning is the count the server actually returned. A parameter already in the list's path is
 * replaced, never duplicated.
 *
 * C only: one part of the description, typed for C; the bindings give the whole description as
 * JSON (sheaf_list_set_description).
 */
SHEAF_API sheaf_result sheaf_list_set_paging(sheaf_list *list, sheaf_paging paging, const char *param,
                                             int64_t first, const char *size_param, int64_t size);

/** What a list reads from each page. Append-only. */
typedef enum sheaf_signal {
    SHEAF_SIGNAL_ITEMS = 1,       /**< The items array. Sources: BODY ("" when the body is the array). */
    SHEAF_SIGNAL_NEXT = 2,        /**< The next page: a URL (absolute or relative to the page) or, from a header, a page number (GitLab's X-Next-Page); null, "" or absent at the end. Sources: BODY, HEADER, LINK. */
    SHEAF_SIGNAL_CURSOR = 3,      /**< The cursor sent back in the CURSOR paging parameter; "" or absent at the end. Sources: BODY, HEADER, LAST_ITEM (Stripe: the last item's "/id", while HAS_MORE). */
    SHEAF_SIGNAL_TOTAL = 4,       /**< The total item count. Sources: BODY, HEADER (a count, or Content-Range "items 0-24/573"). */
    SHEAF_SIGNAL_PAGE_COUNT = 5,  /**< The number of pages. Sources: BODY, HEADER, LINK ("last": its page number or offset). */
    SHEAF_SIGNAL_HAS_MORE = 6,    /**< A boolean, true while more pages follow. Sources: BODY, HEADER. */
    SHEAF_SIGNAL_IS_LAST = 7,     /**< A boolean, true on the last page. Sources: BODY, HEADER. */
    SHEAF_SIGNAL_IDENTITY = 8     /**< An item's identity for de-duplication (first occurrence wins; a list that does not keep its items remembers the most recent 100,000 identities, so its memory stays bounded). Sources: ITEM. */
} sheaf_signal;

/** Where a signal is read. Append-only. */
typedef enum sheaf_source {
    SHEAF_SOURCE_NONE = 0,        /**< The list has no such signal: it is neither read nor detected. */
    SHEAF_SOURCE_DETECT = 1,      /**< The default for every signal but IDENTITY: detected from the first page. */
    SHEAF_SOURCE_BODY = 2,        /**< `where` is an RFC 6901 JSON pointer into the page body. */
    SHEAF_SOURCE_HEADER = 3,      /**< `where` is a response header name (case-insensitive). */
    SHEAF_SOURCE_LINK = 4,        /**< `where` is a relation type of the Link header (RFC 8288), e.g. "next". */
    SHEAF_SOURCE_ITEM = 5,        /**< `where` is a JSON pointer inside each item ("/id"). */
    SHEAF_SOURCE_LAST_ITEM = 6    /**< `where` is a JSON pointer inside the page's last item. */
} sheaf_source;

/**
 * Reads `signal` from `source` at `where` (copied; ignored for NONE and DETECT). A pair the
 * signal cannot come from, or a malformed pointer or name, is refused with
 * SHEAF_E_INVALID_ARGUMENT when set.
 *
 * C only: one part of the description, typed for C; the bindings give the whole description as
 * JSON (sheaf_list_set_description).
 */
SHEAF_API sheaf_result sheaf_list_set_signal(sheaf_list *list, sheaf_signal signal, sheaf_source source,
                                             const char *where);

/** How many presets the library knows. */
SHEAF_API size_t sheaf_preset_count(void);

/** The name of preset `index` ("github", "stripe", ...); NULL when out of range. Static: do not free. */
SHEAF_API const char *sheaf_preset_name(size_t index);

/**
 * What preset `name` pins, as a JSON object in the form sheaf_list_description uses, plus a
 * "summary" sentence. On success *out_json is freed with sheaf_free; SHEAF_E_INVALID_ARGUMENT
 * for an unknown name (the message lists the known ones).
 *
 * C only: for a tool that shows what a preset pins (Python's Description and its command line
 * use it; Go and Rust name the preset).
 */
SHEAF_API sheaf_result sheaf_preset_description(const char *name, char **out_json, size_t *out_length);

/**
 * Pins the paging and the signals of preset `name`; calls made afterwards override single
 * parts. SHEAF_E_INVALID_ARGUMENT for an unknown name (the message lists the known ones).
 */
SHEAF_API sheaf_result sheaf_list_use_preset(sheaf_list *list, const char *name);

/**
 * The list's description as a JSON object: before the first page, what is pinned (detected parts
 * as "detect"); once the first page has been read, what the run uses, detected parts resolved
 * and marked, and the plan chosen ("parallel", "speculative", "sequential", "single", "split"). Keys:
 * "paging" {"kind", "param", "first", "size_param", "size", "detected"}, "signals" {name:
 * {"source", "where", "detected"} or null}, "plan", "preset", and "summary" when a preset is
 * named (its sentence); "until" and "since" when the list syncs (see sheaf_list_set_description),
 * with the output-only "sync_state": {"list": the redacted URL of the first page, before any since
 * parameter (the key to store the state under; no credential or secret query value), "field": the
 * JSON pointer, "value": the greatest value of the field among the items the caller has seen
 * (delivered to the callback, taken with sheaf_list_next), or the bound or since value the run
 * started from when no new item arrived (null when there was none), and, when the list has an
 * identity signal, "seen": the identities of those items at "value"}. Store "value" and "seen"
 * after a SHEAF_OK run and give them as the next run's "until" or "since" (see "seen" below). "split" when the list
 * has a range filter (a cursor list's: {"field", "lower", "upper" each {"param", "inclusive"},
 * "order", "kind"}; the stripe, slack and shopify presets carry one), with the output-only
 * "split_plan" once page one is in: "split on /created into 64 pieces", or why the list is walked
 * as one piece (page one not in the field's order, a server that ignores the filter, a failed
 * probe of it). A split list is read as pieces of the range side by side, each by its own cursor,
 * each item once, in the list's order; its resume token goes on inside the piece it stopped in.
 * sheaf_list_set_description takes it back. On success *out_json is freed with sheaf_free.
 * Non-blocking; callable from the list's snapshot callback.
 */
SHEAF_API sheaf_result sheaf_list_description(sheaf_list *list, char **out_json, size_t *out_length);

/**
 * The URL of the list's first page as the list sends it (its path joined to the client's base
 * URL, with its query and the first page's paging parameters; a partition's, the first of its
 * range), with no credential: userinfo and secret query values redacted as in messages, so it
 * can be logged or stored. For a fan-out's child (sheaf_group_list), the URL its template made.
 * SHEAF_E_INVALID_ARGUMENT for a NULL out_url, or when the description makes no URL on the
 * list's client. On success *out_url is freed with sheaf_free. Non-blocking; callable from the
 * list's snapshot callback.
 */
SHEAF_API sheaf_result sheaf_list_url(sheaf_list *list, char **out_url);

/**
 * Describes the list at once from a description in its JSON form: exactly what
 * sheaf_list_description and sheaf_preset_description print (a preset is a description), or any
 * part of it. The one vocabulary of a description: the setters above, Python's sheaf.Description
 * and the sheaf command line's flags are spellings of it, validated here (the published schema is
 * include/sheaf/description.schema.json).
 *
 * Fields read: "preset" (a known preset's name, or null), "paging" {"kind": "detect" | "single" |
 * "next" | "page_number" | "offset" | "cursor", "param", "first", "size_param", "size"} and
 * "signals" {"items" | "next" | "cursor" | "total" | "page_count" | "has_more" | "is_last" |
 * "identity": {"source": "detect" | "body" | "header" | "link" | "item" | "last_item", "where"},
 * or null for a signal the list does not have}, "until" {"pointer", "value"} and "since" {"param",
 * "pointer", "value"}. The paging, the signals, the preset, "until" and "since" are replaced
 * as a whole: what the description does not name is the named preset's, or left to detection (as
 * for an undescribed list; the identity: none). A "paging" without "kind" changes only the parts
 * it names (the preset's page size, say); with "kind" it is the parts it names alone. Numbers are
 * whole, 0 to 2^53. The path, query, headers, budgets and resume token are not part of it.
 *
 * Incremental sync. "until" is a bound on a newest-first list: the list ends SHEAF_OK with
 * SHEAF_STOP_BOUND at the first item (in list order) whose value at "pointer" (inside each item) is
 * at or below "value"; that item and every one after it are not delivered, pages in flight past it
 * are abandoned and none after it is requested. "since" is a server-side filter: the first page
 * request carries "param"="value" (omitted while "value" is null, a first run). Values compare as
 * numbers when both are JSON numbers (exactly, whatever their size: ids past 2^53 included), else
 * as strings by code point (ISO-8601 timestamps of one format compare correctly). An item whose
 * field is missing, null, a boolean, an object or an array is not at the bound: the list goes on.
 * Both may be given; they then name the same field. The state to store is printed as "sync_state"
 * by sheaf_list_description. Either may carry "seen": [identities], the identities of the items
 * an earlier run delivered at "value" (its sync_state's "seen"; an identity signal is needed):
 * with it a bound ends the list only at an item below its value, an item at the value is left
 * out when seen and delivered when not (one added later in the same second), and a since filter
 * (taken to include its value, as created[gte] and GitHub's since do) leaves out the seen items
 * at its value and every item below it (a server that ignores the filter), so that a field that
 * ties is synced with each item once. sheaf_list_poll (experimental) is that loop.
 *
 * Output-only fields ("detected" in "paging" and in each signal, "plan", "summary") are accepted
 * and ignored when they hold what the library prints there ("detected": a boolean; "plan": null
 * or a plan's name; "summary": the named preset's own sentence); anything else in them is refused.
 * Refusing them would refuse what this library prints (a preset's "summary", a run's "detected"),
 * and ignoring any value would let a typo pass; so a description printed by a run (detected parts
 * resolved) is set again as it is and pins what was detected, and for every description x the
 * library prints before a run (every preset's among them), sheaf_list_description after
 * sheaf_list_set_description(x) prints x again (compared as parsed JSON).
 *
 * `json` is copied (UTF-8, NUL-terminated). Unknown fields, a field given twice, a wrong type, a
 * number out of range, an unknown preset or kind, or a source a signal cannot come from are
 * refused with SHEAF_E_INVALID_ARGUMENT, the message naming the field as a JSON pointer and what
 * it allows ("the description's /paging/first: must be a whole number of 0 or more, not -1");
 * the list is then unchanged. SHEAF_E_STATE once the list has
 * started. The setters called afterwards override single parts. A list is used by one thread at
 * a time (see "Thread safety").
 *
 *     sheaf_list_set_description(list,
 *         "{\"paging\": {\"kind\": \"offset\", \"param\": \"offset\", \"size_param\": \"limit\", \"size\": 50},"
 *         " \"signals\": {\"items\": {\"source\": \"body\", \"where\": \"/results\"},"
 *         " \"total\": {\"source\": \"header\", \"where\": \"X-Total-Count\"}, \"next\": null}}");
 *     sheaf_list_set_description(list, "{\"preset\": \"github\", \"paging\": {\"size\": 100}}");
 */
SHEAF_API sheaf_result sheaf_list_set_description(sheaf_list *list, const char *json);

/**
 * Stops the list after `max_items` items (0 = no limit), with SHEAF_OK and SHEAF_STOP_ITEM_LIMIT; the same as
 * sheaf_list_set_budget(list, SHEAF_BUDGET_ITEMS, max_items).
 * SHEAF_E_INVALID_ARGUMENT for a negative value.
 *
 * C only: a shorthand of sheaf_list_set_budget(list, SHEAF_BUDGET_ITEMS, max_items), which the
 * bindings call.
 */
SHEAF_API sheaf_result sheaf_list_set_max_items(sheaf_list *list, int64_t max_items);

/** What a list may spend before it stops. Append-only. */
typedef enum sheaf_budget {
    SHEAF_BUDGET_ITEMS = 1,       /**< Items delivered; ends SHEAF_OK with SHEAF_STOP_ITEM_LIMIT (a page may be cut: resuming goes on inside it). */
    SHEAF_BUDGET_PAGES = 2,       /**< Pages fetched; ends SHEAF_OK with SHEAF_STOP_PAGE_BUDGET when more pages follow. */
    SHEAF_BUDGET_REQUESTS = 3,    /**< Requests sent, retries and redirects included; ends SHEAF_OK with SHEAF_STOP_REQUEST_BUDGET, the prefix through the last page that arrived whole. */
    SHEAF_BUDGET_DEADLINE_MS = 4  /**< Milliseconds from sheaf_list_start to the end, whatever is in flight; ends with SHEAF_E_DEADLINE. */
} sheaf_budget;

/**
 * Sets one budget of the list (0 = none, the default) before it starts; each ends the list with
 * its own result and leaves a resume token that goes on from there. The client's page cap
 * (SHEAF_OPT_MAX_PAGES) still applies, as a failure. SHEAF_E_INVALID_ARGUMENT for a negative
 * value or an unknown budget; SHEAF_E_STATE once the list has started.
 */
SHEAF_API sheaf_result sheaf_list_set_budget(sheaf_list *list, sheaf_budget budget, int64_t value);

/**
 * Makes the list go on where the run that made `token` (sheaf_list_resume_token) stopped: from
 * the page it had not delivered, inside it when an item limit cut it, reading pages as that run
 * read them (nothing is detected again). The list must be described as the one that made the
 * token (the same client base URL, path, query and description; budgets may differ): start and
 * fetch-all refuse another list's token with SHEAF_E_INVALID_ARGUMENT. Items are de-duplicated
 * within one run only; a total the server reports is checked against every run's items together.
 * `token` is copied; NULL removes it. SHEAF_E_INVALID_ARGUMENT for text that is not a token of
 * this version, or with a number outside 0 to 2^53.
 *
 * A token is not signed (it outlives the process and holds no credential), so it is treated as
 * input: start and fetch-all refuse with SHEAF_E_INVALID_ARGUMENT a token whose page is not on
 * the list's origin (scheme, host, port) or not on the list's path (the path of its first URL,
 * a trailing "/" aside). The credential and secret query values go only to that origin and path.
 * A page the server linked on another path of the origin resumes on the list's own path with the
 * page number, offset or cursor the token holds; a list walked by next links alone cannot resume
 * from such a page. The query within the path is not bound. The token of a list refused on a
 * next link to another origin (SHEAF_E_CROSS_ORIGIN) points there: given back, alone or in a
 * group (where the other lists run), that list fails again at its start with
 * SHEAF_E_INVALID_ARGUMENT, sending nothing, and keeps the token.
 */
SHEAF_API sheaf_result sheaf_list_set_resume(sheaf_list *list, const char *token);

/**
 * The resume token after the prefix delivered so far (on a pulled list: through the last
 * snapshot taken): a printable ASCII string of the form "sheaf-resume-1.<base64url>", holding the
 * description the run used and the next page's URL, never a credential (secret query values
 * are left out and sent again by the resumed list). *out_token is set to a new string freed with
 * sheaf_free, or to NULL when nothing is left to resume (the list completed, or the prefix ends
 * where the list does). Callable at any time, from a snapshot callback too; before the list
 * starts it resumes from the start. Every outcome but completion (a limit or budget reached,
 * stopped, cancelled, failed, past its deadline) leaves one.
 */
SHEAF_API sheaf_result sheaf_list_resume_token(sheaf_list *list, char **out_token);

/**
 * Splits the list into up to `n` partitions, for several processes (or machines) to read it, of
 * which at most `at_once` run at the same time (an engine's task slots, the workers of a queue;
 * `at_once` >= n: all of them): on a list not started, reads its page one (blocking, as a fetch
 * of one page: the list's client, transport, headers and deadline; page one is read here once
 * and its items are not carried, partition 0 fetches it again) and sets *out_json to a JSON
 * array of partitions, one line, a new string freed with sheaf_free (*out_length, may be NULL,
 * its length). The list itself stays unstarted: it may be run afterwards, or set to one of its
 * partitions.
 *
 * Each partition is a self-contained JSON object that any process runs on a client of its own
 * (sheaf_list_set_partition), getting exactly that range's items in order; together the
 * partitions cover the list exactly once. Fields: "sheaf_partition" (the version, 1), "index"
 * (from 0) and "count" (the partitions of the plan), "url" (the list's first URL, without any
 * credential and without the values of secret query parameters: the API key's, the client's
 * secret ones and the usual names, as a resume token leaves them out), "first_page" (the range's
 * first page, counted from 0) and "pages" (its pages as planned), "open_ended" (true for the
 * last partition alone: it goes on to the list's end whatever that is then, so pages added
 * since the plan are read too), "page_size" (the size page one was served), "items_expected"
 * (the range's items from the server's total, or null when unknown), "window" (the most
 * requests its run has in flight: the planning client's SHEAF_OPT_MAX_WINDOW shared out evenly
 * among min(n, at_once) partitions, at least 1, so that the partitions running together never
 * send more at once than one process would: eight partitions read two at a time by two workers
 * have half the window each, not an eighth), "why" (null, or why the list was not split) and
 * "description" (the description as sheaf_list_description prints it, detected parts resolved:
 * nothing is detected again). The caller keeps the promise: more partitions running at once
 * than `at_once` send more than one process would.
 *
 * A list splits when its pages are addressed (page numbers or offsets) and page one tells how
 * many there are (a total, a page count, or a Link rel="last"): into min(n, pages) contiguous
 * ranges as even as can be. Any other list (next links or cursors, where a page cannot be
 * reached without the one before it; no count known; one page) is ONE partition covering it
 * all, with "why" saying so.
 *
 * SHEAF_E_INVALID_ARGUMENT for `n` < 1, `at_once` < 1, a NULL out_json, or a list with a resume
 * token or a partition set; SHEAF_E_STATE once the list has started; SHEAF_E_REENTRANT from
 * inside a Sheaf callback; page one's failure as a fetch would report it (detail:
 * sheaf_list_error). Used by one thread at a time, as any call on a list.
 */
SHEAF_API sheaf_result sheaf_list_partitions_at_once(sheaf_list *list, int64_t n, int64_t at_once,
                                                     char **out_json, size_t *out_length);

/**
 * Before the list starts, sets it to run exactly the partition `json` (one element of what
 * sheaf_list_partitions_at_once printed, copied): the partition's URL and description replace
 * the list's path, query, paging and signals. Any way of running it (sheaf_list_fetch_all, sheaf_list_start,
 * _start_pull, _start_write, _start_write_fd) then delivers that range's items in order and ends
 * SHEAF_OK with SHEAF_STOP_COMPLETE when the range is done (the last, open-ended partition: when
 * the list ends, its items checked against the server's total). The list's own client supplies
 * the credential and the secret query values (those of the list's path and query, and of the
 * base URL); the partition never carries them. Budgets set on the list still apply (a page budget
 * smaller than the range stops it with SHEAF_STOP_PAGE_BUDGET).
 *
 * A partition's resume token (sheaf_list_resume_token) goes on inside its range: set it with
 * sheaf_list_set_resume on a list set to the same partition; a token whose page lies outside the
 * range is refused by start and fetch-all with SHEAF_E_INVALID_ARGUMENT.
 *
 * SHEAF_E_INVALID_ARGUMENT for text that is not a partition of this version (the message names
 * the field as a JSON pointer: "the partition's /first_page: must be a whole number ..."; another
 * "sheaf_partition" version is refused at that field), and, at start or fetch-all, for a
 * partition whose URL is not on the client's base URL origin (as a resume token's page is
 * refused); SHEAF_E_STATE once the list has started. Not thread-safe for one list (see "Thread
 * safety").
 */
SHEAF_API sheaf_result sheaf_list_set_partition(sheaf_list *list, const char *json);

/**
 * Whether the list keeps every delivered item (non-zero, the default) so that sheaf_list_prefix
 * works. Streaming callers that consume each delta set 0: memory then stays bounded by the
 * window, not the list, and sheaf_list_prefix returns SHEAF_E_STATE. sheaf_list_fetch_all always
 * keeps items.
 */
SHEAF_API sheaf_result sheaf_list_set_keep_items(sheaf_list *list, int keep);

/* ---- Running a list --------------------------------------------------------------------- */

/*
 * How the ways of running a list are built. Each runs the list once on the same engine (one
 * planner, one window, one assembler of the ordered prefix; the same budgets, resume tokens and
 * back-pressure rule: no new request while a window of pages waits unconsumed); what differs is
 * what consumes its snapshots. Two forms are primitive, and neither is built on the other:
 *
 *   sheaf_list_start           each snapshot goes to a callback, on a library thread;
 *   sheaf_list_start_pull      the snapshots wait in a queue that the caller takes from with
 *                              sheaf_list_next, on its own thread.
 *
 * The others are compositions of the first, as sqlite3_exec is of sqlite3_prepare, _step and
 * _finalize:
 *
 *   sheaf_list_fetch_all       sheaf_list_start with no callback and the items kept (whatever
 *                              sheaf_list_set_keep_items said), sheaf_list_wait, then
 *                              sheaf_list_prefix: one blocking call.
 *   sheaf_list_start_write     sheaf_list_start with a callback that writes each snapshot's
 *                              delta as `format` says (the items not kept), and the output's
 *                              closing bytes written before sheaf_list_wait has the outcome.
 *   sheaf_list_start_write_fd  sheaf_list_start_write with a write function that writes to `fd`.
 *
 * None of them is built on the pull API today. Each could be written with it, with the same
 * items in the same order (fetch-all: sheaf_list_start_pull, sheaf_list_next until the end, the
 * deltas' items joined, then sheaf_list_wait), but the library's own consume the run directly:
 * fetch-all reads the prefix once the run has ended, with no queue of snapshots, and the writers
 * write on the run's delivery thread. Load-more (the next section) is neither form: a run held at
 * a page gate that each sheaf_list_more raises by one page (a new run after sheaf_list_reset),
 * its snapshots, a page each, kept for sheaf_list_more to hand out. A group runs each of its
 * lists with the group as their consumer, and hands their deltas out by a callback
 * (sheaf_group_start) or a queue (sheaf_group_start_pull), as a list does.
 */

/** What one snapshot added. Library-owned and read-only; check `version` before reading fields. */
typedef struct sheaf_snapshot {
    unsigned int version;        /**< SHEAF_SNAPSHOT_VERSION of the library that filled it. */
    const char *delta_json;      /**< The items this snapshot added, as a JSON array (borrowed). */
    size_t delta_length;         /**< Bytes in delta_json, not counting its terminating NUL. */
    size_t delta_items;          /**< Items in delta_json. */
    size_t items;                /**< Items in the prefix so far, after de-duplication. */
    size_t pages;                /**< Pages in the prefix so far. */
    int64_t expected_items;      /**< The server's total, or -1 when unknown. */
    int64_t expected_pages;      /**< Pages the plan expects, or -1 when unknown. */
} sheaf_snapshot;

#define SHEAF_SNAPSHOT_VERSION 1

/**
 * Called once per snapshot, in order, never two at once for one list, on a library thread, never
 * after the list finished or was freed. Everything `snapshot` points to is borrowed for the call.
 * `list` may be passed to non-blocking calls (sheaf_list_prefix, sheaf_list_cancel).
 * Return 0 to go on; non-zero stops the list with SHEAF_E_STOPPED and cancels what is in flight.
 */
typedef int (*sheaf_snapshot_fn)(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data);

/**
 * Starts the list in the background; returns at once. `on_snapshot` may be NULL (then only
 * sheaf_list_wait and sheaf_list_prefix observe it). `user_data` is handed to every call;
 * `destroy` (may be NULL) is called with it once, after the last callback (when the list has
 * finished, or been freed). A callback slower than the server holds the fetching back, as a
 * pulled list's caller does (sheaf_list_start_pull). A list runs once: SHEAF_E_STATE otherwise.
 * A refused start never calls `destroy` (user_data stays the caller's).
 *
 * C only: a callback form; the bindings pull (sheaf_list_start_pull), so that no library thread
 * enters their runtime.
 */
SHEAF_API sheaf_result sheaf_list_start(sheaf_list *list, sheaf_snapshot_fn on_snapshot,
                                        void *user_data, sheaf_destroy_fn destroy);

/**
 * Starts the list in the background for pulling: instead of a callback on a library thread,
 * the caller takes the snapshots in order with sheaf_list_next, on its own thread (no foreign
 * thread ever enters the caller's code, which spares a language runtime such as Python a thread
 * hand-over per snapshot). Once a window's worth of pages (SHEAF_OPT_WINDOW) waits in snapshots
 * not yet taken, fetching is held back, so memory stays bounded however slow the caller is: at
 * most those pages, the pages in flight, and the pages that came ahead of a slow one (up to
 * twice the window; with SHEAF_OPT_ADAPTIVE_WINDOW, twice SHEAF_OPT_MAX_WINDOW).
 * A list runs once: SHEAF_E_STATE otherwise.
 */
SHEAF_API sheaf_result sheaf_list_start_pull(sheaf_list *list);

/**
 * For a list to be started with sheaf_list_start_pull: an event loop watches `fd` instead of a
 * thread waiting in sheaf_list_next. Each time sheaf_list_next gets something new to hand out
 * (a snapshot, or the end), the library writes 8 bytes to `fd`: a uint64_t 1, what an eventfd
 * adds to its counter. The reader then takes with sheaf_list_next(list, 0, ...) until
 * SHEAF_PENDING or the end; notifications may be coalesced or come spuriously, never missed.
 * For a list started otherwise (sheaf_list_start, sheaf_list_start_write, _write_fd), the library
 * writes after each snapshot delivered (the callback returned, the items written) and once when
 * the list has ended (sheaf_list_wait then returns at once): a waiter shows progress and sees the
 * end without polling sheaf_list_get_status.
 * An eventfd or a socket is written without blocking and, for a socket, without SIGPIPE
 * (MSG_DONTWAIT | MSG_NOSIGNAL); a pipe is written with write(2): make its write end O_NONBLOCK
 * (a full pipe then skips the write: its reader has a wake-up pending) and keep its read end
 * open as long as the list may write. `fd` stays the caller's: keep it open until
 * sheaf_list_free returns.
 * -1 (the default) turns notifying off. SHEAF_E_STATE once the list has started;
 * SHEAF_E_INVALID_ARGUMENT for a negative fd other than -1.
 *
 * C only: for an event loop written in C (Python's AsyncClient uses it; Go and Rust wait in
 * sheaf_list_next on a thread of their own).
 */
SHEAF_API sheaf_result sheaf_list_set_notify_fd(sheaf_list *list, int fd);

/**
 * Takes the next snapshot of a list started with sheaf_list_start_pull, waiting at most
 * `timeout_ms` milliseconds for one (0: do not wait; negative: wait until one comes or the
 * list ends). Returns:
 *   SHEAF_OK, *out_snapshot set   the next snapshot, in order. It belongs to the list and stays
 *                                 valid until the next sheaf_list_next or sheaf_list_free of it.
 *   SHEAF_OK, *out_snapshot NULL  the list has ended and every snapshot was taken;
 *                                 sheaf_list_wait then returns the outcome at once.
 *   SHEAF_PENDING                 no snapshot within the timeout; *out_snapshot NULL.
 *   SHEAF_E_STATE                 the list was not started with sheaf_list_start_pull.
 *   SHEAF_E_REENTRANT             called with a timeout from inside a Sheaf callback.
 * A list cancelled (sheaf_list_cancel, from any thread) ends after the snapshots already
 * waiting. Not thread-safe for one list: one thread takes its snapshots.
 */
SHEAF_API sheaf_result sheaf_list_next(sheaf_list *list, int64_t timeout_ms,
                                       const sheaf_snapshot **out_snapshot);

/**
 * Blocks until the started list has finished and every snapshot callback has returned, then
 * returns its outcome: SHEAF_OK (complete, or stopped at the caller's item limit or budget:
 * sheaf_list_get_status's stop_reason says which), SHEAF_E_STOPPED, SHEAF_E_CANCELLED or another
 * failure (detail: sheaf_list_error). Items delivered before a failure stay delivered.
 * On a pulled list it stops the pulling first: snapshots not taken yet are dropped and, if the
 * list still runs, it ends SHEAF_E_STOPPED (take snapshots until sheaf_list_next says the end
 * to get them all). From inside a callback: SHEAF_E_REENTRANT.
 */
SHEAF_API sheaf_result sheaf_list_wait(sheaf_list *list);

/**
 * Asks a running list to stop: in-flight requests are abandoned and the outcome becomes
 * SHEAF_E_CANCELLED. Non-blocking; callable from any thread and from callbacks. No-op when the
 * list is not running; SHEAF_E_INVALID_ARGUMENT for NULL.
 */
SHEAF_API sheaf_result sheaf_list_cancel(sheaf_list *list);

/**
 * Requests the list has sent so far, retries and redirects included (0 before it starts).
 *
 * C only: one field of sheaf_list_status without the struct; the bindings read the status.
 */
SHEAF_API int64_t sheaf_list_requests_made(const sheaf_list *list);

/**
 * Requests of the list waiting for an answer right now (for progress displays).
 *
 * C only: one field of sheaf_list_status without the struct; the bindings read the status.
 */
SHEAF_API int64_t sheaf_list_requests_in_flight(const sheaf_list *list);

/**
 * Copies the ordered prefix delivered so far (on a pulled list: through the last snapshot
 * sheaf_list_next returned) into a new JSON array string.
 * On success *out_json (freed with sheaf_free) and *out_length (may be NULL) are set.
 * Non-blocking: callable from the list's own snapshot callback.
 *
 * C only: the prefix for a caller that did not keep the deltas (a callback, a load-more view:
 * Python's pager uses it); the bindings keep the deltas they take.
 */
SHEAF_API sheaf_result sheaf_list_prefix(sheaf_list *list, char **out_json, size_t *out_length);

/**
 * Runs the list to its end and returns every item as one JSON array, in order and
 * de-duplicated. Blocks. Equivalent to start + wait + prefix. *out_json (freed with sheaf_free)
 * is set whenever any item arrived, even when the result is a failure (the items before it);
 * otherwise it is set to "[]". *out_length may be NULL. From inside a callback: SHEAF_E_REENTRANT.
 *
 * C only: a composition (start, wait, prefix; see above) for a C caller's one call; Python and
 * Go pull, and Rust calls it.
 */
SHEAF_API sheaf_result sheaf_list_fetch_all(sheaf_list *list, char **out_json, size_t *out_length);

/** How sheaf_list_start_write and sheaf_list_start_write_fd write a list's items. Values are never renumbered. */
typedef enum sheaf_format {
    SHEAF_FORMAT_JSON = 0,        /**< One JSON array, an item per line: "[\n", the items separated by ",\n", "\n]\n" ("[]\n" when empty). */
    SHEAF_FORMAT_JSON_LINES = 1   /**< JSON lines: each item, then "\n"; a line break inside an item (indented JSON) becomes a space. */
} sheaf_format;

/**
 * Receives a list's output, in order, on a library thread (never two calls at once for one
 * list; `bytes` is borrowed for the call and not NUL-terminated). Return 0 once the bytes are
 * written; non-zero stops the list with SHEAF_E_STOPPED.
 */
typedef int (*sheaf_write_fn)(const char *bytes, size_t length, void *user_data);

/**
 * Starts the list in the background, writing its items to `write` as they arrive, in order and
 * de-duplicated: the bytes the pages brought, never parsed twice, and not kept (sheaf_list_prefix
 * is then SHEAF_E_STATE; memory stays flat however long the list). A slow `write` holds the
 * fetching back. sheaf_list_wait returns once the output is complete (a JSON array closed, also
 * after a failure: what was written is well-formed, and the result says whether it is the whole
 * list) with the list's result; sheaf_list_get_status, sheaf_list_cancel and
 * sheaf_list_resume_token (the token after the items written) work as for any list. `destroy`
 * (may be NULL) is called with `user_data` once, after the last call. A list runs once:
 * SHEAF_E_STATE otherwise; an unknown format: SHEAF_E_INVALID_ARGUMENT. A refused start never
 * calls `destroy` (user_data stays the caller's).
 *
 * C only: a callback form of sheaf_list_start_write_fd, for output that is not a file.
 */
SHEAF_API sheaf_result sheaf_list_start_write(sheaf_list *list, sheaf_format format, sheaf_write_fn write,
                                              void *user_data, sheaf_destroy_fn destroy);

/**
 * As sheaf_list_start_write, to the file descriptor `fd` (a file, a pipe, a socket). `fd` stays
 * the caller's: it is not closed and must stay open until sheaf_list_wait returns. A write that
 * fails ends the list with SHEAF_E_IO and the system's reason (a full disk; a pipe whose reader
 * left, when the program ignores SIGPIPE: by default that signal ends the program, as it would
 * any tool writing to a closed pipe).
 *
 * C only: items to a file or pipe with no language runtime in between (Python's fetch_to uses
 * it; Go and Rust write what they pull).
 */
SHEAF_API sheaf_result sheaf_list_start_write_fd(sheaf_list *list, int fd, sheaf_format format);

/** Where a list stands (sheaf_list_get_status). Values are never renumbered; more may come. */
typedef enum sheaf_list_state {
    SHEAF_LIST_NEW = 0,      /**< Not started. */
    SHEAF_LIST_LOADING = 1,  /**< Fetching; for a load-more list, a page asked for is on its way. */
    SHEAF_LIST_IDLE = 2,     /**< A load-more list with every page asked for in: it waits for sheaf_list_more. */
    SHEAF_LIST_ENDED = 3     /**< Ended: sheaf_list_wait returns the outcome at once (a pulled list may still hold snapshots to take; a load-more list has handed out every page). */
} sheaf_list_state;

/** Why a list ended (sheaf_list_status.stop_reason). Values are never renumbered; more may come. */
typedef enum sheaf_stop_reason {
    SHEAF_STOP_NONE = 0,            /**< It has not ended. */
    SHEAF_STOP_COMPLETE = 1,        /**< Every page arrived and the items agree with the server's total (SHEAF_OK). */
    SHEAF_STOP_ITEM_LIMIT = 2,      /**< The caller's item limit (SHEAF_BUDGET_ITEMS) was reached (SHEAF_OK); the resume token goes on from there. */
    SHEAF_STOP_PAGE_BUDGET = 3,     /**< The caller's page budget (SHEAF_BUDGET_PAGES) was reached (SHEAF_OK); the resume token goes on from there. */
    SHEAF_STOP_REQUEST_BUDGET = 4,  /**< The caller's request budget (SHEAF_BUDGET_REQUESTS) was reached (SHEAF_OK); the resume token goes on from there. */
    SHEAF_STOP_FAILED = 5,          /**< It failed, was stopped or was cancelled: sheaf_list_wait's result and sheaf_list_error say how. */
    SHEAF_STOP_BOUND = 6,           /**< The list reached an item at or below its "until" bound (sheaf_list_set_description): what an earlier run saw (SHEAF_OK); that item and the ones after it were not delivered. */
    SHEAF_STOP_UNCONFIRMED = 7      /**< The list ended after one full page that nothing confirmed was its last (SHEAF_OK): its paging was detected, the page named no next page, cursor, total, page count or has-more, and it held a page size's worth of items (as many as its URL's per_page, limit, size, ... asks, or, asked none, 10, 20, 25, 30, 50, 100, 200, 250, 500 or 1000). Every item the server showed is in; a server that pages by a parameter the request did not name has more: describe the paging (sheaf_list_set_paging) to read them, or SHEAF_PAGING_SINGLE to say the list is one response. */
} sheaf_stop_reason;

/**
 * A list's progress, filled by sheaf_list_get_status. A versioned struct the caller allocates
 * (see "Versioned structs" at the top): set `version` to SHEAF_LIST_STATUS_VERSION.
 */
typedef struct sheaf_list_status {
    unsigned int version;        /**< Set by the caller to SHEAF_LIST_STATUS_VERSION; on return, the version filled. */
    sheaf_list_state state;
    int64_t items;               /**< Items delivered so far, after de-duplication (pulled: taken; load-more: handed out). */
    int64_t pages;               /**< Pages delivered so far, counted alike. */
    int64_t expected_items;      /**< The server's total as last delivered, or -1 when unknown. */
    int64_t expected_pages;      /**< Pages the plan expects, or -1 when unknown. */
    int64_t pages_ready;         /**< A load-more list: pages in but not handed out yet (fetched ahead); 0 otherwise. */
    int64_t requests_made;       /**< As sheaf_list_requests_made. */
    int64_t requests_in_flight;  /**< As sheaf_list_requests_in_flight. */
    int64_t window;              /**< Pages the list lets in flight now (see SHEAF_OPT_ADAPTIVE_WINDOW); 0 before it starts. */
    sheaf_stop_reason stop_reason; /**< Why it ended, once state is SHEAF_LIST_ENDED; SHEAF_STOP_NONE before. */
    int64_t requests_revalidated; /**< Version 2. Of requests_made, those answered 304 Not Modified and served from the response cache (sheaf_client_set_cache). */
    int64_t quota_remaining;     /**< What the server's rate limit at the list's origin has left, as its last answer said less the requests sent since; -1 when no answer said, or its reset has passed. */
    int64_t quota_reset_ms;      /**< Milliseconds until that limit resets; -1 as for quota_remaining. */
} sheaf_list_status;

#define SHEAF_LIST_STATUS_VERSION 2

/**
 * Fills *out_status (its `version` set by the caller) with where the list stands: the fields of
 * the lower of the caller's version and the library's, which it writes back to `version`.
 * Non-blocking and thread-safe: callable from any thread and from callbacks, at any time.
 * SHEAF_E_INVALID_ARGUMENT for NULL or a `version` of 0.
 */
SHEAF_API sheaf_result sheaf_list_get_status(sheaf_list *list, sheaf_list_status *out_status);

/* ---- Loading more: a list page by page, as its caller asks ------------------------------ */

/**
 * Starts the list in load-more mode, the way an infinite-scroll view loads a list: nothing is
 * fetched until sheaf_list_more asks, and each call asks for one page more. `look_ahead` pages
 * (0 to the window, SHEAF_OPT_WINDOW) are fetched ahead of the ones asked for and held back
 * until asked, so that the next sheaf_list_more returns at once. Everything the list's
 * description says applies as to any run: paging, signals (detected from the first page),
 * budgets, a resume token. SHEAF_E_INVALID_ARGUMENT for a look-ahead out of range; SHEAF_E_STATE
 * for a list already started.
 * On a load-more list, sheaf_list_prefix, sheaf_list_resume_token and sheaf_list_get_status
 * speak of the pages handed out; sheaf_list_cancel ends it (sheaf_list_reset brings it back);
 * sheaf_list_wait returns the outcome once sheaf_list_more has reached the end, and
 * SHEAF_E_STATE before (only sheaf_list_more moves the list on).
 *
 * C only: a view's load-more on the caller's thread (Python's pager uses it; Go and Rust pull
 * the whole list).
 */
SHEAF_API sheaf_result sheaf_list_start_load_more(sheaf_list *list, int64_t look_ahead);

/**
 * Hands out the next page of a load-more list, asking for it unless it is already on its way or
 * fetched ahead, and waits at most `timeout_ms` milliseconds for it (0: do not wait; negative:
 * until it comes or the list ends). Thread-safe, unlike the other calls of a list: every call
 * made while a page is on its way, from any thread, joins it and returns it, so the server sees
 * one request per page. Returns:
 *   SHEAF_OK, *out_json set      the page's items as a JSON array, freed with sheaf_free
 *                                (*out_length, may be NULL: its length in bytes).
 *   SHEAF_OK, *out_json NULL     the list ended and every page was handed out: complete, or at
 *                                the caller's item limit or budget (sheaf_list_get_status's
 *                                stop_reason says which).
 *   SHEAF_PENDING                nothing within the timeout. The page stays asked for: a later
 *                                call returns it, with no second request.
 *   a failure                    the list ended with it, after the pages before it were handed
 *                                out (detail: sheaf_list_error); SHEAF_E_CANCELLED when it was
 *                                cancelled, reset or freed.
 *   SHEAF_E_STATE                the list was not started with sheaf_list_start_load_more.
 *   SHEAF_E_REENTRANT            called with a timeout from inside a Sheaf callback.
 *
 * C only: see sheaf_list_start_load_more.
 */
SHEAF_API sheaf_result sheaf_list_more(sheaf_list *list, int64_t timeout_ms, char **out_json, size_t *out_length);

/**
 * Starts a load-more list over, as a pull-to-refresh does: what is in flight is cancelled, the
 * pages handed out are forgotten, and the next sheaf_list_more asks for the first page again.
 * Calls of sheaf_list_more waiting on other threads return SHEAF_E_CANCELLED. Also brings back
 * a list that ended or was cancelled. Non-blocking. SHEAF_E_STATE for a list not started with
 * sheaf_list_start_load_more.
 *
 * C only: see sheaf_list_start_load_more.
 */
SHEAF_API sheaf_result sheaf_list_reset(sheaf_list *list);

/* ---- Groups: many lists as one job ------------------------------------------------------ */

/**
 * Creates an empty group of lists run on `client`. The lists of a group share the client's window
 * for each origin (SHEAF_OPT_WINDOW, SHEAF_OPT_MAX_WINDOW): 300 lists started together send what
 * one list would, and a rate limit one of them meets slows all of them. Lists join with
 * sheaf_group_add and sheaf_group_add_each before sheaf_group_start. *out_group is freed with
 * sheaf_group_free; NULL on failure. The client must outlive the group.
 */
SHEAF_API sheaf_result sheaf_group_new(sheaf_group **out_group, sheaf_client *client);

/**
 * Cancels the group if it still runs, waits until no callback of it runs (unless called from
 * one), and frees it with every list it took. NULL is a no-op.
 */
SHEAF_API void sheaf_group_free(sheaf_group *group);

/**
 * The group's error: its outcome's detail once it has failed (SHEAF_E_PARTIAL names how many
 * lists failed and the first failure), or the last failed call's on it; NULL otherwise. The
 * caller frees it with sheaf_error_free.
 */
SHEAF_API sheaf_error *sheaf_group_error(const sheaf_group *group);

/** Options of a group (sheaf_group_set_option); each is 0 (off, the default) or 1. */
typedef enum sheaf_group_option {
    SHEAF_GROUP_ORDERED = 1,       /**< Deltas list after list, in the order the lists joined (a fan-out: the parent's item order); a list waiting its turn stops asking once a window of its pages (SHEAF_OPT_WINDOW) waits; with the pages kept ahead of a slow one, it holds three windows at most. Off: as they arrive, each list's own deltas still in order. */
    SHEAF_GROUP_FAIL_FAST = 2,     /**< The first list that fails cancels the others; the group ends with its error. Off: a list that fails does not stop the others, and the group ends SHEAF_E_PARTIAL. */
    SHEAF_GROUP_MISSING_FAILS = 3  /**< A parent item without a value its template needs (missing, null, an object, an empty string in the path) fails the parent list. Off: the item is skipped with a warning log record (sheaf_client_set_log). */
} sheaf_group_option;

/** Sets an option before the group starts: SHEAF_E_STATE after, SHEAF_E_INVALID_ARGUMENT for an
    unknown option or a value other than 0 or 1. */
SHEAF_API sheaf_result sheaf_group_set_option(sheaf_group *group, sheaf_group_option option, int64_t value);

/**
 * Adds `list` (configured, not started) to the group; the group takes it: on success do not free
 * it (sheaf_group_free does), and reach it again with sheaf_group_list for its status, error,
 * resume token and prefix (items are kept as sheaf_list_set_keep_items says: off saves memory,
 * the deltas carry the items either way). `tag` (copied; NULL: the list's path) comes with each
 * of its deltas. *out_index (may be NULL) is the list's place: 0, 1, ... in the order lists
 * join. On failure the list stays the caller's. SHEAF_E_STATE once the group has started or for
 * a list already started; SHEAF_E_INVALID_ARGUMENT for a list of another client.
 */
SHEAF_API sheaf_result sheaf_group_add(sheaf_group *group, sheaf_list *list, const char *tag, size_t *out_index);

/**
 * Adds a fan-out: `parent` (a list, taken as sheaf_group_add takes one) whose items name child
 * lists. `templates[0]` makes a child's URL from one parent item: "/repos/{/full_name}/issues"
 * fills each {JSON pointer} with the item's value there (a string as it is, a number or a boolean
 * as its JSON text), percent-encoded for where it stands: in the path everything but unreserved
 * characters and "/" is encoded ("/" is kept, so "owner/repo" fills two segments) and a "." or
 * ".." segment a value makes has its dots encoded; after the "?", a value is encoded for a query
 * value. A template starting with "/" is joined to the parent's origin; an absolute one must be
 * http(s) with its host written out. With `levels` > 1, templates[1] makes a grandchild's URL
 * from a child's item, and so on: the lists of every level but the last are parents in turn.
 * Children join the group as the parent's pages bring them, once per URL (an item that repeats
 * is fetched once), tagged with the value that filled the template (the URL when it takes
 * several). Each list of the last level runs `child`'s description (a list whose path is
 * replaced; NULL: detection), keeping items as `child` says; the group takes `child` too (it never
 * runs itself). A parent's items are not delivered, only its last delta (its outcome).
 * *out_index (may be NULL) is the parent's place. On failure parent and child stay the caller's.
 * SHEAF_E_INVALID_ARGUMENT for no template or one that does not parse (unbalanced braces, an
 * invalid pointer, no value, a value in the host); SHEAF_E_STATE as sheaf_group_add.
 */
SHEAF_API sheaf_result sheaf_group_add_each(sheaf_group *group, sheaf_list *parent, const char *const *templates,
                                            size_t levels, sheaf_list *child, size_t *out_index);

/** What one delta of a group says. Library-owned and read-only; check `version` before reading fields. */
typedef struct sheaf_group_delta {
    unsigned int version;       /**< SHEAF_GROUP_DELTA_VERSION of the library that filled it. */
    size_t list;                /**< The list's place in the group (sheaf_group_list). */
    const char *tag;            /**< The list's tag (borrowed). */
    const char *delta_json;     /**< The items the list's prefix gained, as a JSON array (borrowed; "[]" on its last delta). */
    size_t delta_length;        /**< Bytes in delta_json, not counting its terminating NUL. */
    size_t delta_items;         /**< Items in delta_json. */
    size_t items;               /**< Items in the list's prefix so far. */
    int finished;               /**< 1 on the list's last delta, which adds no items; 0 before. */
    sheaf_result result;        /**< On the last delta, the list's outcome (detail: sheaf_list_error of sheaf_group_list); SHEAF_OK before. */
    int parent;                 /**< Version 2. 1 for a fan-out's parent: the list given to sheaf_group_add_each, or a list of a middle level of a fan-out of several templates, whose items name the next level's lists; such a list has only its last delta. 0 for a list of items. */
    const char *templates_json; /**< Version 2. For a parent, the templates its items fill, in order, as a JSON array of strings (borrowed): what fetches its children again (after its resume token, the same fan-out goes on); NULL for a list of items. */
} sheaf_group_delta;

#define SHEAF_GROUP_DELTA_VERSION 2

/**
 * Called once per delta, never two at once for one group, on a library thread, never after the
 * group has ended or was freed; everything `delta` points to is borrowed for the call. `group`
 * may be passed to non-blocking calls (sheaf_group_list, sheaf_group_cancel). Return 0 to go on;
 * non-zero stops the group: every list is cancelled, nothing more is delivered, and
 * sheaf_group_wait returns SHEAF_E_STOPPED. A slow callback holds each list's fetching back as a
 * list's snapshot callback does.
 */
typedef int (*sheaf_group_fn)(sheaf_group *group, const sheaf_group_delta *delta, void *user_data);

/**
 * Starts every list of the group; returns at once. `on_delta` may be NULL (then only
 * sheaf_group_wait and the lists observe it). `destroy` (may be NULL) is called with `user_data`
 * once, after the last callback; a refused start never calls it. A group runs once: SHEAF_E_STATE
 * otherwise. A group of no lists ends at once, SHEAF_OK.
 *
 * C only: a callback form; the bindings pull (sheaf_group_start_pull), as sheaf_list_start is
 * of a list.
 */
SHEAF_API sheaf_result sheaf_group_start(sheaf_group *group, sheaf_group_fn on_delta, void *user_data,
                                         sheaf_destroy_fn destroy);

/** Starts every list of the group for pulling with sheaf_group_next (see sheaf_list_start_pull). */
SHEAF_API sheaf_result sheaf_group_start_pull(sheaf_group *group);

/**
 * Takes the next delta of a group started with sheaf_group_start_pull, waiting at most
 * `timeout_ms` (0: do not wait; negative: until one comes or the group ends). Returns SHEAF_OK
 * with *out_delta set (valid until the next sheaf_group_next or sheaf_group_free), SHEAF_OK with
 * *out_delta NULL once the group has ended and every delta was taken, SHEAF_PENDING when none
 * came within the timeout, SHEAF_E_STATE for a group not started with sheaf_group_start_pull,
 * SHEAF_E_REENTRANT with a timeout from inside a Sheaf callback. One thread takes a group's deltas.
 */
SHEAF_API sheaf_result sheaf_group_next(sheaf_group *group, int64_t timeout_ms, const sheaf_group_delta **out_delta);

/**
 * Blocks until every list has ended and (for a callback) its last delta was delivered; returns
 * SHEAF_OK when every list ended SHEAF_OK, SHEAF_E_PARTIAL when some failed (the others are whole),
 * SHEAF_E_STOPPED or SHEAF_E_CANCELLED for the group itself, or with SHEAF_GROUP_FAIL_FAST the
 * first failure's code. Detail: sheaf_group_error. On a pulled group it stops the pulling first
 * (deltas not taken are dropped: take until sheaf_group_next says the end to get them all).
 * From inside a callback: SHEAF_E_REENTRANT.
 */
SHEAF_API sheaf_result sheaf_group_wait(sheaf_group *group);

/** Cancels every list of a running group; nothing more is delivered. Non-blocking, any thread. */
SHEAF_API sheaf_result sheaf_group_cancel(sheaf_group *group);

/** The lists in the group so far (a fan-out's grow as the parents' pages come); 0 for NULL. */
SHEAF_API size_t sheaf_group_count(const sheaf_group *group);

/**
 * The list at `index` (borrowed: the group owns it; valid until sheaf_group_free), for
 * sheaf_list_error, sheaf_list_get_status, sheaf_list_resume_token, sheaf_list_prefix,
 * sheaf_list_description and the other calls that read a list. NULL for an index past the count.
 */
SHEAF_API sheaf_list *sheaf_group_list(sheaf_group *group, size_t index);

/* ---- Single requests -------------------------------------------------------------------- */

/**
 * Creates a request of `client`: `method` (an HTTP token such as "GET", "POST", "PATCH"; copied)
 * at `path` (copied; joined to the base URL as sheaf_list_new describes; may carry a query; NULL
 * or "" is the base URL itself). The request goes through the client's headers, credentials,
 * transport, timeouts and redirect rules. Transient failures (timeouts, connection failures,
 * 429, 502, 503, 504) are retried for idempotent methods (GET, HEAD, PUT, DELETE, OPTIONS,
 * TRACE), and for others only with sheaf_request_set_retry or an "Idempotency-Key" header.
 * Redirects: 303 (and 301/302 after a POST) continue as a GET without the body; 307 and 308
 * repeat the request. *out_request is freed with sheaf_request_free; NULL on failure.
 */
SHEAF_API sheaf_result sheaf_request_new(sheaf_request **out_request, sheaf_client *client,
                                         const char *method, const char *path);

/**
 * Frees a request, cancelling it first if it is in flight: its completion callback does not run
 * after this returns (unless called from inside it). Borrowed response pointers become invalid.
 * NULL is a no-op.
 */
SHEAF_API void sheaf_request_free(sheaf_request *request);

/**
 * Appends one path segment (copied): every byte but letters, digits and "-._~" is
 * percent-encoded, "/" and spaces included, and a segment that is exactly "." or ".." is sent as
 * "%2E" or "%2E%2E" (never resolved as a step in the path), so an id from elsewhere names exactly
 * one resource ("a/b c" becomes "a%2Fb%20c"). It goes before a query or fragment the request's
 * path carries ("items?force=1" + "42" is "items/42?force=1").
 */
SHEAF_API sheaf_result sheaf_request_add_segment(sheaf_request *request, const char *segment);

/** Appends a query parameter (copied; percent-encoded when sent). */
SHEAF_API sheaf_result sheaf_request_add_query(sheaf_request *request, const char *name, const char *value);

/**
 * Adds a request header (copied), replacing the client's of the same name (but the client's
 * credential: with a Bearer or Basic one, the header sent as Authorization is the credential's,
 * with an API key header, that header); checked as
 * sheaf_client_add_header checks it (a framing header such as Content-Length is refused with
 * SHEAF_E_INVALID_ARGUMENT: sheaf_request_set_body sets the content type, the transport the length).
 */
SHEAF_API sheaf_result sheaf_request_add_header(sheaf_request *request, const char *name, const char *value);

/**
 * Sets the body: `length` bytes at `data` (copied; may be NULL when length is 0) sent with
 * "Content-Type: <content_type>" (e.g. "application/json"). Replaces any form fields. A GET or
 * HEAD request refuses a body at send time with SHEAF_E_INVALID_ARGUMENT.
 */
SHEAF_API sheaf_result sheaf_request_set_body(sheaf_request *request, const char *content_type,
                                              const void *data, size_t length);

/**
 * Appends a field (copied) to an application/x-www-form-urlencoded body; replaces a body set
 * with sheaf_request_set_body.
 */
SHEAF_API sheaf_result sheaf_request_add_form(sheaf_request *request, const char *name, const char *value);

/**
 * Makes the request a download into the file `path` (copied; NULL: the body stays in memory): a
 * successful body is streamed to a file of this request's own beside it, ".<name>.sheaf-XXXXXX"
 * (created exclusively, never through a link; its folders created as needed), never held in
 * memory, and renamed over `path` only once all of it has arrived; on any failure that file
 * is removed and `path` left as it was. Two downloads to one path each write their own file:
 * the path ends as one whole body (the last renamed). The file takes the permission bits of the
 * regular file it replaces; a new one gets 0666 less the umask. The file holds the body as
 * served: a download offers no compression (no Accept-Encoding) and decodes none. A transfer that breaks is retried like any other, and
 * resumes with "Range" when the server sent an ETag or Last-Modified and answers 206 for it.
 * A 206 that does not continue the file as asked (a part when all of it was asked for, a range
 * starting elsewhere, or another version: an ETag or Last-Modified other than the If-Range sent)
 * ends the request with SHEAF_E_TRANSPORT; two versions are never spliced, nothing is kept.
 * A failing status's body is kept in memory as usual (within SHEAF_OPT_MAX_BODY_BYTES), which
 * does not limit the file. A destination that is not a regular file (a directory, a device, a
 * FIFO, a socket, or a symbolic link to one) is refused at send time with
 * SHEAF_E_INVALID_ARGUMENT, never replaced; a symbolic link to a regular file is replaced itself,
 * not followed; a folder or file that cannot be written, or a full disk, ends the
 * request with SHEAF_E_IO. sheaf_request_body is then empty.
 */
SHEAF_API sheaf_result sheaf_request_set_output_file(sheaf_request *request, const char *path);

/**
 * A download's progress: the bytes written so far and the bytes expected (-1 while unknown).
 * Thread-safe; may be called while the request runs (from another thread or a loop around
 * short waits). Either out-parameter may be NULL.
 *
 * C only: for a download's progress display (Python's downloads report progress with it; Go and
 * Rust wait for the outcome).
 */
SHEAF_API sheaf_result sheaf_request_progress(const sheaf_request *request, int64_t *out_done, int64_t *out_expected);

/** retry != 0: retry transient failures even for a method that is not idempotent (POST, PATCH). */
SHEAF_API sheaf_result sheaf_request_set_retry(sheaf_request *request, int retry);

/**
 * Called once when a started request has its outcome (`result` as sheaf_request_wait returns
 * it), on a library thread. The response accessors may be used inside it; blocking Sheaf calls
 * return SHEAF_E_REENTRANT.
 */
typedef void (*sheaf_request_done_fn)(sheaf_request *request, sheaf_result result, void *user_data);

/**
 * Sends the request without blocking. `on_done` (may be NULL) is called once with the outcome;
 * `destroy` (may be NULL) is called with `user_data` after that, or when the request is freed
 * without the callback having run. A request is sent once: starting it again is SHEAF_E_STATE.
 * A refused start never calls `destroy` (user_data stays the caller's).
 */
SHEAF_API sheaf_result sheaf_request_start(sheaf_request *request, sheaf_request_done_fn on_done,
                                           void *user_data, sheaf_destroy_fn destroy);

/**
 * Blocks until the started request has its outcome and its callback has returned. Returns
 * SHEAF_OK for a 2xx response; SHEAF_E_HTTP for any other final status (the response is still
 * readable, and sheaf_request_error carries the server's error fields); SHEAF_E_TRANSPORT,
 * SHEAF_E_BODY_TOO_LARGE, SHEAF_E_CROSS_ORIGIN, SHEAF_E_CANCELLED, ... when there is no
 * response. From inside a Sheaf callback: SHEAF_E_REENTRANT.
 */
SHEAF_API sheaf_result sheaf_request_wait(sheaf_request *request);

/**
 * sheaf_request_start and sheaf_request_wait in one call.
 *
 * C only: a composition, sheaf_request_start then sheaf_request_wait (Rust calls it; Python and
 * Go call the two).
 */
SHEAF_API sheaf_result sheaf_request_send(sheaf_request *request);

/**
 * Abandons a started request: its outcome becomes SHEAF_E_CANCELLED unless already decided.
 * Non-blocking; callable from any thread and from callbacks, while another thread waits.
 */
SHEAF_API sheaf_result sheaf_request_cancel(sheaf_request *request);

/** The final HTTP status, or 0 while there is none (not finished, or no response). */
SHEAF_API int sheaf_request_status(const sheaf_request *request);

/**
 * The URL that answered, after redirects (secret query values redacted); NULL while there is no
 * response. Borrowed: valid until the request is freed.
 */
SHEAF_API const char *sheaf_request_url(const sheaf_request *request);

/** How many response headers there are (0 while there is no response). */
SHEAF_API size_t sheaf_request_header_count(const sheaf_request *request);

/**
 * Response header `index` (0-based), in the order received. Borrowed: valid until the request
 * is freed. SHEAF_E_INVALID_ARGUMENT when `index` is out of range (outputs then untouched).
 */
SHEAF_API sheaf_result sheaf_request_header(const sheaf_request *request, size_t index,
                                            const char **out_name, const char **out_value);

/**
 * The first response header named `name` (case-insensitive), or NULL. Borrowed: valid until the
 * request is freed.
 *
 * C only: a lookup over sheaf_request_header, which the bindings read every header with.
 */
SHEAF_API const char *sheaf_request_header_value(const sheaf_request *request, const char *name);

/**
 * The response body and its length (*out_length may be NULL). The bytes are followed by a NUL
 * that is not counted, so a text body can be used as a C string. NULL (and 0) while there is no
 * response. Borrowed: valid until the request is freed.
 */
SHEAF_API const char *sheaf_request_body(const sheaf_request *request, size_t *out_length);

/** The error of the outcome, or of the last failed call on the request, as a new copy (sheaf_error_free); NULL when there is none. */
SHEAF_API sheaf_error *sheaf_request_error(const sheaf_request *request);

/* ---- Writing a transport ---------------------------------------------------------------- */

/*
 * For embedders that replace libcurl with an HTTP stack of their own (a test double, a proxy
 * library, a platform client): a transport is a function the library calls with each exchange
 * to perform. Everyday callers never need this section.
 */

/** One HTTP exchange handed to a custom transport: a request to answer. Owned by the library. */
typedef struct sheaf_exchange sheaf_exchange;


/** Why an exchange failed below HTTP. Append-only. */
typedef enum sheaf_transport_error {
    SHEAF_TRANSPORT_OTHER = 0,      /**< Anything else; not retried. */
    SHEAF_TRANSPORT_TIMEOUT = 1,    /**< No answer in time; retried. */
    SHEAF_TRANSPORT_CONNECT = 2,    /**< Connection refused or reset; retried. */
    SHEAF_TRANSPORT_DNS = 3,        /**< The host name did not resolve; not retried. */
    SHEAF_TRANSPORT_TLS = 4,        /**< The TLS handshake or certificate check failed; not retried. */
    SHEAF_TRANSPORT_TOO_LARGE = 5   /**< The body exceeded sheaf_exchange_max_body_bytes. */
} sheaf_transport_error;

/**
 * A transport: performs one HTTP exchange.
 *
 * Called concurrently (up to the list's window at once), each call on a thread of its own owned
 * by the library, so a transport may block until it has the answer. It must answer `exchange`
 * exactly once, with sheaf_exchange_respond or sheaf_exchange_fail, either before returning or
 * later from any thread. Until it answers, `exchange` stays valid even if the list is closed;
 * after it answers, `exchange` must not be touched again. `user_data` is the pointer given with
 * the transport, borrowed.
 */
typedef void (*sheaf_transport_fn)(sheaf_exchange *exchange, void *user_data);

/**
 * The request method ("GET"). Borrowed: valid until the exchange is answered.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API const char *sheaf_exchange_method(const sheaf_exchange *exchange);
/**
 * The absolute request URL. Borrowed: valid until the exchange is answered.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API const char *sheaf_exchange_url(const sheaf_exchange *exchange);
/**
 * How many request headers there are.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API size_t sheaf_exchange_header_count(const sheaf_exchange *exchange);
/**
 * Request header `index` (0-based) as a name and a value. Borrowed: valid until the exchange is
 * answered. Returns SHEAF_E_INVALID_ARGUMENT when index is out of range (outputs then untouched).
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API sheaf_result sheaf_exchange_header(const sheaf_exchange *exchange, size_t index,
                                             const char **out_name, const char **out_value);
/**
 * The request body and its length (NULL and 0 for a GET). Borrowed until the exchange is
 * answered.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API const char *sheaf_exchange_body(const sheaf_exchange *exchange, size_t *out_length);
/**
 * Per-request timeout in milliseconds the transport should apply (0 = none).
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API int64_t sheaf_exchange_timeout_ms(const sheaf_exchange *exchange);
/**
 * The body cap in bytes: a larger body should be answered with SHEAF_TRANSPORT_TOO_LARGE.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API int64_t sheaf_exchange_max_body_bytes(const sheaf_exchange *exchange);
/**
 * Non-zero once the library no longer wants the answer (the list stopped); answer anyway.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API int sheaf_exchange_is_cancelled(const sheaf_exchange *exchange);

/**
 * Adds one response header before answering. `name` and `value` are copied.
 * Call only before sheaf_exchange_respond, from the thread that will respond.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API sheaf_result sheaf_exchange_add_response_header(sheaf_exchange *exchange,
                                                          const char *name, const char *value);
/**
 * Answers the exchange with an HTTP status (100..999) and body (`body` may be NULL when
 * `body_length` is 0; it is copied). After a SHEAF_OK answer `exchange` is invalid: answering
 * twice is undefined behaviour. A status out of range is refused with SHEAF_E_INVALID_ARGUMENT
 * and the exchange stays valid, to be answered again.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API sheaf_result sheaf_exchange_respond(sheaf_exchange *exchange, int status,
                                              const char *body, size_t body_length);
/**
 * Answers the exchange with a transport failure; `message` (may be NULL) is copied and must not
 * contain credentials. After this call `exchange` is invalid.
 *
 * C only: a transport's side of an exchange (this section).
 */
SHEAF_API sheaf_result sheaf_exchange_fail(sheaf_exchange *exchange, sheaf_transport_error kind,
                                           const char *message);

/**
 * Replaces the HTTP backend with `transport` (NULL restores libcurl) for lists started from now
 * on; a running list keeps the transport it started with. `user_data` is handed to every call;
 * `destroy` (may be NULL) is called with it once no list and no exchange needs it any more
 * (after the client and every list started with it are freed and every exchange answered); a
 * refused call never calls it (user_data stays the caller's).
 *
 * C only: for embedders that replace libcurl (Python's transports, any callable, go in one list
 * at a time: sheaf_list_set_transport); Go and Rust use the library's own.
 */
SHEAF_API sheaf_result sheaf_client_set_transport(sheaf_client *client, sheaf_transport_fn transport,
                                                  void *user_data, sheaf_destroy_fn destroy);

/**
 * Gives this list a transport of its own, with its own `user_data` and `destroy` (see
 * sheaf_client_set_transport), in place of its client's; NULL goes back to the client's.
 * Refused with SHEAF_E_STATE once the list has started; a refused call never calls `destroy`
 * (user_data stays the caller's).
 *
 * C only: see sheaf_client_set_transport (Python's transports are set with it).
 */
SHEAF_API sheaf_result sheaf_list_set_transport(sheaf_list *list, sheaf_transport_fn transport,
                                                void *user_data, sheaf_destroy_fn destroy);

#ifdef __cplusplus
}
#endif

#endif /* SHEAF_H */
