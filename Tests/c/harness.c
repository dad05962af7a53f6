/*
 * harness.c - the C harness of libsheaf.so: drives the public C API against the loopback test
 * server (Tests/server/api_server.py) and checks what the header promises, from a C user's seat.
 *
 * usage: sheaf_harness [--quick] [--list] [NAME-FRAGMENT...]
 *   --quick   a subset on smaller lists, without timing-sensitive checks (for the valgrind run)
 *   --list    print the test names and exit
 *   fragments run only the tests whose name contains one of them
 *
 * Each test is a function named as a sentence of the behaviour it pins. Checks report file:line and
 * the failing expression and never abort; the last line is "N passed, N failed".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "blocking_transport.h"
#include "check.h"
#include "http_get.h"
#include "sheaf.h"
#include "test_server.h"

#ifndef SHEAF_SOURCE_DIR
#error "SHEAF_SOURCE_DIR (the repository root) must be defined by the build"
#endif
#ifndef SHEAF_PYTHON3
#define SHEAF_PYTHON3 "python3"
#endif

#define TOKEN "sheaf-harness-token-7f3a9c"

static int g_quick;
static test_server g_server;   /* most tests */
static test_server g_other;    /* a second origin, for the cross-origin test */

/* List sizes: the full run uses the sizes of the brief, --quick smaller ones. */
static int list_size(void) { return g_quick ? 200 : 1000; }
static int page_size(void) { return g_quick ? 20 : 50; }

/* ---- small helpers ------------------------------------------------------------------------- */

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0) {}
}

static json_t *parse_array(const char *text, size_t length) {
    json_error_t error;
    json_t *json = json_loadb(text, length, 0, &error);
    if (json == NULL) {
        fprintf(stderr, "    not JSON (%s at %d): %.200s\n", error.text, error.position, text);
        return NULL;
    }
    if (!json_is_array(json)) {
        fprintf(stderr, "    not a JSON array: %.200s\n", text);
        json_decref(json);
        return NULL;
    }
    return json;
}

/* Every item of `items` is exactly {"id":i,"name":"item-<i>"} for i = first, first+1, ... */
static int check_items(const json_t *items, long first, long count, const char *text, const char *file, int line) {
    char message[512];
    if (items == NULL) return check_that(0, "items were parsed (see above)", file, line);
    if ((long)json_array_size(items) != count) {
        snprintf(message, sizeof message, "%s has %zu items, expected %ld", text, json_array_size(items), count);
        return check_that(0, message, file, line);
    }
    for (long i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof name, "item-%ld", first + i);
        json_t *expected = json_pack("{s:I,s:s}", "id", (json_int_t)(first + i), "name", name);
        json_t *actual = json_array_get(items, (size_t)i);
        int same = json_equal(actual, expected);
        json_decref(expected);
        if (!same) {
            char *got = json_dumps(actual, JSON_COMPACT | JSON_ENCODE_ANY);
            snprintf(message, sizeof message, "%s[%ld] is %.200s, expected {\"id\":%ld,\"name\":\"%s\"}", text, i,
                     got ? got : "(nothing)", first + i, name);
            free(got);
            return check_that(0, message, file, line);
        }
    }
    return 1;
}
#define CHECK_ITEMS(items, first, count) check_items((items), (first), (count), #items, __FILE__, __LINE__)

static sheaf_client *client_for(const test_server *server, const char *token) {
    sheaf_client *client = NULL;
    CHECK_RESULT(sheaf_client_new(&client, server->base_url), SHEAF_OK);
    CHECK(client != NULL);
    if (client != NULL && token != NULL)
        CHECK_CLIENT_RESULT(client, sheaf_client_set_auth(client, SHEAF_AUTH_BEARER, token), SHEAF_OK);
    return client;
}

/* The message of the list's error, copied into `buffer` ("" when there is none). */
static const char *list_message(const sheaf_list *list, char *buffer, size_t size) {
    sheaf_error *error = sheaf_list_error(list);
    snprintf(buffer, size, "%s", error ? error->message : "");
    sheaf_error_free(error);
    return buffer;
}

/* The HTTP status of the list's error (0 when there is none). */
static int list_http_status(const sheaf_list *list) {
    sheaf_error *error = sheaf_list_error(list);
    int status = error ? error->http_status : 0;
    sheaf_error_free(error);
    return status;
}

/* Reads `signal` from the body at `pointer`; NULL: the list has no such signal. */
static void read_body(sheaf_list *list, sheaf_signal signal, const char *pointer) {
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, signal, pointer ? SHEAF_SOURCE_BODY : SHEAF_SOURCE_NONE, pointer),
                      SHEAF_OK);
}

static void set_option(sheaf_client *client, sheaf_option option, int64_t value) {
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, option, value), SHEAF_OK);
}

/* Retries fast, so the retry tests take milliseconds. */
static void retry_fast(sheaf_client *client) {
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);
    set_option(client, SHEAF_OPT_RETRY_MAX_MS, 20);
}

enum anchor_parts {
    PAGE_NUMBER = 1,   /* page=k from 1, per_page=<size> */
    NEXT = 2,          /* /next_page */
    TOTAL = 4,         /* /total */
    IDENTITY = 8,      /* /id */
    ANCHOR_ALL = PAGE_NUMBER | NEXT | TOTAL | IDENTITY
};

/* A list of the /anchor shape (items "/items"), with the chosen parts of its description. */
static sheaf_list *anchor_list(sheaf_client *client, const char *path, int per_page, unsigned parts) {
    sheaf_list *list = NULL;
    if (client == NULL) return NULL;
    if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, path), SHEAF_OK) || !CHECK(list != NULL))
        return NULL;
    /* The parts not chosen are absent (not detected); with neither page numbers nor next links,
     * the list is its first page. */
    read_body(list, SHEAF_SIGNAL_ITEMS, "/items");
    if (parts & PAGE_NUMBER)
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 1, "per_page", per_page),
                          SHEAF_OK);
    else
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, (parts & NEXT) ? SHEAF_PAGING_NEXT : SHEAF_PAGING_SINGLE,
                                                      NULL, 0, NULL, 0), SHEAF_OK);
    read_body(list, SHEAF_SIGNAL_NEXT, (parts & NEXT) ? "/next_page" : NULL);
    read_body(list, SHEAF_SIGNAL_TOTAL, (parts & TOTAL) ? "/total" : NULL);
    for (int signal = SHEAF_SIGNAL_CURSOR; signal <= SHEAF_SIGNAL_IS_LAST; signal++)
        if (signal != SHEAF_SIGNAL_TOTAL) read_body(list, (sheaf_signal)signal, NULL);
    if (parts & IDENTITY)
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_ITEM, "/id"), SHEAF_OK);
    return list;
}

/* The list most tests use: list_size() items of /anchor at page_size() a page, fully described,
 * with `query` ("" or e.g. "&dup=1") added to the path. */
static sheaf_list *standard_list(sheaf_client *client, const char *query) {
    char path[256];
    snprintf(path, sizeof path, "/anchor?n=%d%s", list_size(), query);
    return anchor_list(client, path, page_size(), ANCHOR_ALL);
}

/* sheaf_list_fetch_all, with the JSON parsed (NULL if it is not an array). */
static sheaf_result fetch_all(sheaf_list *list, json_t **out_items) {
    char *json = NULL;
    size_t length = 0;
    *out_items = NULL;
    if (list == NULL) return SHEAF_E_INVALID_ARGUMENT;
    sheaf_result result = sheaf_list_fetch_all(list, &json, &length);
    if (CHECK(json != NULL)) {
        CHECK_INT(length, strlen(json));
        *out_items = parse_array(json, length);
    }
    sheaf_free(json);
    return result;
}

/* Fetches the whole list and checks it is exactly items 0..count-1, in order. */
static void check_complete_list(sheaf_list *list, int count) {
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, count);
    }
    json_decref(items);
}

/* Waits (bounded) until requests of earlier tests have left the server, then clears its state. */
static void fresh_server(const test_server *server) {
    long long deadline = now_ms() + 15000;
    for (;;) {
        json_t *stats = test_server_stats(server);
        json_t *in_flight = json_object_get(stats, "in_flight");
        int idle = json_is_integer(in_flight) && json_integer_value(in_flight) == 0;
        json_decref(stats);
        if (idle || now_ms() > deadline) break;
        sleep_ms(20);
    }
    CHECK(test_server_reset(server));
}

/* The list as the server serves it, walked with the harness's own client (not Sheaf). */
static json_t *walk_server_list(const test_server *server, const char *first_path, const char *items_key,
                                const char *next_key) {
    char url[4096];
    json_t *all = json_array();
    snprintf(url, sizeof url, "%s%s", server->base_url, first_path);
    for (int pages = 0; pages < 10000; pages++) {
        http_response response;
        char error[256];
        if (http_get(url, 0, NULL, NULL, 15000, 0, &response, error, sizeof error) != HTTP_GET_OK) {
            fprintf(stderr, "    walking %s: %s\n", url, error);
            break;
        }
        json_t *page = json_loadb(response.body, response.body_length, 0, NULL);
        http_response_free(&response);
        json_array_extend(all, json_object_get(page, items_key));
        const char *next = json_string_value(json_object_get(page, next_key));
        if (next != NULL) snprintf(url, sizeof url, "%s", next);
        json_decref(page);
        if (next == NULL) return all;
    }
    json_decref(all);
    return NULL;
}

/* ---- snapshot recorder ---------------------------------------------------------------------- */

typedef struct recorder {
    atomic_int calls;
    atomic_int inside;        /* snapshot callbacks of this list running right now */
    atomic_int overlaps;      /* callbacks that began while another was running */
    atomic_int closed;        /* set by the test once the list has been freed */
    atomic_int after_close;   /* callbacks that began after that */
    int stop_at;              /* return non-zero from this call on (0: never) */
    int check_prefix;         /* compare sheaf_list_prefix with the deltas so far */
    int first_page_size;      /* > 0: the first snapshot must be exactly page one */
    int64_t expected_items;   /* >= 0: every snapshot's expected_items */
    int try_blocking_calls;   /* call blocking functions from the callback (they must refuse) */
    sheaf_list *other_list;   /* an unstarted list for that */
    sheaf_list *pulled_list;  /* a list started for pulling, for that too */
    json_t *deltas;           /* the concatenation of every delta */
    size_t last_items, last_pages;
    int64_t last_expected_pages;
} recorder;

static void recorder_init(recorder *r) {
    memset(r, 0, sizeof *r);
    r->expected_items = -1;
    r->deltas = json_array();
}

static void recorder_free(recorder *r) {
    json_decref(r->deltas);
    r->deltas = NULL;
}

static void record_delta(recorder *r, sheaf_list *list, const sheaf_snapshot *snapshot, int call) {
    if (!CHECK(snapshot->delta_json != NULL)) return;
    CHECK_INT(strlen(snapshot->delta_json), snapshot->delta_length);
    json_t *delta = parse_array(snapshot->delta_json, snapshot->delta_length);
    if (!CHECK(delta != NULL)) return;
    CHECK_INT(json_array_size(delta), snapshot->delta_items);
    if (call == 1) {
        CHECK_INT(snapshot->pages, 1);
        if (r->first_page_size > 0) CHECK_ITEMS(delta, 0, r->first_page_size);
    }
    json_array_extend(r->deltas, delta);
    json_decref(delta);
    CHECK_INT(snapshot->items, json_array_size(r->deltas));
    CHECK(snapshot->items >= r->last_items);
    CHECK(snapshot->pages >= r->last_pages);
    if (r->expected_items >= 0) CHECK_INT(snapshot->expected_items, r->expected_items);
    r->last_items = snapshot->items;
    r->last_pages = snapshot->pages;
    r->last_expected_pages = snapshot->expected_pages;

    if (r->check_prefix) {
        char *prefix_json = NULL;
        size_t prefix_length = 0;
        if (CHECK_LIST_RESULT(list, sheaf_list_prefix(list, &prefix_json, &prefix_length), SHEAF_OK) &&
            CHECK(prefix_json != NULL)) {
            CHECK_INT(prefix_length, strlen(prefix_json));
            json_t *prefix = parse_array(prefix_json, prefix_length);
            if (!CHECK(prefix != NULL && json_equal(prefix, r->deltas)))
                fprintf(stderr, "    prefix has %zu items, the deltas so far %zu\n",
                        prefix ? json_array_size(prefix) : 0, json_array_size(r->deltas));
            json_decref(prefix);
        }
        sheaf_free(prefix_json);
    }
}

static void call_blocking_functions(recorder *r, sheaf_list *list) {
    char *json = NULL;
    CHECK_RESULT(sheaf_list_wait(list), SHEAF_E_REENTRANT);
    CHECK_RESULT(sheaf_list_fetch_all(list, &json, NULL), SHEAF_E_REENTRANT);
    sheaf_free(json);
    json = NULL;
    if (r->other_list != NULL) {
        CHECK_RESULT(sheaf_list_fetch_all(r->other_list, &json, NULL), SHEAF_E_REENTRANT);
        sheaf_free(json);
    }
    if (r->pulled_list != NULL) {
        const sheaf_snapshot *snapshot = NULL;
        CHECK_RESULT(sheaf_list_next(r->pulled_list, 100, &snapshot), SHEAF_E_REENTRANT);
        CHECK_RESULT(sheaf_list_next(r->pulled_list, 0, &snapshot), SHEAF_PENDING);   /* not waiting: allowed */
    }
}

static int record_snapshot(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
    recorder *r = user_data;
    if (atomic_fetch_add(&r->inside, 1) != 0) atomic_fetch_add(&r->overlaps, 1);
    if (atomic_load(&r->closed)) atomic_fetch_add(&r->after_close, 1);
    int call = atomic_fetch_add(&r->calls, 1) + 1;
    if (CHECK(snapshot != NULL) && CHECK_INT(snapshot->version, SHEAF_SNAPSHOT_VERSION))
        record_delta(r, list, snapshot, call);
    if (r->try_blocking_calls && call == 1) call_blocking_functions(r, list);
    sleep_ms(1);   /* widens the window in which a concurrent second callback would be caught */
    atomic_fetch_sub(&r->inside, 1);
    return r->stop_at > 0 && call >= r->stop_at;
}

/* ---- a blocking custom transport (blocking_transport.c), inspected ------------------------ */

/* The harness's checks of the request a transport receives; `reentry_list`, when set, must refuse
   fetch_all from inside the transport. */
static void inspect_request(sheaf_exchange *request, int call, void *reentry_list) {
    if (reentry_list != NULL && call == 1) {
        char *json = NULL;
        CHECK_RESULT(sheaf_list_fetch_all(reentry_list, &json, NULL), SHEAF_E_REENTRANT);
        sheaf_free(json);
    }
    const char *method = sheaf_exchange_method(request);
    CHECK(method != NULL && strcmp(method, "GET") == 0);
    CHECK(sheaf_exchange_url(request) != NULL);
    if (call == 1) {
        size_t header_count = sheaf_exchange_header_count(request);
        const char *name = "untouched", *value = "untouched";
        CHECK_RESULT(sheaf_exchange_header(request, header_count, &name, &value), SHEAF_E_INVALID_ARGUMENT);
        CHECK(strcmp(name, "untouched") == 0 && strcmp(value, "untouched") == 0);
        size_t body_length = 99;
        CHECK(sheaf_exchange_body(request, &body_length) == NULL);
        CHECK_INT(body_length, 0);
        CHECK(sheaf_exchange_max_body_bytes(request) > 0);
        CHECK(sheaf_exchange_timeout_ms(request) >= 0);
        CHECK(!sheaf_exchange_is_cancelled(request));
    }
}

/* A blocking transport whose every request the harness inspects. */
static void inspected_transport_init(blocking_transport *transport, sheaf_list *reentry_list) {
    blocking_transport_init(transport);
    transport->inspect = inspect_request;
    transport->inspect_data = reentry_list;
}

/* ---- tests: the API's own contract ---------------------------------------------------------- */

static void versions_agree_and_every_result_has_a_text(void) {
    CHECK_INT(sheaf_version_number(), SHEAF_VERSION_NUMBER);
    CHECK_INT(SHEAF_VERSION_NUMBER, SHEAF_VERSION_MAJOR * 10000 + SHEAF_VERSION_MINOR * 100 + SHEAF_VERSION_PATCH);
    CHECK_STR(sheaf_version_string(), SHEAF_VERSION_STRING);
    for (int code = -1; code <= SHEAF_E_INTERNAL + 5; code++) {
        const char *text = sheaf_result_str(code);
        if (!CHECK(text != NULL && text[0] != '\0')) fprintf(stderr, "    for result %d\n", code);
    }
    CHECK(sheaf_result_str(1000000) != NULL);
    CHECK(strcmp(sheaf_result_str(SHEAF_PENDING), sheaf_result_str(1000000)) != 0);
    CHECK(strcmp(sheaf_result_str(SHEAF_OK), sheaf_result_str(SHEAF_E_LOOP)) != 0);
}

static void null_handles_and_bad_arguments_are_rejected(void) {
    sheaf_client *client = (sheaf_client *)&client;   /* a non-NULL sentinel the call must clear */
    const char *bad_urls[] = { "", "not a url", "ftp://127.0.0.1/", "/relative/path", "http://", "127.0.0.1:80" };
    CHECK_RESULT(sheaf_client_new(&client, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK(client == NULL);
    for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
        client = (sheaf_client *)&client;
        if (!CHECK_RESULT(sheaf_client_new(&client, bad_urls[i]), SHEAF_E_INVALID_ARGUMENT))
            fprintf(stderr, "    for base URL \"%s\"\n", bad_urls[i]);
        CHECK(client == NULL);
        if (client != NULL && client != (sheaf_client *)&client) sheaf_client_free(client);
    }
    CHECK_RESULT(sheaf_client_new(NULL, g_server.base_url), SHEAF_E_INVALID_ARGUMENT);
    /* A password in the base URL is refused, and not repeated in the message. */
    client = (sheaf_client *)&client;
    CHECK_RESULT(sheaf_client_new(&client, "http://user:hunter2@127.0.0.1:1/"), SHEAF_E_INVALID_ARGUMENT);
    CHECK(client == NULL);
    sheaf_error *error = sheaf_last_error();
    if (CHECK(error != NULL)) {
        CHECK_INT(error->version, SHEAF_ERROR_VERSION);
        CHECK_INT(error->code, SHEAF_E_INVALID_ARGUMENT);
        CHECK(strlen(error->message) > 0 && strstr(error->message, "hunter2") == NULL);
        CHECK(error->url != NULL && error->body != NULL && error->hint != NULL && error->json_offset == -1);
    }
    sheaf_error_free(error);
    sheaf_error_free(NULL);
    /* Invalid UTF-8 is refused, never repaired. */
    CHECK_RESULT(sheaf_client_new(&client, "http://127.0.0.1:1/\xff"), SHEAF_E_INVALID_ARGUMENT);

    client = client_for(&g_server, NULL);
    if (client == NULL) return;
    CHECK(sheaf_last_error() == NULL);   /* the last call succeeded */
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_BEARER, "tok\xc3\x28"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_BEARER, "tok\nen"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, (sheaf_auth)77, "x"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(NULL, SHEAF_AUTH_NONE, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_NONE, NULL), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_option(NULL, SHEAF_OPT_WINDOW, 4), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_WINDOW, 0), SHEAF_E_INVALID_ARGUMENT);
    error = sheaf_last_error();
    CHECK(error != NULL && strlen(error->message) > 0);
    sheaf_error_free(error);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_BODY_BYTES, INT64_MAX), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_WINDOW, 65), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 101), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_PAGES, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, (sheaf_option)999, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_WINDOW, 64), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, 3), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, -1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, SHEAF_HTTP_2_PRIOR_KNOWLEDGE), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, SHEAF_HTTP_1_1), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, SHEAF_HTTP_AUTO), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_transport(NULL, blocking_transport_get, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);

    sheaf_list *list = (sheaf_list *)&list;
    CHECK_RESULT(sheaf_list_new(&list, NULL, "/anchor"), SHEAF_E_INVALID_ARGUMENT);
    CHECK(list == NULL);
    list = (sheaf_list *)&list;
    CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK(list == NULL);
    CHECK_RESULT(sheaf_list_new(NULL, client, "/anchor"), SHEAF_E_INVALID_ARGUMENT);

    list = NULL;
    if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK) && CHECK(list != NULL)) {
        char *json = NULL;
        CHECK_RESULT(sheaf_list_set_signal(NULL, SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_BODY, "/items"), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_BODY, "items"),
                          SHEAF_E_INVALID_ARGUMENT);
        sheaf_error *list_error = sheaf_list_error(list);
        CHECK(list_error != NULL && strstr(list_error->message, "items") != NULL);
        sheaf_error_free(list_error);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_ITEM, "id"),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_BODY, NULL),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, NULL, 1, NULL, 0),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 1, "per_page", 0),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_max_items(list, -1), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_set_keep_items(NULL, 0), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_set_transport(NULL, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_add_query(list, NULL, "x"), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_prefix(list, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_BODY, "/items"), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 0, NULL, 0), SHEAF_OK);
        CHECK(sheaf_list_error(list) == NULL);   /* the last call on the list succeeded */
        CHECK_RESULT(sheaf_list_start(NULL, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_wait(NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_prefix(NULL, &json, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_fetch_all(NULL, &json, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_fetch_all(list, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        sheaf_free(json);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);

    sheaf_list_free(NULL);
    sheaf_client_free(NULL);
    sheaf_free(NULL);
}

/* Every function of the header, handed NULL for each handle and out-parameter, answers
 * SHEAF_E_INVALID_ARGUMENT (or a documented neutral value) without touching anything; started
 * lists refuse their setters with SHEAF_E_STATE; absurd options are refused by value. */
static void a_careless_caller_gets_a_result_code_never_a_crash(void) {
    char *json = (char *)&json;
    size_t length = 99;
    const sheaf_snapshot *snapshot = (const sheaf_snapshot *)&snapshot;
    const char *name = NULL, *value = NULL;
    CHECK_RESULT(sheaf_client_set_auth(NULL, SHEAF_AUTH_BEARER, "t"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_option(NULL, SHEAF_OPT_WINDOW, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_transport(NULL, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_add_query(NULL, "a", "b"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_set_paging(NULL, SHEAF_PAGING_NEXT, NULL, 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_use_preset(NULL, "github"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_description(NULL, &json, &length), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_set_max_items(NULL, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start_pull(NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_next(NULL, 0, &snapshot), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_cancel(NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_preset_description(NULL, &json, &length), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_preset_description("github", NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK(sheaf_preset_name((size_t)-1) == NULL);
    CHECK(sheaf_list_error(NULL) == NULL);
    CHECK_INT(sheaf_list_requests_made(NULL), 0);
    CHECK_INT(sheaf_list_requests_in_flight(NULL), 0);
    CHECK(sheaf_exchange_method(NULL) == NULL && sheaf_exchange_url(NULL) == NULL);
    CHECK_INT(sheaf_exchange_header_count(NULL), 0);
    CHECK_RESULT(sheaf_exchange_header(NULL, 0, &name, &value), SHEAF_E_INVALID_ARGUMENT);
    CHECK(sheaf_exchange_body(NULL, &length) == NULL && length == 0);
    CHECK_INT(sheaf_exchange_timeout_ms(NULL), 0);
    CHECK_INT(sheaf_exchange_max_body_bytes(NULL), 0);
    CHECK_INT(sheaf_exchange_is_cancelled(NULL), 0);
    CHECK_RESULT(sheaf_exchange_add_response_header(NULL, "a", "b"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_exchange_respond(NULL, 200, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_exchange_fail(NULL, SHEAF_TRANSPORT_OTHER, NULL), SHEAF_E_INVALID_ARGUMENT);

    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    /* Absurd option values. */
    const struct { sheaf_option option; int64_t value; } absurd[] = {
        { SHEAF_OPT_WINDOW, -1 }, { SHEAF_OPT_WINDOW, INT64_MAX }, { SHEAF_OPT_MAX_PAGES, INT64_MIN },
        { SHEAF_OPT_MAX_BODY_BYTES, 0 }, { SHEAF_OPT_MAX_BODY_BYTES, ((int64_t)1 << 40) + 1 },
        { SHEAF_OPT_MAX_ATTEMPTS, -5 }, { SHEAF_OPT_RETRY_BASE_MS, -1 }, { SHEAF_OPT_TIMEOUT_MS, -1 },
        { SHEAF_OPT_CONNECT_TIMEOUT_MS, INT64_MIN }, { SHEAF_OPT_MAX_REDIRECTS, 51 }, { (sheaf_option)0, 1 },
    };
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++)
        if (!CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, absurd[i].option, absurd[i].value),
                                 SHEAF_E_INVALID_ARGUMENT))
            fprintf(stderr, "    option %d = %lld\n", (int)absurd[i].option, (long long)absurd[i].value);
    /* Wrong call order: a started list refuses its setters, a second start, a pull on a pushed list. */
    sheaf_list *list = standard_list(client, "");
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_STATE);           /* not started */
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 0, &snapshot), SHEAF_E_STATE);
        CHECK(snapshot == NULL);
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_NEXT, NULL, 0, NULL, 0), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_NONE, NULL), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, "github"), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "a", "b"), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 0, &snapshot), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_cancel(list), SHEAF_OK);              /* after the end: a no-op */
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);                /* the outcome again */
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

/* The description JSON is the one vocabulary: what a list or a preset prints is taken back as it is. */
static void a_description_is_set_as_the_json_the_library_prints(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    for (size_t i = 0; i < sheaf_preset_count(); i++) {
        char *printed = NULL, *again = NULL;
        size_t length = 0, again_length = 0;
        sheaf_list *list = NULL;
        if (!CHECK_RESULT(sheaf_preset_description(sheaf_preset_name(i), &printed, &length), SHEAF_OK)) continue;
        if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK)
            && CHECK_LIST_RESULT(list, sheaf_list_set_description(list, printed), SHEAF_OK)
            && CHECK_LIST_RESULT(list, sheaf_list_description(list, &again, &again_length), SHEAF_OK)) {
            json_t *expected = json_loadb(printed, length, 0, NULL), *actual = json_loadb(again, again_length, 0, NULL);
            if (!CHECK(expected != NULL && json_equal(expected, actual)))
                fprintf(stderr, "    preset %s: set %s, described %s\n", sheaf_preset_name(i), printed, again);
            json_decref(expected);
            json_decref(actual);
        }
        sheaf_free(again);
        sheaf_free(printed);
        sheaf_list_free(list);
    }

    /* A bad one is refused naming its field, and the list is left as it was. */
    sheaf_list *list = NULL;
    if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor?n=120"), SHEAF_OK)) {
        sheaf_client_free(client);
        return;
    }
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{\"paging\": {\"kind\": \"offset\", \"param\": \"o\", \"frist\": 0}}"),
                      SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_list_error(list);
    if (CHECK(error != NULL)) CHECK_STR(error->message, "the description's /paging/frist: unknown field; /paging has kind, param, first, size_param, size, detected");
    sheaf_error_free(error);
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{\"paging\": {\"kind\": \"page_number\", \"param\": \"page\", \"first\": 99999999999999999999}}"),
                      SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{\"preset\": \"anchor\", \"paging\": {\"size\": 25}}"), SHEAF_OK);
    char *items = NULL;
    size_t length = 0;
    CHECK_LIST_RESULT(list, sheaf_list_fetch_all(list, &items, &length), SHEAF_OK);
    json_t *parsed = items ? json_loadb(items, length, 0, NULL) : NULL;
    CHECK_ITEMS(parsed, 0, 120);
    json_decref(parsed);
    sheaf_free(items);
    /* Only before the list starts. */
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{}"), SHEAF_E_STATE);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void description_calls_refuse_what_cannot_run(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL || !CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK)) {
        sheaf_client_free(client);
        return;
    }
    /* A signal from a source it cannot come from, or an unknown value. */
    const struct { sheaf_signal signal; sheaf_source source; const char *where; } refused[] = {
        { SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_HEADER, "X-Items" },
        { SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_LINK, "next" },
        { SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_BODY, "/id" },
        { SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_DETECT, NULL },
        { SHEAF_SIGNAL_CURSOR, SHEAF_SOURCE_LINK, "next" },
        { SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_LAST_ITEM, "/n" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_ITEM, "/next" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_HEADER, "Bad Name" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_HEADER, "" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_LINK, NULL },
        { SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_BODY, "total" },
        { (sheaf_signal)0, SHEAF_SOURCE_BODY, "/x" },
        { (sheaf_signal)99, SHEAF_SOURCE_BODY, "/x" },
        { SHEAF_SIGNAL_TOTAL, (sheaf_source)99, "/x" },
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, refused[i].signal, refused[i].source, refused[i].where),
                               SHEAF_E_INVALID_ARGUMENT))
            fprintf(stderr, "    for signal %d from source %d\n", (int)refused[i].signal, (int)refused[i].source);
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_HEADER, "X-Total-Count"), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_LINK, "next"), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_CURSOR, SHEAF_SOURCE_LAST_ITEM, "/id"), SHEAF_OK);

    /* Paging: a parameter where one is needed, a first value of 0 or more, a size of 1 or more. */
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_OFFSET, NULL, 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_CURSOR, "", 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", -1, NULL, 0),
                      SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_SINGLE, NULL, 0, "limit", 10), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, (sheaf_paging)42, "x", 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_OFFSET, "page[offset]", 0, "page[limit]", 25), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "q", "caf\xc3"), SHEAF_E_INVALID_ARGUMENT);

    /* Presets: listed by the library, each described as JSON; an unknown name lists the known. */
    CHECK(sheaf_preset_count() >= 18);
    CHECK(sheaf_preset_name(sheaf_preset_count()) == NULL);
    for (size_t i = 0; i < sheaf_preset_count(); i++) {
        const char *name = sheaf_preset_name(i);
        char *json = NULL;
        size_t length = 0;
        if (!CHECK(name != NULL) || !CHECK_RESULT(sheaf_preset_description(name, &json, &length), SHEAF_OK)) continue;
        json_error_t parse_error;
        json_t *description = json_loadb(json, length, 0, &parse_error);
        if (!CHECK(json_is_object(json_object_get(description, "paging")) && json_is_object(json_object_get(description, "signals"))
                   && json_is_string(json_object_get(description, "summary"))))
            fprintf(stderr, "    preset %s: %s\n", name, json);
        json_decref(description);
        sheaf_free(json);
    }
    CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, "no-such-preset"), SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_list_error(list);
    CHECK(error != NULL && strstr(error->message, "github") != NULL);
    sheaf_error_free(error);
    CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, "stripe"), SHEAF_OK);
    char *json = NULL;
    size_t length = 0;
    if (CHECK_LIST_RESULT(list, sheaf_list_description(list, &json, &length), SHEAF_OK)) {
        json_t *description = json_loadb(json, length, 0, NULL);
        json_t *paging = json_object_get(description, "paging");
        CHECK_STR(json_string_value(json_object_get(paging, "kind")), "cursor");
        CHECK_STR(json_string_value(json_object_get(paging, "param")), "starting_after");
        CHECK_STR(json_string_value(json_object_get(description, "preset")), "stripe");
        json_decref(description);
    }
    sheaf_free(json);
    sheaf_list_free(list);

    /* An undescribed list shows "detect" until its first page is in. */
    list = NULL;
    if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK) &&
        CHECK_LIST_RESULT(list, sheaf_list_description(list, &json, &length), SHEAF_OK)) {
        json_t *description = json_loadb(json, length, 0, NULL);
        CHECK_STR(json_string_value(json_object_get(json_object_get(description, "paging"), "kind")), "detect");
        CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(description, "signals"), "items"), "source")),
                  "detect");
        CHECK(json_is_null(json_object_get(json_object_get(description, "signals"), "identity")));
        json_decref(description);
        sheaf_free(json);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_list_runs_once(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    snprintf(path, sizeof path, "/anchor?n=%d", page_size() * 2);
    sheaf_list *list = anchor_list(client, path, page_size(), ANCHOR_ALL);
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_E_STATE);
        char *json = NULL;
        size_t length = 0;
        if (CHECK_LIST_RESULT(list, sheaf_list_prefix(list, &json, &length), SHEAF_OK) && CHECK(json != NULL)) {
            json_t *items = parse_array(json, length);
            CHECK_ITEMS(items, 0, page_size() * 2);
            json_decref(items);
        }
        sheaf_free(json);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_list_outlives_its_client(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "");
    sheaf_client_free(client);
    check_complete_list(list, list_size());
    sheaf_list_free(list);
}

/* ---- tests: whole lists --------------------------------------------------------------------- */

static void the_whole_list_arrives_in_order(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "");
    check_complete_list(list, list_size());
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void snapshots_grow_in_order_one_at_a_time(void) {
    recorder r;
    recorder_init(&r);
    r.check_prefix = 1;
    r.first_page_size = page_size();
    r.expected_items = list_size();
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "&latency_ms=30");
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start(list, record_snapshot, &r, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK(atomic_load(&r.calls) >= 2);
        CHECK_INT(atomic_load(&r.overlaps), 0);
        CHECK_ITEMS(r.deltas, 0, list_size());
        CHECK_INT(r.last_items, list_size());
        CHECK_INT(r.last_pages, list_size() / page_size());
        CHECK_INT(r.last_expected_pages, list_size() / page_size());

        char *json = NULL;
        size_t length = 0;
        if (CHECK_LIST_RESULT(list, sheaf_list_prefix(list, &json, &length), SHEAF_OK) && CHECK(json != NULL)) {
            json_t *prefix = parse_array(json, length);
            CHECK(prefix != NULL && json_equal(prefix, r.deltas));
            json_decref(prefix);
        }
        sheaf_free(json);
    }
    int calls = atomic_load(&r.calls);
    sheaf_list_free(list);
    sleep_ms(50);
    CHECK_INT(atomic_load(&r.calls), calls);
    sheaf_client_free(client);
    recorder_free(&r);
}

static void a_list_that_keeps_no_items_still_streams_every_delta(void) {
    recorder r;
    recorder_init(&r);
    r.first_page_size = page_size();
    r.expected_items = list_size();
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *streamed = standard_list(client, "");
    sheaf_list *fetched = standard_list(client, "");
    if (streamed != NULL && fetched != NULL) {
        char *json = NULL;
        json_t *items = NULL;
        CHECK_LIST_RESULT(streamed, sheaf_list_set_keep_items(streamed, 0), SHEAF_OK);
        CHECK_LIST_RESULT(streamed, sheaf_list_start(streamed, record_snapshot, &r, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(streamed, sheaf_list_wait(streamed), SHEAF_OK);
        CHECK_ITEMS(r.deltas, 0, list_size());
        CHECK_INT(r.last_items, list_size());
        CHECK_LIST_RESULT(streamed, sheaf_list_prefix(streamed, &json, NULL), SHEAF_E_STATE);
        sheaf_free(json);
        /* fetch_all always keeps the items it returns. */
        CHECK_LIST_RESULT(fetched, sheaf_list_set_keep_items(fetched, 0), SHEAF_OK);
        CHECK_LIST_RESULT(fetched, fetch_all(fetched, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, list_size());
        json_decref(items);
    }
    sheaf_list_free(fetched);
    sheaf_list_free(streamed);
    sheaf_client_free(client);
    recorder_free(&r);
}

/* Takes snapshots until the end (at most `limit` pulls); each goes through the recorder's checks. */
static int pull_all(sheaf_list *list, recorder *r, int limit) {
    for (int pulls = 0; pulls < limit; pulls++) {
        const sheaf_snapshot *snapshot = (const sheaf_snapshot *)&snapshot;   /* must be set */
        if (!CHECK_LIST_RESULT(list, sheaf_list_next(list, 10000, &snapshot), SHEAF_OK)) return 0;
        if (snapshot == NULL) return 1;
        int call = atomic_fetch_add(&r->calls, 1) + 1;
        if (CHECK_INT(snapshot->version, SHEAF_SNAPSHOT_VERSION)) record_delta(r, list, snapshot, call);
    }
    return CHECK(!"the list ended within the pulls allowed");
}

static void a_pulled_list_arrives_in_order_on_the_callers_thread(void) {
    recorder r;
    recorder_init(&r);
    r.first_page_size = page_size();
    r.expected_items = list_size();
    r.check_prefix = 1;
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "");
    if (list != NULL) {
        const sheaf_snapshot *snapshot = NULL;
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 0, &snapshot), SHEAF_E_STATE);   /* not started */
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_E_STATE);
        CHECK_RESULT(sheaf_list_next(list, 0, NULL), SHEAF_E_INVALID_ARGUMENT);
        if (pull_all(list, &r, 10 * list_size())) {
            CHECK_ITEMS(r.deltas, 0, list_size());
            CHECK_INT(r.last_pages, list_size() / page_size());
            CHECK_INT(r.last_expected_pages, list_size() / page_size());
            /* The end stays the end, and the outcome is there at once. */
            snapshot = (const sheaf_snapshot *)&snapshot;
            CHECK_LIST_RESULT(list, sheaf_list_next(list, 0, &snapshot), SHEAF_OK);
            CHECK(snapshot == NULL);
            CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
            CHECK_INT(sheaf_list_requests_made(list), list_size() / page_size());
        }
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
    recorder_free(&r);
}

/* An event loop's way: poll the notify fd, take with a 0 ms timeout until PENDING, never wait in
 * sheaf_list_next. `fd` is what the library writes; `readable` what is polled and drained. */
static void pull_by_notification(int fd, int readable) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = anchor_list(client, "/anchor?n=300&latency_ms=5", 10, ANCHOR_ALL);
    if (list == NULL) {
        sheaf_client_free(client);
        return;
    }
    CHECK_LIST_RESULT(list, sheaf_list_set_notify_fd(list, -2), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_notify_fd(list, fd), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_set_notify_fd(list, -1), SHEAF_E_STATE);
    long long next_id = 0;
    int wakeups = 0, ended = 0;
    for (int round = 0; round < 2000 && !ended; round++) {   /* bounded: 2000 wake-ups at most */
        struct pollfd watched = {.fd = readable, .events = POLLIN};
        if (!CHECK(poll(&watched, 1, 10000) == 1)) break;     /* the list notifies, or this fails */
        wakeups++;
        uint64_t drained[64];
        CHECK(read(readable, drained, sizeof drained) >= 8);
        for (;;) {
            const sheaf_snapshot *snapshot = NULL;
            sheaf_result result = sheaf_list_next(list, 0, &snapshot);
            if (result == SHEAF_PENDING) break;
            if (!CHECK_INT(result, SHEAF_OK)) { ended = 1; break; }
            if (snapshot == NULL) { ended = 1; break; }
            json_t *delta = json_loadb(snapshot->delta_json, snapshot->delta_length, 0, NULL);
            for (size_t i = 0; i < json_array_size(delta); i++)
                CHECK_INT(json_integer_value(json_object_get(json_array_get(delta, i), "id")), next_id++);
            json_decref(delta);
        }
    }
    CHECK(ended);
    CHECK_INT(next_id, 300);
    CHECK(wakeups >= 1);
    CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_pulled_list_notifies_an_eventfd_or_a_socket_when_a_snapshot_is_ready(void) {
    int event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (CHECK(event >= 0)) {
        pull_by_notification(event, event);
        close(event);
    }
    int pair[2];
    if (CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0)) {
        pull_by_notification(pair[0], pair[1]);
        close(pair[0]);
        close(pair[1]);
    }
}

static void a_list_started_with_a_callback_cannot_be_pulled(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = anchor_list(client, "/anchor?n=100", 10, ANCHOR_ALL);
    if (list != NULL) {
        const sheaf_snapshot *snapshot = NULL;
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 0, &snapshot), SHEAF_E_STATE);
        CHECK(snapshot == NULL);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void pulling_says_pending_until_a_snapshot_comes_and_a_cancel_ends_it(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = anchor_list(client, "/anchor?n=1000&latency_ms=300", 10, ANCHOR_ALL);
    if (list != NULL) {
        const sheaf_snapshot *snapshot = (const sheaf_snapshot *)&snapshot;
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_OK);
        CHECK_RESULT(sheaf_list_next(list, 0, &snapshot), SHEAF_PENDING);
        CHECK(snapshot == NULL);
        long long started = now_ms();
        CHECK_RESULT(sheaf_list_next(list, 50, &snapshot), SHEAF_PENDING);
        long long waited = now_ms() - started;
        if (!CHECK(waited >= 45)) fprintf(stderr, "    a 50 ms wait returned after %lld ms\n", waited);
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 5000, &snapshot), SHEAF_OK);   /* page one */
        if (CHECK(snapshot != NULL)) CHECK_INT(snapshot->pages, 1);
        CHECK_RESULT(sheaf_list_cancel(list), SHEAF_OK);
        /* After a cancel the pulls end (after any snapshot already waiting), without a timeout. */
        int pulls = 0;
        sheaf_result result;
        do {
            result = sheaf_list_next(list, -1, &snapshot);
        } while (result == SHEAF_OK && snapshot != NULL && ++pulls < 100);
        CHECK_LIST_RESULT(list, result, SHEAF_OK);
        CHECK(snapshot == NULL);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_CANCELLED);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_pulled_list_nobody_pulls_holds_back_and_frees_promptly(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    set_option(client, SHEAF_OPT_WINDOW, 2);
    sheaf_list *list = anchor_list(client, "/anchor?n=100000", 10, ANCHOR_ALL);   /* 10,000 pages */
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_OK);
        sleep_ms(500);
        long long made = sheaf_list_requests_made(list);
        /* A window of snapshots waiting to be taken, a window queued behind them, a few pages
         * held in each: far from 10,000 pages. */
        if (!CHECK(made > 0 && made < 60)) fprintf(stderr, "    %lld requests while nobody pulled\n", made);
        long long started = now_ms();
        sheaf_list_free(list);
        long long took = now_ms() - started;
        if (!CHECK(took < (g_quick ? 8000 : 2000))) fprintf(stderr, "    sheaf_list_free took %lld ms\n", took);
    }
    sheaf_client_free(client);
}

static void waiting_on_a_pulled_list_stops_the_pulling(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = anchor_list(client, "/anchor?n=1000&latency_ms=50", 10, ANCHOR_ALL);
    if (list != NULL) {
        const sheaf_snapshot *snapshot = NULL;
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 5000, &snapshot), SHEAF_OK);
        CHECK(snapshot != NULL);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_STOPPED);
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 1000, &snapshot), SHEAF_OK);
        CHECK(snapshot == NULL);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

/* The list's status, checked to be had. */
static sheaf_list_status status_of(sheaf_list *list) {
    sheaf_list_status status = { .size = sizeof status };
    CHECK_LIST_RESULT(list, sheaf_list_get_status(list, &status), SHEAF_OK);
    return status;
}

/* A caller built against the first sheaf_list_status (before `window`) gets the fields it
 * knows, and nothing is written past them. */
static void check_a_first_version_status(sheaf_list *list) {
    union { sheaf_list_status status; unsigned char bytes[sizeof(sheaf_list_status)]; } old;
    memset(&old, 0x5a, sizeof old);
    size_t first = offsetof(sheaf_list_status, window);
    old.status.size = first;
    CHECK_LIST_RESULT(list, sheaf_list_get_status(list, &old.status), SHEAF_OK);
    CHECK_INT(old.status.size, first);
    CHECK_INT(old.status.state, SHEAF_LIST_ENDED);
    int untouched = 1;
    for (size_t i = first; i < sizeof old; i++) untouched &= old.bytes[i] == 0x5a;
    CHECK(untouched);
}

/* The server's max_in_flight while one list of 20 slow pages runs with the given fixed window;
 * with `reports_total` 0 the pages carry no total, so pages past the end may be asked for too. */
static long long max_in_flight_for(int window, sheaf_transport_fn transport, void *transport_data,
                                   int reports_total) {
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return -1;
    set_option(client, SHEAF_OPT_ADAPTIVE_WINDOW, 0);
    if (window > 0) set_option(client, SHEAF_OPT_WINDOW, window);
    if (transport != NULL)
        CHECK_CLIENT_RESULT(client, sheaf_client_set_transport(client, transport, transport_data, NULL), SHEAF_OK);
    fresh_server(&g_server);
    char path[128];
    snprintf(path, sizeof path, "/anchor?n=%d&latency_ms=100%s", 20 * page_size(), reports_total ? "" : "&nototal=1");
    sheaf_list *list = anchor_list(client, path, page_size(), reports_total ? ANCHOR_ALL : ANCHOR_ALL & ~TOTAL);
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_INT(sheaf_list_requests_made(list), 0);
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, 20 * page_size());
        /* One request per page (without a total, at most a window more past the end), none left
         * waiting once the list is done. */
        long long made = sheaf_list_requests_made(list);
        if (reports_total) CHECK_INT(made, 20);
        else if (!CHECK(made >= 20 && made <= 20 + (window > 0 ? window : 8)))
            fprintf(stderr, "    %lld requests for 20 pages\n", made);
        CHECK_INT(sheaf_list_requests_in_flight(list), 0);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
    json_t *stats = test_server_stats(&g_server);
    long long max_in_flight = stats_max_in_flight(stats);
    json_decref(stats);
    return max_in_flight;
}

/* A list of 40 pages of 50 ms on a client whose adaptive window may reach 16; `query` adds the
 * server's limits. Returns the server's stats (the caller frees them); *window is the list's
 * window when it ended. */
static json_t *adaptive_run(const char *query, long long *window) {
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return NULL;
    set_option(client, SHEAF_OPT_MAX_WINDOW, 16);
    fresh_server(&g_server);
    char path[160];
    snprintf(path, sizeof path, "/anchor?n=%d&latency_ms=50%s", 40 * page_size(), query);
    sheaf_list *list = anchor_list(client, path, page_size(), ANCHOR_ALL);
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_INT(status_of(list).window, 0);   /* not started */
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, 40 * page_size());
        *window = status_of(list).window;
        check_a_first_version_status(list);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
    return test_server_stats(&g_server);
}

static void an_adaptive_window_grows_while_the_server_keeps_up(void) {
    long long window = 0;
    json_t *stats = adaptive_run("", &window);
    /* Latency holds at 50 ms: the window grows past where it started, never past its maximum. */
    long long most = stats_max_in_flight(stats);
    if (!CHECK(most > 8 && most <= 16)) fprintf(stderr, "    at most %lld in flight\n", most);
    if (!CHECK(window > 8 && window <= 16)) fprintf(stderr, "    the window ended at %lld\n", window);
    json_decref(stats);
}

static void an_adaptive_window_shrinks_to_what_a_refusing_server_takes(void) {
    long long window = 0;
    json_t *stats = adaptive_run("&limit=4", &window);
    /* The server answers 429 to a fifth request in flight: the list still completes (the
     * refused pages are retried), the window ends at 4 (a try at 5 was refused), and refusals
     * are few: the first window's four, the retries that meet the server still full before the
     * window has shrunk (more of them when a sanitizer slows the answers down), and a rare try
     * at five. */
    long long refused = json_integer_value(json_object_get(stats, "refused"));
    printf("    %lld refused, the window ended at %lld\n", refused, window);
    if (!CHECK(refused >= 1 && refused <= 12)) fprintf(stderr, "    %lld refused\n", refused);
    if (!CHECK(window >= 1 && window <= 4)) fprintf(stderr, "    the window ended at %lld\n", window);
    json_decref(stats);
}

static void the_default_window_of_8_is_filled(void) {
    CHECK_INT(max_in_flight_for(0, NULL, NULL, 1), 8);
}

static void a_window_of_4_is_filled_and_not_exceeded(void) {
    CHECK_INT(max_in_flight_for(4, NULL, NULL, 1), 4);
}

static void page_numbers_without_a_total_still_fill_the_window(void) {
    CHECK_INT(max_in_flight_for(6, NULL, NULL, 0), 6);
}

static void a_blocking_transport_still_fills_the_window(void) {
    blocking_transport transport;
    inspected_transport_init(&transport, NULL);
    long long server_max = max_in_flight_for(8, blocking_transport_get, &transport, 1);
    fprintf(stderr, "    transport calls %d, at most %d at once; server saw at most %lld at once\n",
            atomic_load(&transport.calls), atomic_load(&transport.max_in_flight), server_max);
    CHECK(atomic_load(&transport.calls) >= 20);
    CHECK_INT(atomic_load(&transport.in_flight), 0);
    CHECK_INT(atomic_load(&transport.api_errors), 0);
    if (!g_quick) {   /* under valgrind everything is serialised: correctness only */
        CHECK_INT(server_max, 8);
        CHECK_INT(atomic_load(&transport.max_in_flight), 8);
    }
}

static void a_list_of_its_own_transport_sends_through_it_alone(void) {
    blocking_transport first, second;
    inspected_transport_init(&first, NULL);
    inspected_transport_init(&second, NULL);
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *a = anchor_list(client, "/anchor?n=100", 10, ANCHOR_ALL);    /* 10 pages */
    sheaf_list *b = anchor_list(client, "/anchor?n=200", 10, ANCHOR_ALL);    /* 20 pages */
    sheaf_list *c = anchor_list(client, "/anchor?n=50", 10, ANCHOR_ALL);     /* the client's libcurl */
    if (a != NULL && b != NULL && c != NULL) {
        CHECK_LIST_RESULT(a, sheaf_list_set_transport(a, blocking_transport_get, &first, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(b, sheaf_list_set_transport(b, blocking_transport_get, &second, NULL), SHEAF_OK);
        check_complete_list(a, 100);
        check_complete_list(b, 200);
        check_complete_list(c, 50);
        /* Each transport got its own list's requests, with its own user_data; the third list none. */
        CHECK_INT(atomic_load(&first.calls), 10);
        CHECK_INT(atomic_load(&second.calls), 20);
        CHECK_INT(atomic_load(&first.api_errors) + atomic_load(&second.api_errors), 0);
        CHECK_LIST_RESULT(a, sheaf_list_set_transport(a, NULL, NULL, NULL), SHEAF_E_STATE);
    }
    sheaf_list_free(c);
    sheaf_list_free(b);
    sheaf_list_free(a);
    sheaf_client_free(client);
}

/* Destroy calls seen by the test below. */
static atomic_int g_destroyed_transport, g_destroyed_snapshot;
static void destroy_transport(void *user_data) { (void)user_data; atomic_fetch_add(&g_destroyed_transport, 1); }
static void destroy_snapshot(void *user_data) { (void)user_data; atomic_fetch_add(&g_destroyed_snapshot, 1); }
static int count_snapshot(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
    (void)list; (void)snapshot;
    atomic_fetch_add((atomic_int *)user_data, 1);
    return 0;
}

/* Destroy calls of the refused registrations below. */
static atomic_int g_destroyed_refused;
static void destroy_refused(void *user_data) { (void)user_data; atomic_fetch_add(&g_destroyed_refused, 1); }
static void ignore_log(const sheaf_log_record *record, void *user_data) { (void)record; (void)user_data; }
static void ignore_event(const sheaf_event *event, void *user_data) { (void)event; (void)user_data; }
static void refuse_credential(sheaf_credential_reply *reply, void *user_data) {
    (void)user_data;
    sheaf_credential_reply_fail(reply, "never asked");
}
static int ignore_output(void *user_data, const char *bytes, size_t length) {
    (void)user_data; (void)bytes; (void)length;
    return 0;
}
static void ignore_done(sheaf_request *request, sheaf_result result, void *user_data) {
    (void)request; (void)result; (void)user_data;
}

/* A call that takes a callback and refuses it does not take its user_data: destroy is not called,
 * and the caller, who still owns it, frees it once (as after any failed call). */
static void a_refused_registration_leaves_the_user_data_with_the_caller(void) {
    atomic_store(&g_destroyed_refused, 0);
    int data = 0;
    blocking_transport transport;
    blocking_transport_init(&transport);
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    /* NULL handles. */
    CHECK_RESULT(sheaf_client_set_log(NULL, SHEAF_LOG_INFO, ignore_log, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_event_handler(NULL, ignore_event, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(NULL, SHEAF_AUTH_BEARER, NULL, refuse_credential, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_transport(NULL, blocking_transport_get, &transport, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_set_transport(NULL, blocking_transport_get, &transport, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start(NULL, count_snapshot, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start_write(NULL, SHEAF_FORMAT_JSON_LINES, ignore_output, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_start(NULL, ignore_done, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(atomic_load(&g_destroyed_refused), 0);
    /* Bad arguments and calls out of turn on real handles. */
    CHECK_RESULT(sheaf_client_set_log(client, (sheaf_log_level)99, ignore_log, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_NONE, NULL, refuse_credential, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_BASIC, NULL, refuse_credential, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    sheaf_list *list = NULL;
    CHECK_RESULT(sheaf_list_new(&list, client, "/anchor?n=5"), SHEAF_OK);
    CHECK_RESULT(sheaf_list_start_write(list, (sheaf_format)99, ignore_output, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start_write(list, SHEAF_FORMAT_JSON_LINES, NULL, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
    CHECK_RESULT(sheaf_list_start(list, count_snapshot, &data, destroy_refused), SHEAF_E_STATE);
    CHECK_RESULT(sheaf_list_set_transport(list, blocking_transport_get, &transport, destroy_refused), SHEAF_E_STATE);
    CHECK_RESULT(sheaf_list_wait(list), SHEAF_OK);
    sheaf_list_free(list);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, ignore_done, &data, destroy_refused), SHEAF_E_STATE);
    sheaf_request_free(request);
    sheaf_client_free(client);
    CHECK_INT(atomic_load(&g_destroyed_refused), 0);
}

/* Each user_data is destroyed once, when nothing needs it any more: the snapshot callback's after
 * the list ended, the transport's once the client and the lists that used it are freed. */
static void destroy_functions_run_once_when_nothing_needs_the_user_data(void) {
    blocking_transport transport;
    blocking_transport_init(&transport);
    atomic_int snapshots = 0;
    atomic_store(&g_destroyed_transport, 0);
    atomic_store(&g_destroyed_snapshot, 0);
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    CHECK_CLIENT_RESULT(client, sheaf_client_set_transport(client, blocking_transport_get, &transport, destroy_transport),
                        SHEAF_OK);
    sheaf_list *list = anchor_list(client, "/anchor?n=30", 10, ANCHOR_ALL);
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start(list, count_snapshot, &snapshots, destroy_snapshot), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK(atomic_load(&snapshots) >= 1);
        for (int i = 0; i < 200 && atomic_load(&g_destroyed_snapshot) == 0; i++) sleep_ms(10);
        CHECK_INT(atomic_load(&g_destroyed_snapshot), 1);   /* the list has ended: no more callbacks */
        CHECK_INT(atomic_load(&g_destroyed_transport), 0);  /* the client still holds the transport */
    }
    sheaf_client_free(client);
    CHECK_INT(atomic_load(&g_destroyed_transport), 0);      /* the list still holds it */
    sheaf_list_free(list);
    /* The library's threads let go of their last references just after: wait (bounded). */
    for (int i = 0; i < 200 && atomic_load(&g_destroyed_transport) == 0; i++) sleep_ms(10);
    CHECK_INT(atomic_load(&g_destroyed_transport), 1);
    CHECK_INT(atomic_load(&g_destroyed_snapshot), 1);
    /* The three pages, and at most a window of pages asked for ahead of page one. */
    CHECK(atomic_load(&transport.calls) >= 3 && atomic_load(&transport.calls) <= 8);
}

/* Every convention of Tests/server/conventions.py, detected and through its preset. */
static void every_convention_arrives_whole_detected_and_by_preset(void) {
    static const struct { const char *path, *query, *preset; } conventions[] = {
        { "/conv/github", "", "github" }, { "/conv/gitlab", "", "gitlab" },
        { "/conv/json-server", "&_page=1", "json-server" }, { "/conv/drf-limit", "", "drf-limit" },
        { "/conv/drf-cursor", "", "drf-cursor" }, { "/conv/jsonapi", "", "jsonapi" },
        { "/conv/odata", "&$count=true", "odata" }, { "/conv/hal", "", "hal" }, { "/conv/stripe", "", "stripe" },
        { "/conv/slack", "&limit=40", "slack" }, { "/conv/google", "&pageSize=40", "google" },
        { "/conv/zendesk", "&page[size]=40", "zendesk" }, { "/conv/fastapi-page", "", "fastapi-page" },
        { "/conv/fastapi-limit-offset", "", "fastapi-limit-offset" },
        { "/conv/content-range", "&offset=0", "content-range" }, { "/conv/jira", "", "jira" },
        { "/drf", "", "drf-page" }, { "/anchor", "", "anchor" },
    };
    const int n = 237;
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    for (size_t i = 0; i < sizeof conventions / sizeof conventions[0]; i++) {
        for (int by_preset = 0; by_preset <= 1; by_preset++) {
            char path[256];
            snprintf(path, sizeof path, "%s?n=%d%s", conventions[i].path, n, conventions[i].query);
            sheaf_list *list = NULL;
            json_t *items = NULL;
            if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, path), SHEAF_OK)) continue;
            if (by_preset) CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, conventions[i].preset), SHEAF_OK);
            int ok = CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
            ok = CHECK_ITEMS(items, 0, n) && ok;
            if (!ok) fprintf(stderr, "    for %s (%s)\n", conventions[i].path, by_preset ? "preset" : "detected");
            json_decref(items);
            sheaf_list_free(list);
        }
    }
    sheaf_client_free(client);
}

/* The last page signals more than the description follows: the list fails, its items kept. */
static void a_signal_of_more_that_is_not_followed_fails_the_list(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    json_t *items = NULL;
    if (client != NULL && CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/conv/github?n=95&per_page=30"), SHEAF_OK)) {
        read_body(list, SHEAF_SIGNAL_ITEMS, "");
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_NEXT, NULL, 0, NULL, 0), SHEAF_OK);
        read_body(list, SHEAF_SIGNAL_NEXT, NULL);
        read_body(list, SHEAF_SIGNAL_PAGE_COUNT, NULL);
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_E_NOT_FOLLOWED);
        CHECK_ITEMS(items, 0, 30);
        sheaf_error *error = sheaf_list_error(list);
        if (CHECK(error != NULL)) {
            CHECK_INT(error->code, SHEAF_E_NOT_FOLLOWED);
            CHECK_STR(error->signal, "Link rel=\"next\"");
            CHECK_STR(error->hint, "--next link:next");
        }
        sheaf_error_free(error);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_drf_style_list_arrives_whole(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    json_t *items = NULL;
    snprintf(path, sizeof path, "/drf?n=%d", list_size());
    if (client != NULL && CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, path), SHEAF_OK)) {
        read_body(list, SHEAF_SIGNAL_ITEMS, "/results");
        read_body(list, SHEAF_SIGNAL_NEXT, "/next");
        read_body(list, SHEAF_SIGNAL_TOTAL, "/count");
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 1, "page_size", page_size()),
                          SHEAF_OK);
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, list_size());
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_bare_array_list_arrives_whole(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    json_t *items = NULL;
    snprintf(path, sizeof path, "/array?n=%d", list_size() - 3);   /* the last page is short */
    if (client != NULL && CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, path), SHEAF_OK)) {
        read_body(list, SHEAF_SIGNAL_ITEMS, "");
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 1, "per_page", page_size()),
                          SHEAF_OK);
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, list_size() - 3);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_server_that_caps_the_page_size_still_gives_the_whole_list(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    fresh_server(&g_server);
    snprintf(path, sizeof path, "/anchor?n=%d&cap=100", list_size());
    sheaf_list *list = anchor_list(client, path, 500, ANCHOR_ALL);
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, list_size());
        json_t *stats = test_server_stats(&g_server);
        CHECK_INT(stats_count_requests(stats, "/anchor", NULL, NULL), (list_size() + 99) / 100);
        json_decref(stats);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void identity_removes_the_repeated_items(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "&dup=1");
    check_complete_list(list, list_size());
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void without_identity_the_repeated_items_are_kept(void) {
    char path[128], first_page[160];
    sheaf_client *client = client_for(&g_server, NULL);
    /* No total: with a total of n, n+19 items would (rightly) be SHEAF_E_INCOMPLETE. */
    snprintf(path, sizeof path, "/anchor?n=%d&dup=1&nototal=1", list_size());
    snprintf(first_page, sizeof first_page, "%s&page=1&per_page=%d", path, page_size());
    sheaf_list *list = anchor_list(client, path, page_size(), PAGE_NUMBER | NEXT);
    json_t *served = walk_server_list(&g_server, first_page, "items", "next_page");
    json_t *items = NULL;
    if (list != NULL && CHECK(served != NULL)) {
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_INT(json_array_size(served), list_size() + list_size() / page_size() - 1);
        if (!CHECK(items != NULL && json_equal(items, served)))
            fprintf(stderr, "    got %zu items, the server serves %zu\n", items ? json_array_size(items) : 0,
                    json_array_size(served));
    }
    json_decref(served);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void max_items_stops_the_list_at_exactly_that_many(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "");
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_set_max_items(list, 120), SHEAF_OK);
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_INT(status_of(list).stop_reason, SHEAF_STOP_ITEM_LIMIT);
        CHECK_ITEMS(items, 0, 120);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

/* ---- tests: output written by the library ---------------------------------------------------- */



/* Collects what sheaf_list_start_write hands over; stops after `stop_after` calls (0: never). */
struct collected { char *bytes; size_t length; int calls, stop_after; atomic_int destroyed; };

static int collect_output(void *user_data, const char *bytes, size_t length) {
    struct collected *c = user_data;
    char *grown = realloc(c->bytes, c->length + length);
    if (grown == NULL) return 1;
    memcpy(grown + c->length, bytes, length);
    c->bytes = grown;
    c->length += length;
    return ++c->calls == c->stop_after;
}

static void destroy_collected(void *user_data) { atomic_fetch_add(&((struct collected *)user_data)->destroyed, 1); }

/* The items of JSON lines, as one array (NULL when a line is not JSON). */
static json_t *parse_lines(const char *text, size_t length) {
    json_t *items = json_array();
    for (size_t start = 0; start < length;) {
        const char *end = memchr(text + start, '\n', length - start);
        if (end == NULL) { json_decref(items); return NULL; }   /* every line ends with "\n" */
        json_t *item = json_loadb(text + start, (size_t)(end - text) - start, 0, NULL);
        if (item == NULL) { json_decref(items); return NULL; }
        json_array_append_new(items, item);
        start = (size_t)(end - text) + 1;
    }
    return items;
}

static void lists_write_their_items_to_a_function_or_a_file_descriptor(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    /* To a function, in both formats; an indented server (items span lines) included. */
    for (int indented = 0; indented < 2; indented++) {
        for (int format = SHEAF_FORMAT_JSON; format <= SHEAF_FORMAT_JSON_LINES; format++) {
            struct collected out = { 0 };
            sheaf_list *list = standard_list(client, indented ? "&indent=1" : "");
            if (list == NULL) continue;
            CHECK_LIST_RESULT(list, sheaf_list_start_write(list, (sheaf_format)format, collect_output, &out, destroy_collected),
                              SHEAF_OK);
            CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
            /* The library's threads let go of their last references just after: wait (bounded). */
            for (int i = 0; i < 200 && atomic_load(&out.destroyed) == 0; i++) sleep_ms(10);
            CHECK_INT(atomic_load(&out.destroyed), 1);
            json_t *items = format == SHEAF_FORMAT_JSON ? parse_array(out.bytes, out.length) : parse_lines(out.bytes, out.length);
            CHECK_ITEMS(items, 0, list_size());
            CHECK(out.length > 0 && out.bytes[out.length - 1] == '\n');
            char *prefix = (char *)0x1;
            CHECK_LIST_RESULT(list, sheaf_list_prefix(list, &prefix, NULL), SHEAF_E_STATE);   /* not kept */
            sheaf_list_status status = status_of(list);
            CHECK_INT(status.items, list_size());
            CHECK_INT(status.state, SHEAF_LIST_ENDED);
            json_decref(items);
            free(out.bytes);
            sheaf_list_free(list);
        }
    }
    /* A function that asks to stop: SHEAF_E_STOPPED, with a well-formed array of what came before. */
    struct collected stopping = { .stop_after = 2 };
    sheaf_list *list = standard_list(client, "&latency_ms=5");
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write(list, SHEAF_FORMAT_JSON, collect_output, &stopping, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_STOPPED);
        CHECK_INT(stopping.calls, 2);
        free(stopping.bytes);
        sheaf_list_free(list);
    }
    /* To a file descriptor; then one that cannot be written: SHEAF_E_IO with the system's reason. */
    FILE *file = tmpfile();
    list = standard_list(client, "");
    if (file != NULL && list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, fileno(file), SHEAF_FORMAT_JSON_LINES), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        char *text = size > 0 ? malloc((size_t)size) : NULL;
        rewind(file);
        CHECK(text != NULL && fread(text, 1, (size_t)size, file) == (size_t)size);
        json_t *items = text != NULL ? parse_lines(text, (size_t)size) : NULL;
        CHECK_ITEMS(items, 0, list_size());
        json_decref(items);
        free(text);
    }
    sheaf_list_free(list);
    if (file != NULL) fclose(file);
    int read_only = open("/dev/null", O_RDONLY);
    list = standard_list(client, "");
    if (list != NULL && read_only >= 0) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, read_only, SHEAF_FORMAT_JSON), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_IO);
        sheaf_error *error = sheaf_list_error(list);
        CHECK(error != NULL && strstr(error->message, "could not be written") != NULL);
        sheaf_error_free(error);
    }
    sheaf_list_free(list);
    if (read_only >= 0) close(read_only);
    /* Misuse: a NULL function, a bad descriptor or format, a list started twice. */
    list = standard_list(client, "");
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write(list, SHEAF_FORMAT_JSON, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, -1, SHEAF_FORMAT_JSON), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, 1, (sheaf_format)7), SHEAF_E_INVALID_ARGUMENT);
        struct collected once = { 0 };
        CHECK_LIST_RESULT(list, sheaf_list_start_write(list, SHEAF_FORMAT_JSON, collect_output, &once, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, 1, SHEAF_FORMAT_JSON), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        free(once.bytes);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

/* ---- tests: resume tokens and budgets -------------------------------------------------------- */

/* The list's resume token (the caller frees it), checked to be one printable line. */
static char *resume_token_of(sheaf_list *list) {
    char *token = (char *)0x1;
    if (!CHECK_LIST_RESULT(list, sheaf_list_resume_token(list, &token), SHEAF_OK)) return NULL;
    if (token != NULL) {
        CHECK(strncmp(token, "sheaf-resume-1.", 15) == 0);
        for (const char *c = token; *c; c++) CHECK(*c > 0x20 && *c < 0x7F);
    }
    return token;
}

/* Runs `list` (freed here), described as the one that made `token`, from the token to its end;
 * checks it brings items first..list_size()-1 and leaves no token. */
static void resume_to_the_end(sheaf_list *list, const char *token, long first) {
    json_t *items = NULL;
    if (list == NULL || !CHECK(token != NULL)) goto done;
    CHECK_LIST_RESULT(list, sheaf_list_set_resume(list, token), SHEAF_OK);
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    CHECK_ITEMS(items, first, list_size() - first);
    char *after = resume_token_of(list);
    CHECK(after == NULL);   /* completed: nothing left to resume */
    sheaf_free(after);
done:
    json_decref(items);
    sheaf_list_free(list);
}

static void each_budget_ends_ok_with_its_own_stop_reason_and_a_token_that_goes_on(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    const long size = page_size(), cut = 2 * size + 7;
    struct { sheaf_budget budget; int64_t value; sheaf_stop_reason reason; long items; } cases[] = {
        { SHEAF_BUDGET_ITEMS, cut, SHEAF_STOP_ITEM_LIMIT, cut },           /* page 3 cut after 7 items */
        { SHEAF_BUDGET_PAGES, 3, SHEAF_STOP_PAGE_BUDGET, 3 * size },
        { SHEAF_BUDGET_REQUESTS, 2, SHEAF_STOP_REQUEST_BUDGET, 2 * size },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sheaf_list *list = standard_list(client, "");
        json_t *items = NULL;
        if (list == NULL) continue;
        CHECK_LIST_RESULT(list, sheaf_list_set_budget(list, cases[i].budget, cases[i].value), SHEAF_OK);
        CHECK_INT(status_of(list).stop_reason, SHEAF_STOP_NONE);
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_INT(status_of(list).state, SHEAF_LIST_ENDED);
        CHECK_INT(status_of(list).stop_reason, cases[i].reason);
        CHECK_ITEMS(items, 0, cases[i].items);
        CHECK(sheaf_list_error(list) == NULL);   /* a budget reached is no failure */
        char *token = resume_token_of(list);
        resume_to_the_end(standard_list(client, ""), token, cases[i].items);
        sheaf_free(token);
        json_decref(items);
        sheaf_list_free(list);
    }
    sheaf_client_free(client);
}

static void a_deadline_ends_the_list_in_time_and_its_token_goes_on(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    json_t *items = NULL;
    char path[128];
    snprintf(path, sizeof path, "/anchor?n=%d&latency_ms=150", list_size());
    /* Next links only, one page at a time: the whole list would take list_size()/page_size() x 150 ms. */
    list = anchor_list(client, path, page_size(), NEXT);
    if (list == NULL) goto done;
    const int64_t deadline = 400;
    CHECK_LIST_RESULT(list, sheaf_list_set_budget(list, SHEAF_BUDGET_DEADLINE_MS, deadline), SHEAF_OK);
    long long started = now_ms();
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_E_DEADLINE);
    long long took = now_ms() - started;
    if (!CHECK(took < 2 * deadline)) fprintf(stderr, "    the list ended after %lld ms, its deadline %lld ms\n", took, (long long)deadline);
    long arrived = items ? (long)json_array_size(items) : 0;
    CHECK(arrived > 0 && arrived < list_size() && arrived % page_size() == 0);
    CHECK_ITEMS(items, 0, arrived);
    char *token = resume_token_of(list);
    resume_to_the_end(anchor_list(client, path, page_size(), NEXT), token, arrived);
    sheaf_free(token);
done:
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_resume_token_of_another_list_or_no_token_is_refused(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, ""), *other = standard_list(client, "&other=1");
    json_t *items = NULL;
    if (list == NULL || other == NULL) goto done;
    CHECK_LIST_RESULT(list, sheaf_list_set_max_items(list, 10), SHEAF_OK);
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    char *token = resume_token_of(list);
    CHECK_LIST_RESULT(other, sheaf_list_set_resume(other, "sheaf-resume-1.!!"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(other, sheaf_list_set_resume(other, "not a token"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(other, sheaf_list_set_resume(other, token), SHEAF_OK);   /* the form is right... */
    CHECK_LIST_RESULT(other, sheaf_list_start_pull(other), SHEAF_E_INVALID_ARGUMENT);   /* ...the list is not */
    CHECK_RESULT(sheaf_list_set_budget(list, (sheaf_budget)99, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_set_budget(NULL, SHEAF_BUDGET_PAGES, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_resume_token(list, NULL), SHEAF_E_INVALID_ARGUMENT);
    sheaf_free(token);
done:
    json_decref(items);
    sheaf_list_free(list);
    sheaf_list_free(other);
    sheaf_client_free(client);
}

/* ---- tests: load more -------------------------------------------------------------------------- */

typedef struct {
    sheaf_list *list;
    int64_t timeout_ms;
    sheaf_result result;
    json_t *items;   /* the page, parsed; NULL when there was none */
} more_call;

static void *call_more(void *argument) {
    more_call *call = argument;
    char *json = NULL;
    size_t length = 0;
    call->result = sheaf_list_more(call->list, call->timeout_ms, &json, &length);
    call->items = json ? parse_array(json, length) : NULL;
    sheaf_free(json);
    return NULL;
}

/* One sheaf_list_more on this thread: checks it hands out items first..first+count-1. */
static void check_more(sheaf_list *list, int64_t timeout_ms, long first, long count) {
    more_call call = { list, timeout_ms, SHEAF_E_INTERNAL, NULL };
    call_more(&call);
    if (CHECK_LIST_RESULT(list, call.result, SHEAF_OK) && CHECK(call.items != NULL)) CHECK_ITEMS(call.items, first, count);
    json_decref(call.items);
}

static size_t anchor_requests(void) {
    json_t *stats = test_server_stats(&g_server);
    size_t requests = stats_count_requests(stats, "/anchor", NULL, NULL);
    json_decref(stats);
    return requests;
}

static void load_more_fetches_a_page_per_call_and_joins_calls_in_flight(void) {
    enum { CALLERS = 6 };
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = anchor_list(client, "/anchor?n=55&latency_ms=250", 10, ANCHOR_ALL);
    json_t *prefix = NULL;
    if (list == NULL) goto done;
    fresh_server(&g_server);
    CHECK_LIST_RESULT(list, sheaf_list_start_load_more(list, 0), SHEAF_OK);
    sheaf_list_status status = status_of(list);
    CHECK_INT(status.state, SHEAF_LIST_IDLE);
    CHECK_INT(status.pages, 0);
    CHECK_INT(status.expected_items, -1);
    CHECK_INT(anchor_requests(), 0);   /* nothing before the first call */

    /* Callers on six threads while page one is on its way: one request, six answers. */
    more_call calls[CALLERS];
    pthread_t threads[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        calls[i] = (more_call){ list, -1, SHEAF_E_INTERNAL, NULL };
        CHECK_INT(pthread_create(&threads[i], NULL, call_more, &calls[i]), 0);
    }
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(threads[i], NULL);
        CHECK_RESULT(calls[i].result, SHEAF_OK);
        CHECK_ITEMS(calls[i].items, 0, 10);
        json_decref(calls[i].items);
    }
    CHECK_INT(anchor_requests(), 1);

    /* A caller that does not wait leaves the page asked for: the next call gets it. */
    char *json = (char *)0x1;
    CHECK_LIST_RESULT(list, sheaf_list_more(list, 0, &json, NULL), SHEAF_PENDING);
    CHECK(json == NULL);
    CHECK_INT(status_of(list).state, SHEAF_LIST_LOADING);
    check_more(list, -1, 10, 10);
    CHECK_INT(anchor_requests(), 2);
    status = status_of(list);
    CHECK_INT(status.state, SHEAF_LIST_IDLE);
    CHECK_INT(status.items, 20);
    CHECK_INT(status.pages, 2);
    CHECK_INT(status.expected_items, 55);
    CHECK_INT(status.pages_ready, 0);
    CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_STATE);   /* only sheaf_list_more moves it on */
    char *text = NULL;
    size_t length = 0;
    CHECK_LIST_RESULT(list, sheaf_list_prefix(list, &text, &length), SHEAF_OK);
    prefix = text ? parse_array(text, length) : NULL;
    CHECK_ITEMS(prefix, 0, 20);
    sheaf_free(text);

    /* Reset: from page one again, then to the end. */
    CHECK_LIST_RESULT(list, sheaf_list_reset(list), SHEAF_OK);
    CHECK_INT(status_of(list).pages, 0);
    for (long first = 0; first < 55; first += 10) check_more(list, -1, first, first + 10 <= 55 ? 10 : 5);
    json = (char *)0x1;
    CHECK_LIST_RESULT(list, sheaf_list_more(list, -1, &json, NULL), SHEAF_OK);
    CHECK(json == NULL);   /* the end */
    CHECK_INT(status_of(list).state, SHEAF_LIST_ENDED);
    CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
    CHECK_INT(anchor_requests(), 2 + 6);
done:
    json_decref(prefix);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void load_more_looks_ahead_keeps_budgets_and_refuses_misuse(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    char path[128];
    snprintf(path, sizeof path, "/anchor?n=%d&per_page=10", list_size());
    sheaf_list *list = anchor_list(client, path, 10, NEXT | TOTAL);
    sheaf_list *other = standard_list(client, "");
    if (list == NULL || other == NULL) goto done;
    fresh_server(&g_server);
    CHECK_LIST_RESULT(list, sheaf_list_set_budget(list, SHEAF_BUDGET_PAGES, 4), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_start_load_more(list, -1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_start_load_more(list, 2), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_start_load_more(list, 2), SHEAF_E_STATE);
    CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_E_STATE);
    check_more(list, -1, 0, 10);
    /* Next links are walked one at a time: the two pages ahead come in turn. */
    long long deadline = now_ms() + 10000;
    while (status_of(list).pages_ready < 2 && now_ms() < deadline) sleep_ms(5);
    CHECK_INT(status_of(list).pages_ready, 2);
    CHECK_INT(anchor_requests(), 3);
    check_more(list, 0, 10, 10);   /* fetched ahead: no wait */
    check_more(list, 0, 20, 10);
    check_more(list, -1, 30, 10);
    char *json = (char *)0x1;
    CHECK_LIST_RESULT(list, sheaf_list_more(list, -1, &json, NULL), SHEAF_OK);
    CHECK(json == NULL);   /* the end: at the page budget */
    CHECK_INT(status_of(list).stop_reason, SHEAF_STOP_PAGE_BUDGET);
    CHECK_INT(anchor_requests(), 4);
    char *token = resume_token_of(list);
    resume_to_the_end(anchor_list(client, path, 10, NEXT | TOTAL), token, 40);
    sheaf_free(token);

    CHECK_LIST_RESULT(other, sheaf_list_more(other, 0, &json, NULL), SHEAF_E_STATE);
    CHECK_LIST_RESULT(other, sheaf_list_reset(other), SHEAF_E_STATE);
    CHECK_RESULT(sheaf_list_more(other, 0, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    sheaf_list_status small = { .size = 8 };
    CHECK_RESULT(sheaf_list_get_status(other, &small), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_get_status(NULL, &small), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(status_of(other).state, SHEAF_LIST_NEW);
done:
    sheaf_list_free(list);
    sheaf_list_free(other);
    sheaf_client_free(client);
}

/* ---- tests: guards and failures ------------------------------------------------------------- */

/* Runs a list expected to fail; returns the parsed items that arrived (caller frees). */
static json_t *run_failing_list(sheaf_client *client, const char *path, unsigned parts, int per_page,
                                sheaf_result expected, sheaf_list **out_list) {
    sheaf_list *list = anchor_list(client, path, per_page, parts);
    json_t *items = NULL;
    *out_list = list;
    if (list != NULL && CHECK_LIST_RESULT(list, fetch_all(list, &items), expected) &&
        expected != SHEAF_OK) {
        char buffer[1024];
        const char *message = list_message(list, buffer, sizeof buffer);
        if (!CHECK(message != NULL && message[0] != '\0'))
            fprintf(stderr, "    a %s failure has no message\n", result_name(expected));
    }
    return items;
}

static void a_next_link_that_loops_is_refused(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    snprintf(path, sizeof path, "/anchor?n=%d&loop=1", list_size());
    /* Next links only: the walk is sequential, so it meets page 3's link back to page 2. */
    json_t *items = run_failing_list(client, path, NEXT | TOTAL, page_size(), SHEAF_E_LOOP, &list);
    if (items != NULL) CHECK(json_array_size(items) <= 3 * 50);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void an_endless_list_stops_at_the_page_cap(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL) return;
    set_option(client, SHEAF_OPT_MAX_PAGES, 20);
    fresh_server(&g_server);
    json_t *items = run_failing_list(client, "/anchor?endless=1", PAGE_NUMBER | NEXT, page_size(),
                                     SHEAF_E_PAGE_LIMIT, &list);
    json_t *stats = test_server_stats(&g_server);
    size_t requests = stats_count_requests(stats, "/anchor", NULL, NULL);
    if (!CHECK(requests <= 20)) fprintf(stderr, "    %zu pages were requested\n", requests);
    json_decref(stats);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_page_over_the_body_cap_is_refused(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL) return;
    set_option(client, SHEAF_OPT_MAX_BODY_BYTES, 65536);
    snprintf(path, sizeof path, "/anchor?n=%d&pad=4096", list_size());   /* ~4 KiB an item */
    json_t *items = run_failing_list(client, path, ANCHOR_ALL, page_size(), SHEAF_E_BODY_TOO_LARGE, &list);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_page_that_is_not_json_is_a_bad_page_naming_its_url(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    snprintf(path, sizeof path, "/anchor?n=%d&garbage=3", list_size());
    json_t *items = run_failing_list(client, path, ANCHOR_ALL, page_size(), SHEAF_E_BAD_PAGE, &list);
    if (list != NULL) {
        char buffer[1024];
        const char *message = list_message(list, buffer, sizeof buffer);
        if (!CHECK(message != NULL && strstr(message, "/anchor") != NULL && strstr(message, "page=3") != NULL))
            fprintf(stderr, "    message: %s\n", message ? message : "(null)");
        /* Pages run in parallel: page 2 may or may not have been delivered before page 3 failed. */
        size_t delivered = items ? json_array_size(items) : 0;
        if (CHECK(delivered == (size_t)page_size() || delivered == (size_t)(2 * page_size())))
            CHECK_ITEMS(items, 0, (long)delivered);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_list_shorter_than_its_total_is_incomplete_but_keeps_its_items(void) {
    char path[128];
    int missing = page_size() * 3 / 5;   /* less than a page: every promised page still answers */
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    snprintf(path, sizeof path, "/anchor?n=%d&short=%d", list_size(), missing);
    json_t *items = run_failing_list(client, path, ANCHOR_ALL, page_size(), SHEAF_E_INCOMPLETE, &list);
    if (list != NULL) CHECK_ITEMS(items, 0, list_size() - missing);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_transient_503_is_retried(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL) return;
    retry_fast(client);
    fresh_server(&g_server);
    snprintf(path, sizeof path, "/anchor?n=%d&fail=2:2:503", list_size());
    json_t *items = run_failing_list(client, path, ANCHOR_ALL, page_size(), SHEAF_OK, &list);
    CHECK_ITEMS(items, 0, list_size());
    json_t *stats = test_server_stats(&g_server);
    CHECK_INT(stats_count_requests(stats, "/anchor", "page", "2"), 3);
    json_decref(stats);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_persistent_500_fails_after_max_attempts(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL) return;
    retry_fast(client);
    set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 3);
    fresh_server(&g_server);
    snprintf(path, sizeof path, "/anchor?n=%d&fail=2:9:500", list_size());
    json_t *items = run_failing_list(client, path, ANCHOR_ALL, page_size(), SHEAF_E_HTTP, &list);
    if (list != NULL) {
        sheaf_error *error = sheaf_list_error(list);
        if (CHECK(error != NULL)) {
            CHECK_INT(error->http_status, 500);
            if (!CHECK(strstr(error->body, "injected") != NULL)) fprintf(stderr, "    body: %s\n", error->body);
            CHECK(strstr(error->server_message, "injected") != NULL);
            CHECK(strstr(error->url, "/anchor") != NULL);
        }
        sheaf_error_free(error);
        CHECK_ITEMS(items, 0, page_size());   /* page one arrived; the prefix ends at page 2 */
    }
    json_t *stats = test_server_stats(&g_server);
    CHECK_INT(stats_count_requests(stats, "/anchor", "page", "2"), 3);
    json_decref(stats);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_404_inside_the_promised_pages_is_not_retried(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL) return;
    retry_fast(client);
    fresh_server(&g_server);
    snprintf(path, sizeof path, "/anchor?n=%d&fail=2:1:404", list_size());
    json_t *items = run_failing_list(client, path, ANCHOR_ALL, page_size(), SHEAF_E_HTTP, &list);
    if (list != NULL) {
        CHECK_INT(list_http_status(list), 404);
        CHECK_ITEMS(items, 0, page_size());   /* the prefix before the failing page, no gap */
    }
    json_t *stats = test_server_stats(&g_server);
    CHECK_INT(stats_count_requests(stats, "/anchor", "page", "2"), 1);
    json_decref(stats);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void a_next_link_to_another_origin_is_refused_and_the_token_stays_home(void) {
    sheaf_client *client = client_for(&g_server, TOKEN);
    sheaf_list *list = NULL;
    fresh_server(&g_server);
    fresh_server(&g_other);
    if (client != NULL && CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK)) {
        char n[16];
        snprintf(n, sizeof n, "%d", list_size());
        CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "n", n), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "next_base", g_other.base_url), SHEAF_OK);
        read_body(list, SHEAF_SIGNAL_ITEMS, "/items");
        read_body(list, SHEAF_SIGNAL_NEXT, "/next_page");
        json_t *items = NULL;
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_E_CROSS_ORIGIN);
        char buffer[1024];
        const char *message = list_message(list, buffer, sizeof buffer);
        CHECK(strlen(message) > 0);
        CHECK(strstr(message, TOKEN) == NULL);
        json_decref(items);
    }
    json_t *home = test_server_stats(&g_server);
    json_t *elsewhere = test_server_stats(&g_other);
    CHECK(stats_count_requests(home, "/anchor", NULL, NULL) >= 1);
    CHECK(stats_count_authorization(home, "Bearer " TOKEN) >= 1);
    CHECK_INT(stats_count_authorization(elsewhere, NULL), 0);
    CHECK_INT(stats_count_requests(elsewhere, NULL, NULL, NULL), 0);
    json_decref(home);
    json_decref(elsewhere);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

/* ---- tests: stopping, cancelling, re-entering ----------------------------------------------- */

static void a_callback_that_returns_non_zero_stops_the_list(void) {
    recorder r;
    recorder_init(&r);
    r.stop_at = 2;
    sheaf_client *client = client_for(&g_server, NULL);
    fresh_server(&g_server);
    /* 100 slow pages: the list cannot finish before the second snapshot stops it. */
    sheaf_list *list = anchor_list(client, "/anchor?n=1000&latency_ms=50", 10, ANCHOR_ALL);
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start(list, record_snapshot, &r, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_STOPPED);
        CHECK_INT(atomic_load(&r.calls), 2);
        sleep_ms(300);
        CHECK_INT(atomic_load(&r.calls), 2);
        json_t *stats = test_server_stats(&g_server);
        size_t requests = stats_count_requests(stats, "/anchor", NULL, NULL);
        if (!CHECK(requests <= 30)) fprintf(stderr, "    %zu of 100 pages were requested\n", requests);
        json_decref(stats);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
    recorder_free(&r);
}

typedef struct delayed_cancel {
    sheaf_list *list;
    long delay_ms;
    sheaf_result result;
} delayed_cancel;

static void *cancel_later(void *argument) {
    delayed_cancel *cancel = argument;
    sleep_ms(cancel->delay_ms);
    cancel->result = sheaf_list_cancel(cancel->list);
    return NULL;
}

static void cancel_from_another_thread_ends_the_wait(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = anchor_list(client, "/anchor?n=1000&latency_ms=300", 10, ANCHOR_ALL);
    if (list != NULL) {
        delayed_cancel cancel = { list, 400, SHEAF_E_INTERNAL };
        pthread_t thread;
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
        CHECK_INT(pthread_create(&thread, NULL, cancel_later, &cancel), 0);
        long long started = now_ms();
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_CANCELLED);
        long long waited = now_ms() - started;
        pthread_join(thread, NULL);
        CHECK_RESULT(cancel.result, SHEAF_OK);
        if (!CHECK(waited < (g_quick ? 10000 : 3000))) fprintf(stderr, "    wait took %lld ms\n", waited);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void freeing_a_running_list_returns_promptly_and_silences_it(void) {
    recorder r;
    recorder_init(&r);
    sheaf_client *client = client_for(&g_server, NULL);
    /* 100 pages of 1 s each: at least 13 s with a window of 8. */
    sheaf_list *list = anchor_list(client, "/anchor?n=1000&latency_ms=1000", 10, ANCHOR_ALL);
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start(list, record_snapshot, &r, NULL), SHEAF_OK);
        long long deadline = now_ms() + 15000;
        while (atomic_load(&r.calls) < 1 && now_ms() < deadline) sleep_ms(10);
        CHECK(atomic_load(&r.calls) >= 1);
        long long started = now_ms();
        sheaf_list_free(list);
        long long took = now_ms() - started;
        atomic_store(&r.closed, 1);
        int calls = atomic_load(&r.calls);
        if (!CHECK(took < (g_quick ? 8000 : 2000))) fprintf(stderr, "    sheaf_list_free took %lld ms\n", took);
        CHECK_INT(atomic_load(&r.inside), 0);
        sleep_ms(1500);
        CHECK_INT(atomic_load(&r.after_close), 0);
        CHECK_INT(atomic_load(&r.calls), calls);
    }
    sheaf_client_free(client);
    recorder_free(&r);
}

static void blocking_calls_inside_callbacks_are_refused(void) {
    recorder r;
    recorder_init(&r);
    r.try_blocking_calls = 1;
    blocking_transport transport;
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "");
    sheaf_list *other = standard_list(client, "");
    sheaf_list *pulled = anchor_list(client, "/anchor?n=100&latency_ms=3000", 10, ANCHOR_ALL);
    r.other_list = other;
    r.pulled_list = pulled;
    inspected_transport_init(&transport, other);
    if (list != NULL && other != NULL && pulled != NULL) {
        CHECK_LIST_RESULT(pulled, sheaf_list_start_pull(pulled), SHEAF_OK);   /* its page one takes 3 s */
        /* The transport is a callback too: the list started below runs through it. */
        CHECK_CLIENT_RESULT(client, sheaf_client_set_transport(client, blocking_transport_get, &transport, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start(list, record_snapshot, &r, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK(atomic_load(&r.calls) >= 1);
        CHECK(atomic_load(&transport.calls) >= 1);
        CHECK_ITEMS(r.deltas, 0, list_size());
    }
    sheaf_list_free(pulled);
    sheaf_list_free(other);
    sheaf_list_free(list);
    sheaf_client_free(client);
    recorder_free(&r);
}

/* ---- the runner ----------------------------------------------------------------------------- */

/* ---- single requests ----------------------------------------------------------------------- */

/* Sends `request`, expecting `expected`; returns the echoed JSON body (NULL when none). */
static json_t *send_and_decode(sheaf_request *request, int expected) {
    int result = sheaf_request_send(request);
    if (!CHECK_RESULT(result, expected)) {
        sheaf_error *error = sheaf_request_error(request);
        if (error) fprintf(stderr, "    request error: %s\n", error->message);
        sheaf_error_free(error);
    }
    size_t length = 0;
    const char *body = sheaf_request_body(request, &length);
    if (body == NULL) return NULL;
    CHECK(body[length] == '\0');
    return json_loadb(body, length, JSON_ALLOW_NUL, NULL);
}

/* The first value of the echoed request header `name` (lower case), or NULL. */
static const char *echoed_header(const json_t *echo, const char *name) {
    return json_string_value(json_array_get(json_object_get(json_object_get(echo, "headers"), name), 0));
}

static void requests_send_every_method_path_query_and_body_kind(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    CHECK_CLIENT_RESULT(client, sheaf_client_add_header(client, "X-Client", "default"), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_add_header(client, "X-Replaced", "client"), SHEAF_OK);
    const char *methods[] = { "GET", "PUT", "DELETE", "OPTIONS", "POST", "PATCH" };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, methods[i], "/req/echo"), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_segment(request, "a/b c"), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_query(request, "q", "x&y=z"), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_header(request, "X-Replaced", "request"), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_INT(sheaf_request_status(request), 200);
        CHECK_STR(json_string_value(json_object_get(echo, "method")), methods[i]);
        CHECK_STR(json_string_value(json_object_get(echo, "path")), "/req/echo/a%2Fb%20c");
        json_t *pair = json_array_get(json_object_get(echo, "query"), 0);
        CHECK_STR(json_string_value(json_array_get(pair, 1)), "x&y=z");
        CHECK_STR(echoed_header(echo, "x-client"), "default");
        CHECK_STR(echoed_header(echo, "x-replaced"), "request");
        CHECK(json_array_size(json_object_get(json_object_get(echo, "headers"), "x-replaced")) == 1);
        CHECK_STR(sheaf_request_header_value(request, "x-echo-method"), methods[i]);
        json_decref(echo);
        sheaf_request_free(request);
    }

    /* HEAD: a status and headers, no body. */
    sheaf_request *head = NULL;
    CHECK_RESULT(sheaf_request_new(&head, client, "HEAD", "req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(head), SHEAF_OK);
    size_t length = 99;
    CHECK(sheaf_request_body(head, &length) != NULL && length == 0);
    CHECK_STR(sheaf_request_header_value(head, "X-Echo-Method"), "HEAD");
    sheaf_request_free(head);

    /* A JSON body, a form body and raw bytes with a NUL in them. */
    sheaf_request *post = NULL;
    CHECK_RESULT(sheaf_request_new(&post, client, "POST", "/req/echo"), SHEAF_OK);
    const char *json = "{\"name\":\"sheaf\",\"n\":3}";
    CHECK_RESULT(sheaf_request_set_body(post, "application/json", json, strlen(json)), SHEAF_OK);
    json_t *echo = send_and_decode(post, SHEAF_OK);
    CHECK_STR(json_string_value(json_object_get(json_object_get(echo, "json"), "name")), "sheaf");
    CHECK_STR(json_string_value(json_object_get(echo, "content_type")), "application/json");
    json_decref(echo);
    sheaf_request_free(post);

    sheaf_request *form = NULL;
    CHECK_RESULT(sheaf_request_new(&form, client, "PUT", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_form(form, "name", "a b&c=d"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_form(form, "caf\xc3\xa9", "\xe2\x82\xac"), SHEAF_OK);
    echo = send_and_decode(form, SHEAF_OK);
    json_t *fields = json_object_get(echo, "form");
    CHECK_STR(json_string_value(json_array_get(json_object_get(fields, "name"), 0)), "a b&c=d");
    CHECK_STR(json_string_value(json_array_get(json_object_get(fields, "caf\xc3\xa9"), 0)), "\xe2\x82\xac");
    json_decref(echo);
    sheaf_request_free(form);

    sheaf_request *raw = NULL;
    CHECK_RESULT(sheaf_request_new(&raw, client, "PATCH", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_body(raw, "application/octet-stream", "a\0b", 3), SHEAF_OK);
    echo = send_and_decode(raw, SHEAF_OK);
    CHECK_INT(json_integer_value(json_object_get(echo, "body_length")), 3);
    json_decref(echo);
    sheaf_request_free(raw);
    sheaf_client_free(client);
}

static void a_base_url_is_a_prefix_of_every_path(void) {
    char base[128];
    snprintf(base, sizeof base, "%s/req", g_server.base_url);
    sheaf_client *client = NULL;
    CHECK_RESULT(sheaf_client_new(&client, base), SHEAF_OK);
    const char *paths[] = { "echo/x", "/echo/x", "./echo/x" };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", paths[i]), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_STR(json_string_value(json_object_get(echo, "path")), "/req/echo/x");
        json_decref(echo);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

static void request_errors_carry_the_servers_own_fields(void) {
    static const struct { const char *shape; int status; const char *wanted; } cases[] = {
        { "plain", 400, "invalid_cursor" },
        { "reason", 401, "token expired" },
        { "drf", 403, "You do not have permission" },
        { "fastapi", 422, "body.name: Field required" },
        { "stripe", 400, "Missing required param: amount." },
        { "stripe", 400, "parameter_missing" },
        { "google", 404, "Requested entity was not found." },
        { "github", 401, "Bad credentials" },
        { "jsonapi", 422, "First name must contain at least two characters." },
        { "problem", 403, "Your current balance is 30, but that costs 50." },
        { "problem", 403, "You do not have enough credit." },
        { "odata", 400, "Invalid $top value." },
    };
    sheaf_client *client = client_for(&g_server, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/req/error/%s", cases[i].shape);
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", path), SHEAF_OK);
        CHECK_RESULT(sheaf_request_send(request), SHEAF_E_HTTP);
        CHECK_INT(sheaf_request_status(request), cases[i].status);
        size_t length = 0;
        CHECK(sheaf_request_body(request, &length) != NULL && length > 0);   /* the response stays readable */
        sheaf_error *error = sheaf_request_error(request);
        if (CHECK(error != NULL)) {
            CHECK_INT(error->http_status, cases[i].status);
            if (!CHECK(strstr(error->server_message, cases[i].wanted) != NULL))
                fprintf(stderr, "    %s: server_message \"%s\"\n", cases[i].shape, error->server_message);
            CHECK(strstr(error->message, cases[i].wanted) != NULL);
        }
        sheaf_error_free(error);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

/* Sends `method` to /req/flaky (one 503 first) under a fresh key; returns the result. */
static int send_flaky(sheaf_client *client, const char *method, const char *key, int opt_in, const char *idempotency_key) {
    char path[96];
    snprintf(path, sizeof path, "/req/flaky?fails=1&key=%s", key);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, method, path), SHEAF_OK);
    if (opt_in) CHECK_RESULT(sheaf_request_set_retry(request, 1), SHEAF_OK);
    if (idempotency_key) CHECK_RESULT(sheaf_request_add_header(request, "Idempotency-Key", idempotency_key), SHEAF_OK);
    int result = sheaf_request_send(request);
    sheaf_request_free(request);
    return result;
}

static void requests_retry_only_what_is_safe_to_repeat(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);
    char key[64];
    snprintf(key, sizeof key, "get-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "GET", key, 0, NULL), SHEAF_OK);
    snprintf(key, sizeof key, "put-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "PUT", key, 0, NULL), SHEAF_OK);
    snprintf(key, sizeof key, "post-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "POST", key, 0, NULL), SHEAF_E_HTTP);   /* may have taken effect: not repeated */
    snprintf(key, sizeof key, "patch-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "PATCH", key, 0, NULL), SHEAF_E_HTTP);
    snprintf(key, sizeof key, "post-opt-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "POST", key, 1, NULL), SHEAF_OK);
    snprintf(key, sizeof key, "post-key-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "POST", key, 0, "7c1b"), SHEAF_OK);
    sheaf_client_free(client);
}

static void redirects_turn_a_post_into_a_get_only_where_http_says_so(void) {
    static const struct { int code; const char *method; int keeps_body; } cases[] = {
        { 303, "GET", 0 }, { 302, "GET", 0 }, { 301, "GET", 0 }, { 307, "POST", 1 }, { 308, "POST", 1 },
    };
    sheaf_client *client = client_for(&g_server, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[96];
        snprintf(path, sizeof path, "/req/redirect?code=%d&to=/req/echo/after", cases[i].code);
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "POST", path), SHEAF_OK);
        CHECK_RESULT(sheaf_request_set_body(request, "text/plain", "hello", 5), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_STR(json_string_value(json_object_get(echo, "method")), cases[i].method);
        CHECK_INT(json_integer_value(json_object_get(echo, "body_length")), cases[i].keeps_body ? 5 : 0);
        CHECK(strstr(sheaf_request_url(request), "/req/echo/after") != NULL);
        json_decref(echo);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

/* A segment is one segment as the server receives it: "." and ".." are data, not a step up the
 * path (DELETE users/.. reached /req/ in 0.4.0), and every delimiter in it is escaped. */
static void a_segment_reaches_the_server_as_one_segment_even_dots(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    static const struct { const char *method, *first, *second, *path; } cases[] = {
        { "DELETE", "users", "..", "/req/echo/users/%2E%2E" },
        { "GET", ".", "items", "/req/echo/%2E/items" },
        { "PUT", "..", "..", "/req/echo/%2E%2E/%2E%2E" },
        { "GET", "...", ".x", "/req/echo/.../.x" },          /* not dot segments: as they are */
        { "GET", "a/b?c#d%e f", "", "/req/echo/a%2Fb%3Fc%23d%25e%20f/" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sheaf_request *request = NULL;
        if (!CHECK_RESULT(sheaf_request_new(&request, client, cases[i].method, "/req/echo"), SHEAF_OK)) continue;
        CHECK_RESULT(sheaf_request_add_segment(request, cases[i].first), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_segment(request, cases[i].second), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_INT(sheaf_request_status(request), 200);
        CHECK_STR(json_string_value(json_object_get(echo, "path")), cases[i].path);
        json_decref(echo);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

/* Whether `result` is SHEAF_E_INVALID_ARGUMENT with a message (sheaf_last_error) naming `name`. */
static int refused_naming(sheaf_result result, const char *name) {
    sheaf_error *error = sheaf_last_error();
    int named = error != NULL && strstr(error->message, name) != NULL;
    if (!named) fprintf(stderr, "    the error does not name %s: %s\n", name, error ? error->message : "(none)");
    sheaf_error_free(error);
    return CHECK_RESULT(result, SHEAF_E_INVALID_ARGUMENT) && CHECK(named);
}

/* Headers that frame the message are the transport's: a caller's Content-Length: 0 on a POST
 * left the body on a keep-alive connection, read as a second request (request smuggling). They
 * are refused wherever a caller sets headers; any other header still goes out. */
static void framing_headers_are_refused_from_every_caller_and_others_go_out(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    sheaf_request *request = NULL;
    if (client == NULL) return;
    CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_new(&request, client, "POST", "/req/echo"), SHEAF_OK);
    static const struct { const char *name, *value; } framing[] = {
        { "Content-Length", "0" }, { "content-length", "5" }, { "Transfer-Encoding", "chunked" },
        { "TRANSFER-encoding", "identity" }, { "Host", "internal.example" }, { "host", "x" },
        { "Connection", "close" }, { "CONNECTION", "keep-alive, Upgrade" },
    };
    for (size_t i = 0; i < sizeof framing / sizeof framing[0]; i++) {
        refused_naming(sheaf_client_add_header(client, framing[i].name, framing[i].value), framing[i].name);
        refused_naming(sheaf_list_add_header(list, framing[i].name, framing[i].value), framing[i].name);
        refused_naming(sheaf_request_add_header(request, framing[i].name, framing[i].value), framing[i].name);
    }
    CHECK_RESULT(sheaf_client_add_header(client, "X-Injected", "a\rb"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_add_header(list, "X-Injected", "a\nb"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_add_header(request, "X-Bad\rName", "v"), SHEAF_E_INVALID_ARGUMENT);

    /* Nothing refused was kept: the request goes out with its own framing and the other headers. */
    CHECK_CLIENT_RESULT(client, sheaf_client_add_header(client, "X-Client-Custom", "c1"), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_add_header(list, "X-List-Custom", "l1"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_header(request, "X-Request-Custom", "r1"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain", "hello", 5), SHEAF_OK);
    json_t *echo = send_and_decode(request, SHEAF_OK);
    CHECK_STR(echoed_header(echo, "x-client-custom"), "c1");
    CHECK_STR(echoed_header(echo, "x-request-custom"), "r1");
    CHECK_STR(echoed_header(echo, "content-length"), "5");
    CHECK(echoed_header(echo, "transfer-encoding") == NULL);
    const char *host = echoed_header(echo, "host");   /* the server's own, e.g. 127.0.0.1:PORT */
    CHECK(host != NULL && strstr(g_server.base_url, host) != NULL);
    json_decref(echo);
    sheaf_request_free(request);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

static void requests_refuse_what_cannot_be_sent(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GE T", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK(request == NULL);
    CHECK_RESULT(sheaf_request_new(&request, client, "", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_new(&request, NULL, "GET", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_new(NULL, client, "GET", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_add_header(client, "X-Bad\nName", "v"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_add_header(client, "X-Injected", "v\r\nX-Evil: 1"), SHEAF_E_INVALID_ARGUMENT);

    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_header(request, "Bad Name", "v"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_add_header(request, "X-Injected", "a\nb"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain\r\nX-Evil: 1", "x", 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain", NULL, 4), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain", "body", 4), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_E_INVALID_ARGUMENT);   /* a body on GET */
    sheaf_error *error = sheaf_request_error(request);
    CHECK(error != NULL && strstr(error->message, "GET") != NULL);
    sheaf_error_free(error);
    CHECK_INT(sheaf_request_status(request), 0);
    CHECK(sheaf_request_body(request, NULL) == NULL);
    sheaf_request_free(request);

    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_wait(request), SHEAF_E_STATE);              /* not started */
    CHECK_RESULT(sheaf_request_send(request), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_E_STATE);              /* sent once */
    CHECK_RESULT(sheaf_request_add_query(request, "a", "b"), SHEAF_E_STATE);
    const char *name = NULL, *value = NULL;
    CHECK_RESULT(sheaf_request_header(request, 9999, &name, &value), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_header(request, 0, &name, &value), SHEAF_OK);
    CHECK(name != NULL && value != NULL);
    sheaf_request_free(request);
    sheaf_request_free(NULL);
    CHECK_INT(sheaf_request_status(NULL), 0);
    CHECK(sheaf_request_body(NULL, NULL) == NULL);
    sheaf_client_free(client);
}

static void every_credential_kind_goes_only_to_its_origin(void) {
    char foreign[160];
    snprintf(foreign, sizeof foreign, "%s/req/echo", g_other.base_url);
    static const struct { sheaf_auth kind; const char *name, *value, *header, *expected; } cases[] = {
        { SHEAF_AUTH_BEARER, NULL, "t0ken-1", "authorization", "Bearer t0ken-1" },
        { SHEAF_AUTH_BASIC, "Aladdin", "open sesame", "authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==" },
        { SHEAF_AUTH_API_KEY_HEADER, "X-Api-Key", "k3y-header", "x-api-key", "k3y-header" },
        { SHEAF_AUTH_API_KEY_QUERY, "api_key", "k3y-query", NULL, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sheaf_client *client = client_for(&g_server, NULL);
        CHECK_RESULT(sheaf_client_set_credential(client, cases[i].kind, cases[i].name, cases[i].value), SHEAF_OK);
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        if (cases[i].header) {
            CHECK_STR(echoed_header(echo, cases[i].header), cases[i].expected);
        } else {
            json_t *pair = json_array_get(json_object_get(echo, "query"), 0);
            CHECK_STR(json_string_value(json_array_get(pair, 0)), "api_key");
            CHECK_STR(json_string_value(json_array_get(pair, 1)), "k3y-query");
            CHECK(strstr(sheaf_request_url(request), "k3y-query") == NULL);   /* redacted */
        }
        json_decref(echo);
        sheaf_request_free(request);

        /* Another origin: refused by default, sent without any credential when allowed. */
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", foreign), SHEAF_OK);
        CHECK_RESULT(sheaf_request_send(request), SHEAF_E_CROSS_ORIGIN);
        sheaf_request_free(request);
        set_option(client, SHEAF_OPT_CROSS_ORIGIN, 1);
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", foreign), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_header(request, "Cookie", "session=1"), SHEAF_OK);
        echo = send_and_decode(request, SHEAF_OK);
        char *text = json_dumps(echo, 0);
        CHECK(text != NULL && strstr(text, cases[i].value) == NULL);
        CHECK(text != NULL && strstr(text, "session=1") == NULL);
        CHECK(echoed_header(echo, "authorization") == NULL);
        free(text);
        json_decref(echo);
        sheaf_request_free(request);

        /* A failure's message never shows the credential, whatever the server echoes. */
        char path[96];
        snprintf(path, sizeof path, "/req/echo?status=400&token=s3cret-param");
        CHECK_RESULT(sheaf_request_new(&request, client, "POST", path), SHEAF_OK);
        CHECK_RESULT(sheaf_request_send(request), SHEAF_E_HTTP);
        sheaf_error *error = sheaf_request_error(request);
        if (CHECK(error != NULL)) {
            CHECK(strstr(error->message, cases[i].value) == NULL && strstr(error->body, cases[i].value) == NULL);
            CHECK(strstr(error->url, "s3cret-param") == NULL && strstr(error->message, "s3cret-param") == NULL);
            CHECK(strstr(error->body, "s3cret-param") == NULL);
        }
        sheaf_error_free(error);
        sheaf_request_free(request);
        sheaf_client_free(client);
    }
    sheaf_client *client = client_for(&g_server, NULL);
    CHECK_RESULT(sheaf_client_set_credential(client, SHEAF_AUTH_BASIC, "user:colon", "pw"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential(client, SHEAF_AUTH_API_KEY_HEADER, "Bad Header", "v"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential(client, SHEAF_AUTH_API_KEY_QUERY, "k", ""), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_BASIC, "a:b"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential(client, (sheaf_auth)99, "a", "b"), SHEAF_E_INVALID_ARGUMENT);
    sheaf_client_free(client);
}

typedef struct done_record {
    atomic_int calls;
    atomic_int destroyed;
    atomic_int result;
    atomic_int status;
    atomic_int reentrant;
} done_record;

static void on_request_done(sheaf_request *request, sheaf_result result, void *user_data) {
    done_record *record = user_data;
    atomic_store(&record->result, result);
    atomic_store(&record->status, sheaf_request_status(request));
    atomic_store(&record->reentrant, sheaf_request_wait(request) == SHEAF_E_REENTRANT);
    atomic_fetch_add(&record->calls, 1);
}

static void on_request_destroy(void *user_data) {
    atomic_fetch_add(&((done_record *)user_data)->destroyed, 1);
}

static void a_started_request_calls_back_once_and_frees_its_user_data(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    done_record record = { 0 };
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "DELETE", "/req/echo?status=204"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, on_request_done, &record, on_request_destroy), SHEAF_OK);
    CHECK_RESULT(sheaf_request_wait(request), SHEAF_OK);
    CHECK_INT(atomic_load(&record.calls), 1);         /* wait returns after the callback */
    CHECK_INT(atomic_load(&record.result), SHEAF_OK);
    CHECK_INT(atomic_load(&record.status), 204);
    CHECK_INT(atomic_load(&record.reentrant), 1);
    CHECK_RESULT(sheaf_request_start(request, on_request_done, &record, on_request_destroy), SHEAF_E_STATE);
    sheaf_request_free(request);
    CHECK_INT(atomic_load(&record.destroyed), 1);     /* the refused start's user data stays the caller's */

    /* Freed while in flight: no callback after the free, the user data released once. */
    done_record slow = { 0 };
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/anchor?latency_ms=3000"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, on_request_done, &slow, on_request_destroy), SHEAF_OK);
    long long started = now_ms();
    sheaf_request_free(request);
    int calls_at_free = atomic_load(&slow.calls);
    CHECK(now_ms() - started < 2000);
    sleep_ms(50);
    CHECK_INT(atomic_load(&slow.calls), calls_at_free);
    CHECK_INT(atomic_load(&slow.destroyed), 1);

    /* Cancelled: the outcome says so. */
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/anchor?latency_ms=3000"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, NULL, NULL, NULL), SHEAF_OK);
    CHECK_RESULT(sheaf_request_cancel(request), SHEAF_OK);
    CHECK_RESULT(sheaf_request_wait(request), SHEAF_E_CANCELLED);
    sheaf_request_free(request);
    sheaf_client_free(client);
}

/* ---- downloads ----------------------------------------------------------------------------- */

/* Whether the file at `path` holds exactly `size` bytes of the server's pattern (byte i = i % 251). */
static int holds_pattern(const char *path, long size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return 0;
    long i = 0;
    int c, ok = 1;
    while ((c = fgetc(file)) != EOF) {   /* bounded by the file */
        if (c != (int)(i % 251)) ok = 0;
        i++;
    }
    fclose(file);
    return ok && i == size;
}

static int file_exists(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file) fclose(file);
    return file != NULL;
}

static void write_text(const char *path, const char *text) {
    FILE *file = fopen(path, "wb");
    if (CHECK(file != NULL)) {
        fputs(text, file);
        fclose(file);
    }
}

/* Downloads `path` of the server into `destination`; returns the result. */
static int download(sheaf_client *client, const char *path, const char *destination, int64_t *done, int64_t *expected) {
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", path), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_output_file(request, destination), SHEAF_OK);
    int result = sheaf_request_send(request);
    if (done) CHECK_RESULT(sheaf_request_progress(request, done, expected), SHEAF_OK);
    if (result == SHEAF_OK) {
        size_t length = 99;
        CHECK(sheaf_request_body(request, &length) != NULL && length == 0);   /* the body is in the file */
    }
    sheaf_request_free(request);
    return result;
}

static void downloads_stream_to_a_file_that_appears_only_when_complete(void) {
    char folder[] = "/tmp/sheaf-download-XXXXXX";
    if (!CHECK(mkdtemp(folder) != NULL)) return;
    char destination[256], part[272], path[160];
    snprintf(destination, sizeof destination, "%s/a/b/file.bin", folder);   /* folders created */
    snprintf(part, sizeof part, "%s.part", destination);
    sheaf_client *client = client_for(&g_server, NULL);
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);

    int64_t done = -2, expected = -2;
    CHECK_RESULT(download(client, "/req/download?size=1000000", destination, &done, &expected), SHEAF_OK);
    CHECK(holds_pattern(destination, 1000000));
    CHECK_INT(done, 1000000);
    CHECK_INT(expected, 1000000);
    CHECK(!file_exists(part));

    /* A transfer cut after 300,000 bytes resumes with Range (the server sends an ETag), or
       starts again without a validator; either way the file is whole. */
    static const struct { const char *options; long long bytes_sent; } variants[] = {
        { "", 700000 },                  /* resumed: 300,000 + the other 400,000 */
        { "&etag=0", 1000000 },          /* no validator: 300,000 + 700,000 again */
        { "&ranges=0", 1000000 },        /* Range ignored: a 200 with the whole body */
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "cut-%zu-%lld", i, now_ms());
        snprintf(path, sizeof path, "/req/download?size=700000&cut=300000&key=%s%s", key, variants[i].options);
        CHECK_RESULT(download(client, path, destination, &done, NULL), SHEAF_OK);
        CHECK(holds_pattern(destination, 700000));
        CHECK_INT(done, 700000);
        snprintf(path, sizeof path, "/req/download-stats?key=%s", key);
        json_t *stats = test_server_get_json(&g_server, path);
        CHECK_INT(json_integer_value(json_object_get(stats, "requests")), 2);
        CHECK_INT(json_integer_value(json_object_get(stats, "bytes")), variants[i].bytes_sent);
        json_decref(stats);
    }

    /* Failures leave the old file as it was, and no part file. */
    write_text(destination, "old");
    CHECK_RESULT(download(client, "/req/error/drf", destination, NULL, NULL), SHEAF_E_HTTP);
    set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 2);
    CHECK_RESULT(download(client, "/req/download?size=5000&lie=100", destination, NULL, NULL), SHEAF_E_TRANSPORT);
    FILE *file = fopen(destination, "rb");
    char text[8] = { 0 };
    if (CHECK(file != NULL)) {
        CHECK(fread(text, 1, sizeof text - 1, file) == 3);
        fclose(file);
    }
    CHECK_STR(text, "old");
    CHECK(!file_exists(part));

    /* A directory, or a folder that cannot exist, is refused with a clear code. */
    CHECK_RESULT(download(client, "/req/download?size=10", folder, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(download(client, "/req/download?size=10", "/proc/version/sub/file", NULL, NULL), SHEAF_E_IO);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/download?size=10"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_output_file(request, ""), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_progress(request, NULL, NULL), SHEAF_OK);
    sheaf_request_free(request);
    sheaf_client_free(client);

    unlink(destination);
    snprintf(path, sizeof path, "%s/a/b", folder);
    rmdir(path);
    snprintf(path, sizeof path, "%s/a", folder);
    rmdir(path);
    rmdir(folder);
}

/* ---- log records and events ------------------------------------------------------------- */

typedef struct hook_entry {
    int is_event, kind, level, status, attempt, transport_error;
    int64_t wait_or_delay, duration_ms;
    char message[512];
    char url[256];
} hook_entry;

typedef struct hook_recorder {
    pthread_mutex_t lock;
    hook_entry entries[128];
    int count;
    atomic_int concurrent, overlapped, destroyed;
} hook_recorder;

static void record_hook(hook_recorder *recorder, hook_entry entry) {
    if (atomic_fetch_add(&recorder->concurrent, 1) != 0) atomic_store(&recorder->overlapped, 1);
    pthread_mutex_lock(&recorder->lock);
    if (recorder->count < (int)(sizeof recorder->entries / sizeof recorder->entries[0]))
        recorder->entries[recorder->count++] = entry;
    pthread_mutex_unlock(&recorder->lock);
    atomic_fetch_sub(&recorder->concurrent, 1);
}

static void on_log_record(const sheaf_log_record *record, void *user_data) {
    hook_entry entry = { .kind = record->kind, .level = record->level, .status = record->http_status,
                         .attempt = record->attempt, .wait_or_delay = record->delay_ms,
                         .duration_ms = record->duration_ms, .transport_error = -1 };
    snprintf(entry.message, sizeof entry.message, "%s", record->message);
    snprintf(entry.url, sizeof entry.url, "%s", record->url ? record->url : "");
    record_hook(user_data, entry);
}

static void on_client_event(const sheaf_event *event, void *user_data) {
    hook_entry entry = { .is_event = 1, .kind = event->kind, .status = event->http_status, .attempt = event->attempt,
                         .wait_or_delay = event->wait_ms, .transport_error = event->transport_error, .duration_ms = -1 };
    snprintf(entry.message, sizeof entry.message, "%s", event->message);
    snprintf(entry.url, sizeof entry.url, "%s", event->url);
    record_hook(user_data, entry);
}

/* Waits (bounded: 5 s) until `recorder` holds `count` entries: hooks run on a library thread, and
 * freeing the client drops what is still queued for them. */
static void await_hook_entries(hook_recorder *recorder, int count) {
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&recorder->lock);
        int seen = recorder->count;
        pthread_mutex_unlock(&recorder->lock);
        if (seen >= count) return;
        sleep_ms(10);
    }
}

static void on_recorder_destroy(void *user_data) {
    atomic_fetch_add(&((hook_recorder *)user_data)->destroyed, 1);
}

/* The entries of `recorder` from `from` on, as "log:KIND:STATUS:ATTEMPT" / "event:KIND:STATUS:ATTEMPT"
   joined by spaces (records of a plan as "log:plan"), into `out`. */
static const char *hook_script(hook_recorder *recorder, int from, char *out, size_t size) {
    size_t used = 0;
    out[0] = 0;
    pthread_mutex_lock(&recorder->lock);
    for (int i = from; i < recorder->count && used < size; i++) {
        const hook_entry *e = &recorder->entries[i];
        used += (size_t)snprintf(out + used, size - used, "%s%s:%d:%d:%d", used ? " " : "", e->is_event ? "event" : "log",
                                 e->kind, e->status, e->attempt);
    }
    pthread_mutex_unlock(&recorder->lock);
    return out;
}

static int send_simple(sheaf_client *client, const char *path) {
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", path), SHEAF_OK);
    int result = sheaf_request_send(request);
    sheaf_request_free(request);
    return result;
}

/* A credential provider that gives "stale-c-token" first and "fresh-c-token" after, counting its calls. */
typedef struct { pthread_mutex_t lock; int calls, refreshes, destroyed; int refuse; } token_source;

static void provide_token(sheaf_credential_reply *reply, void *user_data) {
    token_source *source = user_data;
    pthread_mutex_lock(&source->lock);
    int call = source->calls++;
    source->refreshes += sheaf_credential_reply_is_refresh(reply);
    pthread_mutex_unlock(&source->lock);
    if (source->refuse) {
        CHECK_RESULT(sheaf_credential_reply_fail(reply, "no token today"), SHEAF_OK);
        return;
    }
    CHECK_RESULT(sheaf_credential_reply_set(reply, ""), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_credential_reply_set(reply, call == 0 ? "stale-c-token" : "fresh-c-token"), SHEAF_OK);
}

static void forget_token_source(void *user_data) {
    token_source *source = user_data;
    pthread_mutex_lock(&source->lock);
    source->destroyed++;
    pthread_mutex_unlock(&source->lock);
}

static void a_credential_provider_is_asked_once_then_once_per_401(void) {
    token_source source = { .lock = PTHREAD_MUTEX_INITIALIZER };
    sheaf_client *client = client_for(&g_server, NULL);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_NONE, NULL, provide_token, &source, NULL),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_BASIC, NULL, provide_token, &source, NULL),
                 SHEAF_E_INVALID_ARGUMENT);   /* Basic needs its user */
    CHECK(source.destroyed == 0);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_BEARER, NULL, provide_token, &source,
                                                      forget_token_source), SHEAF_OK);
    /* A list whose pages from 2 on want the fresh token: page 1 goes with the stale one. */
    char path[160];
    snprintf(path, sizeof path, "/anchor?n=%d&bearer=fresh-c-token&bearer_from=2", list_size());
    sheaf_list *list = anchor_list(client, path, page_size(), ANCHOR_ALL);
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, list_size());
    }
    CHECK_INT(source.calls, 2);
    CHECK_INT(source.refreshes, 1);
    /* A request the fresh token cannot open either: one more refresh, then the 401 is the answer. */
    CHECK_RESULT(send_simple(client, "/req/echo?bearer=another-token"), SHEAF_E_HTTP);
    CHECK_INT(source.calls, 3);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
    /* Nothing needs it any more; the library's threads let go of their last references just
     * after (a fetch finishing on another thread): wait (bounded). */
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&source.lock);
        int destroyed = source.destroyed;
        pthread_mutex_unlock(&source.lock);
        if (destroyed) break;
        sleep_ms(10);
    }
    CHECK_INT(source.destroyed, 1);

    /* A provider without a credential: the request fails with SHEAF_E_CREDENTIAL, its message said. */
    token_source refusing = { .lock = PTHREAD_MUTEX_INITIALIZER, .refuse = 1 };
    client = client_for(&g_server, NULL);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_API_KEY_HEADER, "X-Api-Key", provide_token,
                                                      &refusing, NULL), SHEAF_OK);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_E_CREDENTIAL);
    sheaf_error *error = sheaf_request_error(request);
    CHECK(error != NULL && strstr(error->message, "no token today") != NULL);
    sheaf_error_free(error);
    sheaf_request_free(request);
    sheaf_client_free(client);
}

/* An event hook that takes 400 ms and tries a blocking flush from inside itself. */
static atomic_int g_slow_events, g_flush_inside;
static sheaf_client *volatile g_flushed_client;
static void on_slow_event(const sheaf_event *event, void *user_data) {
    (void)event; (void)user_data;
    atomic_store(&g_flush_inside, sheaf_client_flush_hooks(g_flushed_client));
    sleep_ms(400);
    atomic_fetch_add(&g_slow_events, 1);
}

/* Freeing a client drops the events still queued; flushing first hands every one over. */
static void flushing_the_hooks_hands_over_every_queued_event(void) {
    atomic_store(&g_slow_events, 0);
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    g_flushed_client = client;
    set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 1);
    CHECK_RESULT(sheaf_client_set_event_handler(client, on_slow_event, NULL, NULL), SHEAF_OK);
    for (int i = 0; i < 3; i++) CHECK_RESULT(send_simple(client, "/req/echo?status=503"), SHEAF_E_HTTP);
    CHECK_RESULT(sheaf_client_flush_hooks(client), SHEAF_OK);
    CHECK_INT(atomic_load(&g_slow_events), 3);
    CHECK_INT(atomic_load(&g_flush_inside), SHEAF_E_REENTRANT);   /* a hook cannot wait for itself */
    for (int i = 0; i < 5; i++) CHECK_RESULT(send_simple(client, "/req/echo?status=503"), SHEAF_E_HTTP);
    long long started = now_ms();
    sheaf_client_free(client);
    int at_free = atomic_load(&g_slow_events);
    long long took = now_ms() - started;
    if (took >= 1000) printf("    free took %lld ms, %d events at the free\n", took, at_free);
    CHECK(took < 1000);   /* at most the call running now (400 ms), not the five (2 s) */
    CHECK(at_free < 8);
    sleep_ms(600);
    CHECK_INT(atomic_load(&g_slow_events), at_free);   /* none after the free */
    CHECK_RESULT(sheaf_client_flush_hooks(NULL), SHEAF_E_INVALID_ARGUMENT);
}

static void hooks_log_every_attempt_and_tell_events_without_secrets(void) {
    static const char *secret_token = "s3cret-token-value", *secret_key = "k3y-secret-value";
    hook_recorder recorder = { .lock = PTHREAD_MUTEX_INITIALIZER };
    sheaf_client *client = client_for(&g_server, secret_token);
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);
    set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 3);
    CHECK_RESULT(sheaf_client_set_log(client, (sheaf_log_level)9, on_log_record, &recorder, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_log(client, SHEAF_LOG_INFO, on_log_record, &recorder, on_recorder_destroy), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_event_handler(client, on_client_event, &recorder, on_recorder_destroy), SHEAF_OK);
    char script[2048], path[160];

    /* A 429 with Retry-After: 0, then an answer. */
    snprintf(path, sizeof path, "/req/flaky?key=hooks-%lld&fails=1&status=429", now_ms());
    CHECK_RESULT(send_simple(client, path), SHEAF_OK);
    int seen = 0;   /* records are handed over on a library thread: wait for them */
    for (int i = 0; i < 200 && seen < 5; i++) {   /* bounded: 2 s */
        pthread_mutex_lock(&recorder.lock);
        seen = recorder.count;
        pthread_mutex_unlock(&recorder.lock);
        if (seen < 5) sleep_ms(10);
    }
    CHECK_STR(hook_script(&recorder, 0, script, sizeof script),
              "log:1:429:1 log:2:429:1 event:4:429:1 event:5:429:1 log:1:200:2");
    CHECK_INT(recorder.entries[2].wait_or_delay, 0);   /* the wait chosen: Retry-After's 0 s */
    CHECK_INT(recorder.entries[1].wait_or_delay, 0);
    CHECK(recorder.entries[0].duration_ms >= 0);

    /* A 503 on every attempt: retried, then the server is unavailable. */
    int from = recorder.count;
    CHECK_RESULT(send_simple(client, "/req/echo?status=503"), SHEAF_E_HTTP);
    /* A refused credential, with a secret in the query. */
    snprintf(path, sizeof path, "/req/echo?status=401&api_key=%s", secret_key);
    CHECK_RESULT(send_simple(client, path), SHEAF_E_HTTP);
    /* A list: one record of its plan, and one per page (one at a time, so their order is
     * fixed: with a window, pages asked for ahead of page one may answer before it is planned). */
    set_option(client, SHEAF_OPT_WINDOW, 1);
    sheaf_list *list = NULL;
    CHECK_RESULT(sheaf_list_new(&list, client, "/anchor?n=30&per_page=10"), SHEAF_OK);
    CHECK_RESULT(sheaf_list_use_preset(list, "anchor"), SHEAF_OK);
    char *items = NULL;
    CHECK_RESULT(sheaf_list_fetch_all(list, &items, NULL), SHEAF_OK);
    sheaf_free(items);
    sheaf_list_free(list);

    await_hook_entries(&recorder, from + 14);   /* the list's records, before another client's */

    /* A dead port: offline after every attempt, on a client of its own with the same hooks. */
    sheaf_client *dead = NULL;
    CHECK_RESULT(sheaf_client_new(&dead, "http://127.0.0.1:1"), SHEAF_OK);
    set_option(dead, SHEAF_OPT_RETRY_BASE_MS, 1);
    set_option(dead, SHEAF_OPT_MAX_ATTEMPTS, 2);
    CHECK_RESULT(sheaf_client_set_event_handler(dead, on_client_event, &recorder, NULL), SHEAF_OK);
    CHECK_RESULT(send_simple(dead, "/x"), SHEAF_E_TRANSPORT);
    await_hook_entries(&recorder, from + 16);
    sheaf_client_free(dead);

    sheaf_client_free(client);
    int at_free = recorder.count;
    CHECK_STR(hook_script(&recorder, from, script, sizeof script),
              "log:1:503:1 log:2:503:1 event:5:503:1 log:1:503:2 log:2:503:2 event:5:503:2 log:1:503:3 event:3:503:3 "
              "log:1:401:1 event:1:401:1 "
              "log:1:200:1 log:4:0:0 log:1:200:1 log:1:200:1 "
              "event:5:0:1 event:2:0:2");
    CHECK_INT(recorder.entries[at_free - 1].transport_error, SHEAF_TRANSPORT_CONNECT);
    CHECK_INT(recorder.entries[at_free - 1].wait_or_delay, -1);
    for (int i = 0; i < at_free; i++) {
        const hook_entry *e = &recorder.entries[i];
        CHECK(strstr(e->message, secret_token) == NULL && strstr(e->message, secret_key) == NULL);
        CHECK(strstr(e->url, secret_token) == NULL && strstr(e->url, secret_key) == NULL);
        if (e->is_event && e->kind == SHEAF_EVENT_AUTH_REFUSED) CHECK(strstr(e->url, "api_key=<redacted>") != NULL);
        if (!e->is_event && e->kind == SHEAF_LOG_PLAN) CHECK(strstr(e->message, "3 pages") != NULL);
    }
    sleep_ms(50);
    CHECK_INT(recorder.count, at_free);                   /* nothing after the free */
    CHECK_INT(atomic_load(&recorder.overlapped), 0);      /* never two at once */
    CHECK_INT(atomic_load(&recorder.destroyed), 2);       /* each registration's user data, once */

    /* Records above the level asked for are not handed over. */
    hook_recorder quiet = { .lock = PTHREAD_MUTEX_INITIALIZER };
    client = client_for(&g_server, NULL);
    CHECK_RESULT(sheaf_client_set_log(client, SHEAF_LOG_WARNING, on_log_record, &quiet, NULL), SHEAF_OK);
    CHECK_RESULT(send_simple(client, "/req/echo"), SHEAF_OK);
    sheaf_client_free(client);
    CHECK_INT(quiet.count, 0);
}

typedef struct test_case {
    const char *name;
    void (*run)(void);
    int in_quick;   /* part of the --quick subset (no timing-sensitive checks there) */
} test_case;

#define TEST(function, quick) { #function, function, quick }
static const test_case tests[] = {
    TEST(requests_send_every_method_path_query_and_body_kind, 1),
    TEST(a_base_url_is_a_prefix_of_every_path, 1),
    TEST(request_errors_carry_the_servers_own_fields, 1),
    TEST(requests_retry_only_what_is_safe_to_repeat, 1),
    TEST(redirects_turn_a_post_into_a_get_only_where_http_says_so, 1),
    TEST(a_segment_reaches_the_server_as_one_segment_even_dots, 1),
    TEST(requests_refuse_what_cannot_be_sent, 1),
    TEST(framing_headers_are_refused_from_every_caller_and_others_go_out, 1),
    TEST(every_credential_kind_goes_only_to_its_origin, 1),
    TEST(a_started_request_calls_back_once_and_frees_its_user_data, 1),
    TEST(downloads_stream_to_a_file_that_appears_only_when_complete, 1),
    TEST(hooks_log_every_attempt_and_tell_events_without_secrets, 1),
    TEST(flushing_the_hooks_hands_over_every_queued_event, 1),
    TEST(a_credential_provider_is_asked_once_then_once_per_401, 1),
    TEST(versions_agree_and_every_result_has_a_text, 1),
    TEST(null_handles_and_bad_arguments_are_rejected, 1),
    TEST(a_careless_caller_gets_a_result_code_never_a_crash, 1),
    TEST(description_calls_refuse_what_cannot_run, 1),
    TEST(a_description_is_set_as_the_json_the_library_prints, 1),
    TEST(the_whole_list_arrives_in_order, 1),
    TEST(snapshots_grow_in_order_one_at_a_time, 1),
    TEST(a_list_that_keeps_no_items_still_streams_every_delta, 1),
    TEST(a_pulled_list_arrives_in_order_on_the_callers_thread, 1),
    TEST(a_list_started_with_a_callback_cannot_be_pulled, 1),
    TEST(pulling_says_pending_until_a_snapshot_comes_and_a_cancel_ends_it, 1),
    TEST(a_pulled_list_notifies_an_eventfd_or_a_socket_when_a_snapshot_is_ready, 1),
    TEST(a_pulled_list_nobody_pulls_holds_back_and_frees_promptly, 1),
    TEST(waiting_on_a_pulled_list_stops_the_pulling, 1),
    TEST(the_default_window_of_8_is_filled, 0),
    TEST(an_adaptive_window_grows_while_the_server_keeps_up, 0),
    TEST(an_adaptive_window_shrinks_to_what_a_refusing_server_takes, 0),
    TEST(a_window_of_4_is_filled_and_not_exceeded, 0),
    TEST(page_numbers_without_a_total_still_fill_the_window, 0),
    TEST(a_blocking_transport_still_fills_the_window, 1),
    TEST(a_list_of_its_own_transport_sends_through_it_alone, 1),
    TEST(destroy_functions_run_once_when_nothing_needs_the_user_data, 1),
    TEST(a_refused_registration_leaves_the_user_data_with_the_caller, 1),
    TEST(every_convention_arrives_whole_detected_and_by_preset, 0),
    TEST(a_signal_of_more_that_is_not_followed_fails_the_list, 1),
    TEST(a_drf_style_list_arrives_whole, 1),
    TEST(a_bare_array_list_arrives_whole, 1),
    TEST(a_server_that_caps_the_page_size_still_gives_the_whole_list, 0),
    TEST(identity_removes_the_repeated_items, 1),
    TEST(without_identity_the_repeated_items_are_kept, 0),
    TEST(max_items_stops_the_list_at_exactly_that_many, 1),
    TEST(lists_write_their_items_to_a_function_or_a_file_descriptor, 1),
    TEST(each_budget_ends_ok_with_its_own_stop_reason_and_a_token_that_goes_on, 1),
    TEST(a_deadline_ends_the_list_in_time_and_its_token_goes_on, 1),
    TEST(a_resume_token_of_another_list_or_no_token_is_refused, 1),
    TEST(load_more_fetches_a_page_per_call_and_joins_calls_in_flight, 1),
    TEST(load_more_looks_ahead_keeps_budgets_and_refuses_misuse, 1),
    TEST(a_list_runs_once, 1),
    TEST(a_list_outlives_its_client, 1),
    TEST(a_next_link_that_loops_is_refused, 1),
    TEST(an_endless_list_stops_at_the_page_cap, 1),
    TEST(a_page_over_the_body_cap_is_refused, 1),
    TEST(a_page_that_is_not_json_is_a_bad_page_naming_its_url, 1),
    TEST(a_list_shorter_than_its_total_is_incomplete_but_keeps_its_items, 0),
    TEST(a_transient_503_is_retried, 1),
    TEST(a_persistent_500_fails_after_max_attempts, 1),
    TEST(a_404_inside_the_promised_pages_is_not_retried, 0),
    TEST(a_next_link_to_another_origin_is_refused_and_the_token_stays_home, 1),
    TEST(a_callback_that_returns_non_zero_stops_the_list, 1),
    TEST(cancel_from_another_thread_ends_the_wait, 1),
    TEST(freeing_a_running_list_returns_promptly_and_silences_it, 1),
    TEST(blocking_calls_inside_callbacks_are_refused, 1),
};

static const char *volatile g_running_test = "(none)";

static void on_alarm(int signal_number) {
    (void)signal_number;
    static const char prefix[] = "\nTIMEOUT: the harness was stuck in test ";
    const char *name = g_running_test;
    ssize_t ignored = write(STDERR_FILENO, prefix, sizeof prefix - 1);
    ignored = write(STDERR_FILENO, name, strlen(name));
    ignored = write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    _exit(3);   /* the servers exit on their own when their stdin closes */
}

static int selected(const test_case *test, int argc, char **argv, int first_fragment) {
    if (g_quick && !test->in_quick) return 0;
    if (first_fragment >= argc) return 1;
    for (int i = first_fragment; i < argc; i++)
        if (strstr(test->name, argv[i]) != NULL) return 1;
    return 0;
}

int main(int argc, char **argv) {
    int first_fragment = 1, passed = 0, failed = 0, skipped = 0;
    const size_t count = sizeof tests / sizeof tests[0];
    for (; first_fragment < argc && argv[first_fragment][0] == '-'; first_fragment++) {
        if (strcmp(argv[first_fragment], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[first_fragment], "--list") == 0) {
            for (size_t i = 0; i < count; i++) printf("%s%s\n", tests[i].name, tests[i].in_quick ? " (quick)" : "");
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--quick] [--list] [NAME-FRAGMENT...]\n", argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);

    const char *python = getenv("SHEAF_TEST_PYTHON") ? getenv("SHEAF_TEST_PYTHON") : SHEAF_PYTHON3;
    const char *script = SHEAF_SOURCE_DIR "/Tests/server/api_server.py";
    if (!test_server_start(&g_server, python, script) || !test_server_start(&g_other, python, script)) {
        fprintf(stderr, "cannot start the test server (%s %s)\n", python, script);
        test_server_stop(&g_server);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    printf("test servers at %s and %s%s\n", g_server.base_url, g_other.base_url, g_quick ? " (quick run)" : "");

    for (size_t i = 0; i < count; i++) {
        if (!selected(&tests[i], argc, argv, first_fragment)) {
            skipped++;
            continue;
        }
        long before = check_failures();
        long long started = now_ms();
        g_running_test = tests[i].name;
        alarm(g_quick ? 600 : 180);
        tests[i].run();
        alarm(0);
        long failures = check_failures() - before;
        printf("%s %s (%lld ms)\n", failures ? "FAIL" : "ok  ", tests[i].name, now_ms() - started);
        if (failures) failed++; else passed++;
    }

    test_server_stop(&g_server);
    test_server_stop(&g_other);
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
