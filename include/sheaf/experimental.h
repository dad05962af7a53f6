/*
 * sheaf/experimental.h - the experimental tier of Sheaf's C interface.
 *
 * Include it as <sheaf/experimental.h>; it includes sheaf.h. libsheaf.so.1 exports the calls
 * declared here as it exports the others, but sheaf.h's promise does not cover them.
 *
 * The promise here: any of these calls may change, or go, in a minor release (1.x.0), and
 * CHANGELOG.md then says so; a patch release changes none. Code that calls one is built for one
 * minor release: it checks that the library it loaded is that release
 * (sheaf_version_number() / 100 == SHEAF_VERSION_NUMBER / 100), or is rebuilt with each one. The
 * ABI baseline check leaves them out (Tests/abi/check_compat.sh compares what sheaf.h declares
 * with Tests/abi/baseline/libsheaf.abi): a change to one is not a break of libsheaf.so.1's ABI.
 *
 * A call is here because it was added after 1.0.0 and fewer than two of the bindings (Python,
 * Go, Rust) use it yet, or because it exists for one binding's speed. It is promoted once two
 * bindings use it: it moves to sheaf.h as it is, and keeps sheaf.h's promise from then on
 * (Tests/abi/check_tiers.py fails while an experimental call is used by two bindings). No call
 * of sheaf.h ever moves here.
 *
 * Everything else is sheaf.h's: its types, and the rules of its opening comment (thread safety,
 * memory, errors, versioned structs) hold here as they do there.
 */
#ifndef SHEAF_EXPERIMENTAL_H
#define SHEAF_EXPERIMENTAL_H

#include "../sheaf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Partitions ------------------------------------------------------------------------- */

/**
 * sheaf_list_partitions_at_once(list, n, n, out_json, out_length): a plan whose `n` partitions
 * all run at the same time, each with the planning client's SHEAF_OPT_MAX_WINDOW shared out
 * among all `n`. Results, and ownership of *out_json (freed with sheaf_free), as
 * sheaf_list_partitions_at_once says.
 *
 * Experimental: added after 1.0.0 and used by no binding (Python and Go call
 * sheaf_list_partitions_at_once, with `at_once` = n when every partition runs at once).
 */
SHEAF_API sheaf_result sheaf_list_partitions(sheaf_list *list, int64_t n, char **out_json, size_t *out_length);

/* ---- Polling a list: what is new since an offset ----------------------------------------- */

/**
 * One poll of a list that syncs (its description has "until", a newest-first list's bound, or
 * "since", a server-side filter; and an identity signal): fetches the items that are new since
 * `offset` and hands them over with the offset after them. Call it again with that offset, every
 * few seconds, and each item of the list is delivered once: the offset is the greatest value of
 * the sync field delivered with the identities of the items at that value ("seen"), so an item
 * added later in the same second as the last one delivered is new, and one seen is not delivered
 * again (a bound goes past the seen items at its value; a since filter, which must include its
 * value, as created[gte] or GitHub's since do, leaves them out, and leaves out what lies below
 * its value when a server ignores the filter).
 *
 * `list` is a template: it is never started by this call (SHEAF_E_STATE once it was started),
 * and each call runs a new run of its path, query, headers and description on its client, so
 * one list is polled again and again. Blocks until the poll has ended; SHEAF_E_REENTRANT from a
 * callback. A poll that finds nothing new costs one request (page one; revalidated when the
 * client has a cache, sheaf_client_set_cache).
 *
 * `offset`: NULL for the first poll (from the description's own "until" or "since" value: the
 * whole list when it names none), else an offset a poll of this list gave (copied; UTF-8,
 * NUL-terminated). `through`: NULL, or an offset a later poll gave: the items after it are left
 * out, so that the range from `offset` through `through` is read again as it was delivered (a
 * stream's batch replayed after a crash; items the server dropped meanwhile are not in it); a
 * `through` whose "value" is null (a poll of a list that was empty) ends a range that holds
 * nothing, and nothing is sent.
 * An offset is JSON, {"list": the list's redacted URL, "field": the JSON pointer, "value": the
 * greatest value delivered (null: none yet), "seen": [identities at it]}: the "sync_state" that
 * sheaf_list_description prints; it holds no credential, and can be stored as it is.
 *
 * On SHEAF_OK, *out_items holds the new items in the list's order (newest first for a bound),
 * written in `format` as sheaf_list_start_write writes them (SHEAF_FORMAT_JSON: a JSON array;
 * SHEAF_FORMAT_JSON_LINES: a line per item, nothing for none), *out_length its length, and
 * *out_offset the offset to poll from next (NUL-terminated); both are the caller's, freed with
 * sheaf_free (*out_items is NUL-terminated too). On failure both are NULL and
 * nothing is delivered: poll again from the same offset (a transient failure was already retried
 * by the client's retry policy; a spent rate limit is SHEAF_E_RATE_LIMITED, whose message says
 * when it resets). SHEAF_E_INVALID_ARGUMENT for a NULL list or out pointer, an unknown format, an offset that is not
 * one (the message names the field), an offset of another field or another list (its "list" is
 * not this list's URL), a description that does not sync or has no identity signal, or an item
 * limit or a page or request budget (a poll cut short would leave a gap); sheaf_list_error says
 * why.
 *
 * Experimental: added after 1.0.0 and used by one binding (Python's Client.watch and the sheaf
 * watch command).
 */
SHEAF_API sheaf_result sheaf_list_poll(sheaf_list *list, const char *offset, const char *through, sheaf_format format,
                                       char **out_items, size_t *out_length, char **out_offset);

/* ---- Deltas a 64-bit decoder reads as they are ------------------------------------------ */

/**
 * Whether the delta of the snapshot the caller has now holds 19 or more digits in a row: the one
 * sheaf_list_next last handed out, or, inside the list's snapshot callback, the one being
 * delivered. *out_long is 1 when it does (an integer that may not fit in 64 bits, or digits in a
 * string), 0 when it does not: every number in delta_json then fits in a signed 64-bit integer,
 * and a decoder that reads integers as 64 bits can read it as it is. 0 when the caller has no
 * snapshot (before the first; outside the callback of a list that is not pulled). Found when
 * asked, by a pass over the delta at memory speed (8 bytes a step). Does not block.
 *
 * Experimental: a hook for one binding's speed (Python hands such a delta to orjson straight
 * from the library's memory, with neither a copy nor a pass of its own).
 */
SHEAF_API sheaf_result sheaf_list_delta_has_long_digits(sheaf_list *list, int *out_long);

/**
 * Whether the items of the delta the caller has now hold 19 or more digits in a row: the one
 * sheaf_group_next last handed out, or, inside the group's callback, the one being delivered.
 * As sheaf_list_delta_has_long_digits says for a list's snapshot: *out_long is 0 when every
 * number in delta_json fits in a signed 64-bit integer, 1 when one may not (or digits run on in
 * a string), 0 when the caller has no delta. Found when asked; does not block.
 *
 * Experimental: as sheaf_list_delta_has_long_digits, for Python's groups.
 */
SHEAF_API sheaf_result sheaf_group_delta_has_long_digits(sheaf_group *group, int *out_long);

/* ---- Groups for an event loop ----------------------------------------------------------- */

/**
 * Before the group starts: an event loop watches `fd` instead of a thread waiting, as
 * sheaf_list_set_notify_fd describes for a list: for a pulled group, each time sheaf_group_next
 * has something new (a delta, or the end); for a group with a callback, after each delta
 * delivered and once at the end. -1 (the default) turns it off. `fd` stays the caller's: keep it
 * open until sheaf_group_free returns. SHEAF_E_STATE once started; SHEAF_E_INVALID_ARGUMENT for a
 * negative fd other than -1.
 *
 * Experimental: added after 1.0.0 and used by one binding (Python's AsyncClient groups).
 */
SHEAF_API sheaf_result sheaf_group_set_notify_fd(sheaf_group *group, int fd);

/* ---- Items as Arrow --------------------------------------------------------------------- */

/*
 * The Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html): two
 * structs whose layout Arrow fixes for every version, so any Arrow implementation (pyarrow's
 * _import_from_c, arrow-rs's FFI, nanoarrow) takes what sheaf_arrow_from_json fills. Declared
 * here exactly as the interface defines them, under its own guard.
 */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
    const char *format;                    /**< The type: "+s" struct, "+l" list, "l" int64, "g" double, "u" utf8, "b" bool, "n" null, ... */
    const char *name;                      /**< The field's name ("" for the top). */
    const char *metadata;                  /**< NULL here. */
    int64_t flags;                         /**< ARROW_FLAG_NULLABLE on every field. */
    int64_t n_children;                    /**< Fields of a struct; 1 for a list. */
    struct ArrowSchema **children;         /**< The children's schemas. */
    struct ArrowSchema *dictionary;        /**< NULL here. */
    void (*release)(struct ArrowSchema *); /**< Frees it and its children; NULL once released. */
    void *private_data;                    /**< The producer's. */
};

struct ArrowArray {
    int64_t length;                        /**< Rows (values). */
    int64_t null_count;                    /**< Null rows. */
    int64_t offset;                        /**< 0 here. */
    int64_t n_buffers;                     /**< Buffers of the type: validity first (NULL when no row is null). */
    int64_t n_children;                    /**< As the schema's. */
    const void **buffers;                  /**< The buffers. */
    struct ArrowArray **children;          /**< The children's arrays. */
    struct ArrowArray *dictionary;         /**< NULL here. */
    void (*release)(struct ArrowArray *);  /**< Frees it, its buffers and its children; NULL once released. */
    void *private_data;                    /**< The producer's. */
};

#endif /* ARROW_C_DATA_INTERFACE */

/**
 * Reads `json` (`length` bytes: a JSON array of objects, such as a snapshot's delta_json) into
 * one Arrow struct array, a row per object, in one pass and without a tree: what a caller that
 * wants a table (pyarrow, a columnar writer) takes instead of parsing the items again.
 *
 * The columns follow Arrow's own JSON reader, so the batch equals what pyarrow.json reads from
 * the same objects:
 *   - `known` (borrowed, may be NULL) is a struct schema ("+s") whose fields keep their types:
 *     bool "b", int64 "l", double "g" (an integer read as a double), utf8 "u", struct "+s",
 *     list "+l" of these. Its fields come first, in its order.
 *   - Every other field takes the type of its first value that is not null: int64 for an
 *     integer, double for a number with a fraction or exponent (an inferred int64 field that
 *     meets one becomes double), utf8, bool, struct (fields in the order first seen), list
 *     (element field "item"); null while only nulls came. These follow the known fields, in
 *     the order they first appear. An absent field is null. Every field is nullable.
 *
 * On SHEAF_OK, *out_schema and *out_array are filled; the caller owns both and releases each
 * with its own release callback (importing them into pyarrow does). On any failure both are
 * left released (release NULL) and nothing is allocated:
 *   SHEAF_E_BAD_PAGE       the items do not fit, where Arrow's reader would read them otherwise
 *                          or refuse them: an item that is not an object, a value of another
 *                          kind than its field's, a name given twice in an object, an integer
 *                          beyond 64 bits, a number beyond a double's range, a lone surrogate
 *                          escape, bytes that are not JSON. The error names the item (from 0)
 *                          and the field ("owner.id", "tags[]").
 *   SHEAF_E_UNSUPPORTED    `known` holds a type this reader does not build (a timestamp, a
 *                          32-bit integer, a field not nullable, ...); the error names the field
 *                          and its format.
 *   SHEAF_E_INVALID_ARGUMENT   json, out_schema or out_array NULL, or `known` not a struct.
 * Does not block; callable from any thread, and from callbacks.
 *
 * Experimental: added after 1.0.0 and used by one binding (Python's fetch_arrow, stream_batches
 * and the engines read every snapshot this way).
 */
SHEAF_API sheaf_result sheaf_arrow_from_json(const char *json, size_t length, const struct ArrowSchema *known,
                                             struct ArrowSchema *out_schema, struct ArrowArray *out_array);

#ifdef __cplusplus
}
#endif

#endif /* SHEAF_EXPERIMENTAL_H */
