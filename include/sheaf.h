/*
 * sheaf.h - the public C interface of Sheaf, a client for paginated REST list endpoints.
 *
 * Sheaf turns a paginated, bearer-authenticated list endpoint into one call
 * (sheaf_list_fetch_all) or into a stream of growing, correctly ordered snapshots
 * (sheaf_list_start + a sheaf_snapshot_fn, or sheaf_list_start_pull + sheaf_list_next to take
 * them on the caller's own thread). When page k can be addressed directly, the
 * remaining pages are fetched concurrently in a bounded window (without a total, speculatively:
 * the first page that says it is the last ends the list; requests past it are cancelled and
 * what they brought is dropped); otherwise the next links are walked one by one.
 *
 * Thread safety
 * -------------
 * A sheaf_client may be shared by any number of threads and may run many lists at once.
 * A sheaf_list is used by one thread at a time (sheaf_list_cancel is the one exception: it may
 * be called from any thread, and from a callback). Callbacks (snapshots and the transport) run on
 * threads owned by the library, never on the caller's thread and never two snapshot callbacks of
 * one list at once. A blocking Sheaf function (sheaf_list_wait, sheaf_list_fetch_all,
 * sheaf_list_next with a timeout, sheaf_client_free) called from inside a Sheaf callback returns
 * SHEAF_E_REENTRANT (or, for sheaf_client_free, is deferred) instead of deadlocking.
 *
 * Memory
 * ------
 * Strings passed in are copied before the call returns. Strings handed to a callback are
 * borrowed for the duration of that callback. Everything the library returns to the caller as
 * an owned pointer is released with sheaf_free. Every *_free function accepts NULL.
 *
 * Errors
 * ------
 * Functions that can fail return a sheaf_result. The codes are stable and append-only; their
 * static text is sheaf_result_str. Detail (the URL, the HTTP status, a body excerpt, the JSON
 * location) is kept per handle: sheaf_client_errmsg and sheaf_list_errmsg. Bearer tokens never
 * appear in messages.
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

#define SHEAF_VERSION_MAJOR 0
#define SHEAF_VERSION_MINOR 2
#define SHEAF_VERSION_PATCH 0
#define SHEAF_VERSION_STRING "0.2.0"
/** MAJOR * 10000 + MINOR * 100 + PATCH, as sheaf_version_number() returns it. */
#define SHEAF_VERSION_NUMBER (SHEAF_VERSION_MAJOR * 10000 + SHEAF_VERSION_MINOR * 100 + SHEAF_VERSION_PATCH)

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
 * SHEAF_OK and SHEAF_LIMIT_REACHED are successes; SHEAF_PENDING means "not yet" (only
 * sheaf_list_next returns it); every other code is a failure.
 */
typedef enum sheaf_result {
    SHEAF_OK = 0,                  /**< Done; for a list, every item arrived and agrees with the total. */
    SHEAF_LIMIT_REACHED = 1,       /**< The list stopped at the caller's item limit (sheaf_list_set_max_items). */
    SHEAF_E_INVALID_ARGUMENT = 2,  /**< A NULL handle, a malformed URL or JSON pointer, an option out of range. */
    SHEAF_E_UNSUPPORTED = 3,       /**< Accepted by the API but not supported by this version of the library yet. */
    SHEAF_E_STATE = 4,             /**< The handle is not in a state for this call (e.g. a list started twice). */
    SHEAF_E_REENTRANT = 5,         /**< A blocking call was made from inside a Sheaf callback. */
    SHEAF_E_HTTP = 6,              /**< The server answered with a failing HTTP status (after retries). */
    SHEAF_E_TRANSPORT = 7,         /**< The request failed below HTTP: timeout, connect, DNS, TLS (after retries). */
    SHEAF_E_BAD_PAGE = 8,          /**< A page is not JSON, or the items / next / total are not where the list says. */
    SHEAF_E_INCOMPLETE = 9,        /**< Every page arrived, but the items disagree with the server's total. */
    SHEAF_E_LOOP = 10,             /**< A next link repeats a URL already fetched. */
    SHEAF_E_PAGE_LIMIT = 11,       /**< The walk needs more pages than the page cap allows. */
    SHEAF_E_BODY_TOO_LARGE = 12,   /**< A response body exceeds the body cap. */
    SHEAF_E_CROSS_ORIGIN = 13,     /**< A next link or redirect leaves the base URL's origin (or https for http). */
    SHEAF_E_STOPPED = 14,          /**< A snapshot callback returned non-zero. */
    SHEAF_E_CANCELLED = 15,        /**< sheaf_list_cancel was called, or the list was freed while running. */
    SHEAF_E_INTERNAL = 16,         /**< A bug in Sheaf; the message says where. */
    SHEAF_PENDING = 17             /**< sheaf_list_next: no snapshot yet within the timeout (not a failure). */
} sheaf_result;

/** Static English text for a result code (unknown codes get a generic text). Never NULL; do not free. */
SHEAF_API const char *sheaf_result_str(int result);

/** Releases memory the library returned to the caller (JSON strings). NULL is a no-op. */
SHEAF_API void sheaf_free(void *pointer);

/* ---- Handles ---------------------------------------------------------------------------- */

/** A configured client: base URL, credentials, transport and policies. */
typedef struct sheaf_client sheaf_client;
/** One paginated list of one client: its description, then one run of it. */
typedef struct sheaf_list sheaf_list;
/** One HTTP exchange handed to a custom transport. Owned by the library. */
typedef struct sheaf_request sheaf_request;

/* ---- Transport -------------------------------------------------------------------------- */

/** Why a request failed below HTTP. Append-only. */
typedef enum sheaf_transport_error {
    SHEAF_TRANSPORT_OTHER = 0,      /**< Anything else; not retried. */
    SHEAF_TRANSPORT_TIMEOUT = 1,    /**< No answer in time; retried. */
    SHEAF_TRANSPORT_CONNECT = 2,    /**< Connection refused or reset; retried. */
    SHEAF_TRANSPORT_DNS = 3,        /**< The host name did not resolve; not retried. */
    SHEAF_TRANSPORT_TLS = 4,        /**< The TLS handshake or certificate check failed; not retried. */
    SHEAF_TRANSPORT_TOO_LARGE = 5   /**< The body exceeded sheaf_request_max_body_bytes. */
} sheaf_transport_error;

/**
 * A transport: performs one HTTP exchange.
 *
 * Called concurrently (up to the list's window at once), each call on a thread of its own owned
 * by the library, so a transport may block until it has the answer. It must answer `request`
 * exactly once, with sheaf_request_respond or sheaf_request_fail, either before returning or later
 * from any thread. Until it answers, `request` stays valid even if the list is closed; after it
 * answers, `request` must not be touched again. `user_data` is the pointer given to
 * sheaf_client_set_transport or sheaf_list_set_transport, borrowed.
 */
typedef void (*sheaf_transport_fn)(sheaf_request *request, void *user_data);

/** The request method ("GET"). Borrowed: valid until the request is answered. */
SHEAF_API const char *sheaf_request_method(const sheaf_request *request);
/** The absolute request URL. Borrowed: valid until the request is answered. */
SHEAF_API const char *sheaf_request_url(const sheaf_request *request);
/** How many request headers there are. */
SHEAF_API size_t sheaf_request_header_count(const sheaf_request *request);
/**
 * Header `index` (0-based) as a name and a value. Borrowed: valid until the request is answered.
 * Returns SHEAF_E_INVALID_ARGUMENT when index is out of range (outputs then untouched).
 */
SHEAF_API sheaf_result sheaf_request_header(const sheaf_request *request, size_t index,
                                            const char **out_name, const char **out_value);
/** The request body and its length (NULL and 0 for a GET). Borrowed until the request is answered. */
SHEAF_API const char *sheaf_request_body(const sheaf_request *request, size_t *out_length);
/** Per-request timeout in milliseconds the transport should apply (0 = none). */
SHEAF_API int64_t sheaf_request_timeout_ms(const sheaf_request *request);
/** The body cap in bytes: a larger body should be answered with SHEAF_TRANSPORT_TOO_LARGE. */
SHEAF_API int64_t sheaf_request_max_body_bytes(const sheaf_request *request);
/** Non-zero once the library no longer wants the answer (the list stopped); answer anyway. */
SHEAF_API int sheaf_request_is_cancelled(const sheaf_request *request);

/**
 * Adds one response header before answering. `name` and `value` are copied.
 * Call only before sheaf_request_respond, from the thread that will respond.
 */
SHEAF_API sheaf_result sheaf_request_add_response_header(sheaf_request *request,
                                                         const char *name, const char *value);
/**
 * Answers the request with an HTTP status and body (`body` may be NULL when `body_length` is 0;
 * it is copied). After this call `request` is invalid: answering twice is undefined behaviour.
 */
SHEAF_API sheaf_result sheaf_request_respond(sheaf_request *request, int status,
                                             const char *body, size_t body_length);
/**
 * Answers the request with a transport failure; `message` (may be NULL) is copied and must not
 * contain credentials. After this call `request` is invalid.
 */
SHEAF_API sheaf_result sheaf_request_fail(sheaf_request *request, sheaf_transport_error kind,
                                          const char *message);

/* ---- Client ----------------------------------------------------------------------------- */

/**
 * Creates a client for `base_url` (absolute http or https URL; list paths are resolved against
 * it). `bearer_token` may be NULL; when set it is sent as "Authorization: Bearer <token>" only to
 * the base URL's origin (scheme, host, port). Both strings are copied.
 * On success *out_client owns a new client, freed with sheaf_client_free; on failure it is set
 * to NULL and the result says why (no client exists to hold a message).
 * The default transport is libcurl's multi interface.
 */
SHEAF_API sheaf_result sheaf_client_new(sheaf_client **out_client, const char *base_url,
                                        const char *bearer_token);

/**
 * Frees a client. Lists still open keep what they need alive, so lists may be freed after their
 * client. NULL is a no-op. Called from inside a callback, the release is deferred (never blocks).
 */
SHEAF_API void sheaf_client_free(sheaf_client *client);

/**
 * The last error message recorded on this client. Borrowed: valid until the next call on the
 * client, so copy it before calling anything else on the client.
 */
SHEAF_API const char *sheaf_client_errmsg(const sheaf_client *client);

/** Integer options of a client. Append-only. Set before starting lists; running lists keep theirs. */
typedef enum sheaf_option {
    SHEAF_OPT_WINDOW = 1,             /**< Pages in flight at once, 1..64; default 8. */
    SHEAF_OPT_MAX_PAGES = 2,          /**< Page cap per list, >= 1; default 10000. */
    SHEAF_OPT_MAX_BODY_BYTES = 3,     /**< Body cap per response, >= 1; default 64 MiB. */
    SHEAF_OPT_MAX_ATTEMPTS = 4,       /**< Attempts per request including the first, 1..100; default 4. */
    SHEAF_OPT_RETRY_BASE_MS = 5,      /**< Backoff base in ms, >= 0; default 100 (full jitter). */
    SHEAF_OPT_RETRY_MAX_MS = 6,       /**< Backoff and Retry-After cap in ms, >= 0; default 30000. */
    SHEAF_OPT_TIMEOUT_MS = 7,         /**< Whole-request timeout in ms, 0 = none; default 30000. */
    SHEAF_OPT_CONNECT_TIMEOUT_MS = 8, /**< Connect timeout in ms, 0 = transport default; default 10000. */
    SHEAF_OPT_MAX_REDIRECTS = 9       /**< Redirects followed per request, 0..50; default 10. */
} sheaf_option;

/**
 * Sets an integer option. Returns SHEAF_E_INVALID_ARGUMENT (message on the client) for an
 * unknown option or a value out of range. Thread-safe; affects lists started afterwards.
 */
SHEAF_API sheaf_result sheaf_client_set_option(sheaf_client *client, sheaf_option option,
                                               int64_t value);

/**
 * Replaces the HTTP backend with `transport` (NULL restores libcurl) for lists started from now
 * on; a running list keeps the transport and `user_data` it started with. `user_data` is borrowed
 * and must stay valid until every request handed to the transport has been answered.
 */
SHEAF_API sheaf_result sheaf_client_set_transport(sheaf_client *client,
                                                  sheaf_transport_fn transport, void *user_data);

/* ---- Describing a list ------------------------------------------------------------------ */

/**
 * Creates a list of `client` at `path` (resolved against the base URL; may carry a query).
 * Without further calls it fetches the first page and follows nothing. The list keeps the
 * client alive. *out_list is freed with sheaf_list_free; NULL on failure (message on client).
 */
SHEAF_API sheaf_result sheaf_list_new(sheaf_list **out_list, sheaf_client *client, const char *path);

/**
 * Frees a list. If it is running it is cancelled first: in-flight requests are abandoned and no
 * snapshot callback runs after this returns. NULL is a no-op. Called from inside the list's own
 * snapshot callback it cancels, and the release happens when the callback returns.
 */
SHEAF_API void sheaf_list_free(sheaf_list *list);

/**
 * The last error message recorded on this list. Borrowed: valid until the next call on the list,
 * so copy it before calling anything else on the list.
 */
SHEAF_API const char *sheaf_list_errmsg(const sheaf_list *list);

/** For a SHEAF_E_HTTP failure, the HTTP status; otherwise 0. */
SHEAF_API int sheaf_list_http_status(const sheaf_list *list);

/**
 * For a SHEAF_E_HTTP failure, the start of the failing response body (at most 1 KiB, UTF-8
 * repaired); otherwise "". Borrowed: valid until the next call on the list.
 */
SHEAF_API const char *sheaf_list_http_body(const sheaf_list *list);

/** Adds a query parameter to every page request (name and value are copied, then encoded). */
SHEAF_API sheaf_result sheaf_list_add_query(sheaf_list *list, const char *name, const char *value);

/**
 * Where the items are: an RFC 6901 JSON pointer to an array ("/items", "/data/results"), or ""
 * (the default) when the body itself is the array.
 */
SHEAF_API sheaf_result sheaf_list_set_items(sheaf_list *list, const char *json_pointer);

/**
 * Page k is requested with a page-number query parameter `page_param` (e.g. "page"), the first
 * page being `first_page` (>= 0; usually 0 or 1). When `size_param` is non-NULL, `page_size` (> 0) is sent
 * with it; the page size actually used for planning is the count the server returned.
 */
SHEAF_API sheaf_result sheaf_list_set_page_number(sheaf_list *list, const char *page_param,
                                                  int first_page, const char *size_param,
                                                  int page_size);

/** Page k is requested with an offset and a limit. Not supported yet: SHEAF_E_UNSUPPORTED. */
SHEAF_API sheaf_result sheaf_list_set_offset_limit(sheaf_list *list, const char *offset_param,
                                                   const char *limit_param, int limit);

/**
 * The next page is requested with a cursor query parameter whose value is the "next" value.
 * Not supported yet: SHEAF_E_UNSUPPORTED.
 */
SHEAF_API sheaf_result sheaf_list_set_cursor(sheaf_list *list, const char *cursor_param);

/** Where "next" comes from. Append-only. */
typedef enum sheaf_next_source {
    SHEAF_NEXT_NONE = 0,          /**< No next signal. */
    SHEAF_NEXT_BODY_POINTER = 1,  /**< A JSON pointer to a string URL (absolute or relative) or null. */
    SHEAF_NEXT_LINK_HEADER = 2    /**< The Link header's rel="next" (not supported yet). */
} sheaf_next_source;

/**
 * Sets where the next link comes from. `json_pointer` is required for SHEAF_NEXT_BODY_POINTER
 * and ignored otherwise. A next link is followed only within the base URL's origin.
 */
SHEAF_API sheaf_result sheaf_list_set_next(sheaf_list *list, sheaf_next_source source,
                                           const char *json_pointer);

/** Where the total item count comes from. Append-only. */
typedef enum sheaf_total_source {
    SHEAF_TOTAL_NONE = 0,          /**< No total: the end is found by the pages themselves. */
    SHEAF_TOTAL_BODY_POINTER = 1,  /**< A JSON pointer to a non-negative integer. */
    SHEAF_TOTAL_HEADER = 2         /**< A response header such as X-Total-Count (not supported yet). */
} sheaf_total_source;

/**
 * Gives this list a transport of its own, with its own `user_data`, in place of its client's
 * (which stays as it is for other lists); NULL goes back to the client's. Refused with
 * SHEAF_E_STATE once the list has started. `user_data` is borrowed and must stay valid until
 * every request handed to the transport has been answered.
 */
SHEAF_API sheaf_result sheaf_list_set_transport(sheaf_list *list, sheaf_transport_fn transport,
                                                void *user_data);

/** Sets where the total comes from; `location` is the JSON pointer or the header name. */
SHEAF_API sheaf_result sheaf_list_set_total(sheaf_list *list, sheaf_total_source source,
                                            const char *location);

/**
 * De-duplicates items by the JSON value at `json_pointer` inside each item (e.g. "/id"); the
 * first occurrence in list order wins. NULL (the default) keeps every item.
 */
SHEAF_API sheaf_result sheaf_list_set_identity(sheaf_list *list, const char *json_pointer);

/**
 * Stops the list after `max_items` items (0 = no limit), with SHEAF_LIMIT_REACHED.
 * SHEAF_E_INVALID_ARGUMENT for a negative value.
 */
SHEAF_API sheaf_result sheaf_list_set_max_items(sheaf_list *list, int64_t max_items);

/**
 * Whether the list keeps every delivered item (non-zero, the default) so that sheaf_list_prefix
 * works. Streaming callers that consume each delta set 0: memory then stays bounded by the
 * window, not the list, and sheaf_list_prefix returns SHEAF_E_STATE. sheaf_list_fetch_all always
 * keeps items.
 */
SHEAF_API sheaf_result sheaf_list_set_keep_items(sheaf_list *list, int keep);

/* ---- Running a list --------------------------------------------------------------------- */

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
 * sheaf_list_wait and sheaf_list_prefix observe it). `user_data` is borrowed until the list has
 * finished (sheaf_list_wait returned) or been freed. A list runs once: SHEAF_E_STATE otherwise.
 */
SHEAF_API sheaf_result sheaf_list_start(sheaf_list *list, sheaf_snapshot_fn on_snapshot,
                                        void *user_data);

/**
 * Starts the list in the background for pulling: instead of a callback on a library thread,
 * the caller takes the snapshots in order with sheaf_list_next, on its own thread (no foreign
 * thread ever enters the caller's code, which spares a language runtime such as Python a thread
 * hand-over per snapshot). At most a window (SHEAF_OPT_WINDOW) of snapshots wait to be taken;
 * while they do, fetching is held back, so memory stays bounded however slow the caller is.
 * A list runs once: SHEAF_E_STATE otherwise.
 */
SHEAF_API sheaf_result sheaf_list_start_pull(sheaf_list *list);

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
 * returns its outcome: SHEAF_OK, SHEAF_LIMIT_REACHED, SHEAF_E_STOPPED, SHEAF_E_CANCELLED or a
 * failure (message on the list). Items delivered before a failure stay delivered.
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

/** Requests the list has sent so far, retries and redirects included (0 before it starts). */
SHEAF_API int64_t sheaf_list_requests_made(const sheaf_list *list);

/** Requests of the list waiting for an answer right now (for progress displays). */
SHEAF_API int64_t sheaf_list_requests_in_flight(const sheaf_list *list);

/**
 * Copies the ordered prefix delivered so far (on a pulled list: through the last snapshot
 * sheaf_list_next returned) into a new JSON array string.
 * On success *out_json (freed with sheaf_free) and *out_length (may be NULL) are set.
 * Non-blocking: callable from the list's own snapshot callback.
 */
SHEAF_API sheaf_result sheaf_list_prefix(sheaf_list *list, char **out_json, size_t *out_length);

/**
 * Runs the list to its end and returns every item as one JSON array, in order and
 * de-duplicated. Blocks. Equivalent to start + wait + prefix. *out_json (freed with sheaf_free)
 * is set whenever any item arrived, even when the result is a failure (the items before it);
 * otherwise it is set to "[]". *out_length may be NULL. From inside a callback: SHEAF_E_REENTRANT.
 */
SHEAF_API sheaf_result sheaf_list_fetch_all(sheaf_list *list, char **out_json, size_t *out_length);

#ifdef __cplusplus
}
#endif

#endif /* SHEAF_H */
