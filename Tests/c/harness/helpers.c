/*
 * helpers.c - what the sections share: small helpers (clients and lists of the test server's
 * shapes, JSON checks, waiting), the snapshot recorder, the blocking transport the harness
 * inspects, and the helpers of resume tokens and single requests that two sections use.
 */
#include "harness.h"

#include <time.h>

/* ---- small helpers ---------------------------------------------------------------------------- */

/* List sizes: the full run uses the sizes of the brief, --quick smaller ones. */
int list_size(void) { return g_quick ? 200 : 1000; }
int page_size(void) { return g_quick ? 20 : 50; }

long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void sleep_ms(long ms) {
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0) {}
}

json_t *parse_array(const char *text, size_t length) {
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
int check_items(const json_t *items, long first, long count, const char *text, const char *file, int line) {
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

sheaf_client *client_for(const test_server *server, const char *token) {
    sheaf_client *client = NULL;
    CHECK_RESULT(sheaf_client_new(&client, server->base_url), SHEAF_OK);
    CHECK(client != NULL);
    if (client != NULL && token != NULL)
        CHECK_CLIENT_RESULT(client, sheaf_client_set_auth(client, SHEAF_AUTH_BEARER, token), SHEAF_OK);
    return client;
}

/* Reads `signal` from the body at `pointer`; NULL: the list has no such signal. */
void read_body(sheaf_list *list, sheaf_signal signal, const char *pointer) {
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, signal, pointer ? SHEAF_SOURCE_BODY : SHEAF_SOURCE_NONE, pointer),
                      SHEAF_OK);
}

void set_option(sheaf_client *client, sheaf_option option, int64_t value) {
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, option, value), SHEAF_OK);
}

/* A list of the /anchor shape (items "/items"), with the chosen parts of its description. */
sheaf_list *anchor_list(sheaf_client *client, const char *path, int per_page, unsigned parts) {
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
sheaf_list *standard_list(sheaf_client *client, const char *query) {
    char path[256];
    snprintf(path, sizeof path, "/anchor?n=%d%s", list_size(), query);
    return anchor_list(client, path, page_size(), ANCHOR_ALL);
}

/* sheaf_list_fetch_all, with the JSON parsed (NULL if it is not an array). */
sheaf_result fetch_all(sheaf_list *list, json_t **out_items) {
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
void check_complete_list(sheaf_list *list, int count) {
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, count);
    }
    json_decref(items);
}

/* Waits (bounded) until requests of earlier tests have left the server, then clears its state. */
void fresh_server(const test_server *server) {
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

/* The list's status, checked to be had. */
sheaf_list_status status_of(sheaf_list *list) {
    sheaf_list_status status = { .version = SHEAF_LIST_STATUS_VERSION };
    CHECK_LIST_RESULT(list, sheaf_list_get_status(list, &status), SHEAF_OK);
    return status;
}

/* ---- snapshot recorder ------------------------------------------------------------------------ */

void recorder_init(recorder *r) {
    memset(r, 0, sizeof *r);
    r->expected_items = -1;
    r->deltas = json_array();
}

void recorder_free(recorder *r) {
    json_decref(r->deltas);
    r->deltas = NULL;
}

void record_delta(recorder *r, sheaf_list *list, const sheaf_snapshot *snapshot, int call) {
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
        json = NULL;
        CHECK_RESULT(sheaf_list_partitions(r->other_list, 2, &json, NULL), SHEAF_E_REENTRANT);   /* reads page one */
        CHECK(json == NULL);
    }
    if (r->pulled_list != NULL) {
        const sheaf_snapshot *snapshot = NULL;
        CHECK_RESULT(sheaf_list_next(r->pulled_list, 100, &snapshot), SHEAF_E_REENTRANT);
        CHECK_RESULT(sheaf_list_next(r->pulled_list, 0, &snapshot), SHEAF_PENDING);   /* not waiting: allowed */
    }
}

int record_snapshot(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
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

/* ---- a blocking custom transport (blocking_transport.c), inspected ---------------------------- */

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
void inspected_transport_init(blocking_transport *transport, sheaf_list *reentry_list) {
    blocking_transport_init(transport);
    transport->inspect = inspect_request;
    transport->inspect_data = reentry_list;
}

/* ---- resume tokens (resume.c, load_more.c) ---------------------------------------------------- */

/* The list's resume token (the caller frees it), checked to be one printable line. */
char *resume_token_of(sheaf_list *list) {
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
void resume_to_the_end(sheaf_list *list, const char *token, long first) {
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

/* ---- single requests (requests.c, credentials.c, hooks.c) ------------------------------------- */

/* Sends `request`, expecting `expected`; returns the echoed JSON body (NULL when none). */
json_t *send_and_decode(sheaf_request *request, int expected) {
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
const char *echoed_header(const json_t *echo, const char *name) {
    return json_string_value(json_array_get(json_object_get(json_object_get(echo, "headers"), name), 0));
}

int send_simple(sheaf_client *client, const char *path) {
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", path), SHEAF_OK);
    int result = sheaf_request_send(request);
    sheaf_request_free(request);
    return result;
}
