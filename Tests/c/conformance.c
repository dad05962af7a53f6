/*
 * conformance.c - the same behaviours checked against every way a C caller can run a list:
 * fetch-all (also with a header or a transport of its own, or set to a partition of itself), a
 * snapshot callback, pulling (sheaf_list_next), a write function, a file descriptor, load-more and
 * a group. What the header promises of a list holds whichever way it is consumed:
 *
 *   - every item arrives, in order, exactly once, and the list ends SHEAF_OK / SHEAF_STOP_COMPLETE;
 *   - a consumer that stops at its first delivery stops the list: no request reaches the server
 *     afterwards, whether or not the list is freed;
 *   - a cancel from another thread with the window full ends it SHEAF_E_CANCELLED, keeping a
 *     prefix, and nothing reaches the server afterwards; a free while it runs returns promptly and
 *     nothing is delivered afterwards;
 *   - a cancel racing the list's completion may end either way, but a list that ends SHEAF_OK holds
 *     every item;
 *   - a failure mid-list keeps the items before it, and its resume token completes the list;
 *   - a token of a list refused on a link to another origin is taken back: the list fails again
 *     at its start (SHEAF_E_INVALID_ARGUMENT, as for such a token), sending nothing, keeping it;
 *   - each budget ends SHEAF_OK with its stop reason, and its token completes the list;
 *   - a consumer that takes nothing holds the fetching back within the bound the header states;
 *   - a spent quota stops it SHEAF_E_RATE_LIMITED before the server refuses a request, keeping a
 *     prefix and a token;
 *   - with a response cache, a second run is answered 304 page by page with the same items;
 *   - a full page that names no next page, total or cursor ends SHEAF_STOP_UNCONFIRMED;
 *   - a list behind a POST (its cursor in the body) and a GraphQL connection whose nodes' own
 *     connections are completed arrive whole, in order, once.
 *
 * usage: sheaf_conformance [NAME-FRAGMENT...]     (the last line is "N passed, N failed")
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blocking_transport.h"
#include "check.h"
#include "sheaf.h"
#include "sheaf/experimental.h"   /* sheaf_list_partitions */
#include "test_server.h"

#ifndef SHEAF_SOURCE_DIR
#error "SHEAF_SOURCE_DIR (the repository root) must be defined by the build"
#endif
#ifndef SHEAF_PYTHON3
#define SHEAF_PYTHON3 "python3"
#endif

#define WINDOW 4   /* a fixed window: the bounds below are stated in it */

/* GROUP and GROUP_PULL run the list as the one list of a group (sheaf_group_start, _start_pull): a
   group's lists must behave as a list does on its own. OWN_HEADER is fetch_all of a list with a
   header of its own (sheaf_list_add_header), which the library runs on a core client of its own
   sending through its client's window. OWN_TRANSPORT is fetch_all of a list with a transport of
   its own (sheaf_list_set_transport: blocking_transport.c, a socket GET per request), which keeps
   no time itself: the library times its requests. PARTITION is fetch_all of a list set to the one
   partition its own plan makes (sheaf_list_partitions with n = 1: a range of every page, its URL
   and resolved description replacing the list's), as a worker runs what a planner sent it. */
typedef enum mode { FETCH_ALL, OWN_HEADER, OWN_TRANSPORT, PARTITION, CALLBACK, PULL, WRITE_FN, WRITE_FD, LOAD_MORE, GROUP,
                    GROUP_PULL, MODES } mode;
static const char *const mode_names[MODES] = {"fetch_all", "own_header", "own_transport", "partition", "callback", "pull",
                                              "write_fn", "write_fd", "load_more", "group", "group_pull"};

/* OWN_TRANSPORT's transport: one for every list, alive for the whole run (an exchange a freed
   list abandoned may still be answered through it). */
static blocking_transport g_transport;

static test_server g_server;

/* ---- helpers ------------------------------------------------------------------------------- */

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {}
}

static long long server_requests(void) {
    json_t *stats = test_server_stats(&g_server);
    long long requests = stats ? json_integer_value(json_object_get(stats, "requests")) : -1;
    json_decref(stats);
    return requests;
}

static long long server_in_flight(void) {
    json_t *stats = test_server_stats(&g_server);
    long long in_flight = stats ? json_integer_value(json_object_get(stats, "in_flight")) : -1;
    json_decref(stats);
    return in_flight;
}

static sheaf_list_status status_of(sheaf_list *list) {
    sheaf_list_status status = {.version = SHEAF_LIST_STATUS_VERSION};
    CHECK_RESULT(sheaf_list_get_status(list, &status), SHEAF_OK);
    return status;
}

static sheaf_client *new_client(int max_attempts) {
    sheaf_client *client = NULL;
    CHECK_RESULT(sheaf_client_new(&client, g_server.base_url), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_option(client, SHEAF_OPT_ADAPTIVE_WINDOW, 0), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_option(client, SHEAF_OPT_WINDOW, WINDOW), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_option(client, SHEAF_OPT_MAX_ATTEMPTS, max_attempts), SHEAF_OK);
    return client;
}

/* The anchor list at `path`, its pages addressed by number. */
static sheaf_list *new_list(sheaf_client *client, const char *path) {
    sheaf_list *list = NULL;
    if (!CHECK_RESULT(sheaf_list_new(&list, client, path), SHEAF_OK)) return NULL;
    CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, "anchor"), SHEAF_OK);
    return list;
}

/* Whether `items` holds ids first..first+count-1, in order; says what differs when not. */
static int ids_are(const json_t *items, long first, long count, const char *what) {
    if (items == NULL || (long)json_array_size(items) != count) {
        fprintf(stderr, "    %s: %zu items, expected %ld\n", what, items ? json_array_size(items) : 0, count);
        return CHECK(0);
    }
    for (long i = 0; i < count; i++) {
        long long id = json_integer_value(json_object_get(json_array_get(items, (size_t)i), "id"));
        if (id != first + i) {
            fprintf(stderr, "    %s: item %ld has id %lld, expected %ld\n", what, i, id, first + i);
            return CHECK(0);
        }
    }
    return 1;
}

/* ---- one consumer of one list, in any mode --------------------------------------------------- */

typedef struct consumer {
    mode mode;
    sheaf_client *client;
    sheaf_list *list;            /* in a group mode, the group's once started (still readable) */
    sheaf_group *group;
    json_t *items;               /* what the consumer received, in order */
    int stop_at_first;           /* it stops at its first delivery */
    int hold;                    /* it takes nothing until `release` is posted */
    sem_t release;
    atomic_int deliveries;
    atomic_int freed;            /* set once sheaf_list_free returned: a delivery after it is late */
    atomic_int late;
    pthread_mutex_t lock;        /* guards items and written, appended from library threads */
    char *written;               /* write_fn / write_fd: the JSON lines received */
    size_t written_length;
    int pipe[2];
    pthread_t reader;
    int started;
    sheaf_result result;
} consumer;

/* PARTITION: plans `list` (its page one read once, by a run of its own) as one partition, and sets
   the list to it; the list itself has not started. */
static void set_to_its_partition(sheaf_list *list) {
    char *plan = NULL;
    if (!CHECK_LIST_RESULT(list, sheaf_list_partitions(list, 1, &plan, NULL), SHEAF_OK)) return;
    json_t *partitions = json_loads(plan, 0, NULL);
    char *partition = json_array_size(partitions) == 1 ? json_dumps(json_array_get(partitions, 0), JSON_COMPACT) : NULL;
    if (CHECK(partition != NULL)) CHECK_LIST_RESULT(list, sheaf_list_set_partition(list, partition), SHEAF_OK);
    free(partition);
    json_decref(partitions);
    sheaf_free(plan);
}

static void consumer_init(consumer *c, mode m, sheaf_client *client, sheaf_list *list) {
    memset(c, 0, sizeof *c);
    c->mode = m;
    c->client = client;
    c->list = list;
    c->items = json_array();
    c->pipe[0] = c->pipe[1] = -1;
    if (m == OWN_HEADER && list != NULL)
        CHECK_LIST_RESULT(list, sheaf_list_add_header(list, "X-Conformance", "own"), SHEAF_OK);
    if (m == OWN_TRANSPORT && list != NULL)
        CHECK_LIST_RESULT(list, sheaf_list_set_transport(list, blocking_transport_get, &g_transport, NULL), SHEAF_OK);
    if (m == PARTITION && list != NULL) set_to_its_partition(list);
    sem_init(&c->release, 0, 0);
    pthread_mutex_init(&c->lock, NULL);
}

/* Frees the list, or in a group mode the group that has it. */
static void consumer_free(consumer *c) {
    if (c->group != NULL) sheaf_group_free(c->group);
    else sheaf_list_free(c->list);
    c->group = NULL;
    c->list = NULL;
}

static void consumer_destroy(consumer *c) {
    json_decref(c->items);
    free(c->written);
    sem_destroy(&c->release);
    pthread_mutex_destroy(&c->lock);
}

static void append_items(consumer *c, const char *json, size_t length) {
    json_t *delta = json_loadb(json, length, 0, NULL);
    pthread_mutex_lock(&c->lock);
    if (CHECK(json_is_array(delta))) json_array_extend(c->items, delta);
    pthread_mutex_unlock(&c->lock);
    json_decref(delta);
}

static void append_written(consumer *c, const char *bytes, size_t length) {
    pthread_mutex_lock(&c->lock);
    char *grown = realloc(c->written, c->written_length + length + 1);
    if (CHECK(grown != NULL)) {
        memcpy(grown + c->written_length, bytes, length);
        c->written = grown;
        c->written_length += length;
        c->written[c->written_length] = '\0';
    }
    pthread_mutex_unlock(&c->lock);
}

/* A delivery to the consumer: counts it, holds it when asked; returns non-zero to stop. */
static int delivered(consumer *c) {
    if (atomic_load(&c->freed)) atomic_fetch_add(&c->late, 1);
    int first = atomic_fetch_add(&c->deliveries, 1) == 0;
    if (c->hold) sem_wait(&c->release), sem_post(&c->release);
    return first && c->stop_at_first;
}

static int on_snapshot(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
    (void)list;
    consumer *c = user_data;
    append_items(c, snapshot->delta_json, snapshot->delta_length);
    return delivered(c);
}

static int write_fn(const char *bytes, size_t length, void *user_data) {
    consumer *c = user_data;
    append_written(c, bytes, length);
    return delivered(c);
}

static int on_group_delta(sheaf_group *group, const sheaf_group_delta *delta, void *user_data) {
    (void)group;
    consumer *c = user_data;
    if (delta->finished) return 0;   /* the list's end, not a delivery of items */
    append_items(c, delta->delta_json, delta->delta_length);
    return delivered(c);
}

/* Puts the list into a new group of its client; the group has it from now on. */
static sheaf_result join_group(consumer *c) {
    sheaf_result result = sheaf_group_new(&c->group, c->client);
    if (result == SHEAF_OK) result = sheaf_group_add(c->group, c->list, "the list", NULL);
    return result;
}

/* A group's result as the list's own: a group of one list that failed ends SHEAF_E_PARTIAL, and
   the list says how it failed. */
static sheaf_result group_result(consumer *c, sheaf_result result) {
    return result == SHEAF_E_PARTIAL ? sheaf_list_wait(c->list) : result;
}

static void *read_pipe(void *argument) {
    consumer *c = argument;
    if (c->hold) sem_wait(&c->release), sem_post(&c->release);
    char buffer[65536];
    ssize_t got;
    while ((got = read(c->pipe[0], buffer, sizeof buffer)) > 0) append_written(c, buffer, (size_t)got);
    return NULL;
}

/* Starts the list in its mode without consuming it (for the modes that start in the background). */
static sheaf_result start(consumer *c) {
    c->started = 1;
    switch (c->mode) {
    case CALLBACK: return sheaf_list_start(c->list, on_snapshot, c, NULL);
    case PULL: return sheaf_list_start_pull(c->list);
    case WRITE_FN: return sheaf_list_start_write(c->list, SHEAF_FORMAT_JSON_LINES, write_fn, c, NULL);
    case WRITE_FD:
        if (!CHECK(pipe2(c->pipe, O_CLOEXEC) == 0)) return SHEAF_E_INTERNAL;
        fcntl(c->pipe[1], F_SETPIPE_SZ, 4096);   /* a small pipe: a reader that waits is felt at once */
        pthread_create(&c->reader, NULL, read_pipe, c);
        return sheaf_list_start_write_fd(c->list, c->pipe[1], SHEAF_FORMAT_JSON_LINES);
    case LOAD_MORE: return sheaf_list_start_load_more(c->list, 1);
    case GROUP: {
        sheaf_result result = join_group(c);
        return result == SHEAF_OK ? sheaf_group_start(c->group, on_group_delta, c, NULL) : result;
    }
    case GROUP_PULL: {
        sheaf_result result = join_group(c);
        return result == SHEAF_OK ? sheaf_group_start_pull(c->group) : result;
    }
    default: return SHEAF_E_STATE;
    }
}

/* The JSON lines written, as items. */
static void collect_written(consumer *c) {
    if (c->mode == WRITE_FD && c->pipe[1] >= 0) {
        close(c->pipe[1]);
        c->pipe[1] = -1;
        pthread_join(c->reader, NULL);
        close(c->pipe[0]);
        c->pipe[0] = -1;
    }
    if (c->written == NULL) return;
    for (char *line = c->written, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        if (!CHECK(end != NULL)) break;   /* every item ends its line */
        json_t *item = json_loadb(line, (size_t)(end - line), 0, NULL);
        if (CHECK(json_is_object(item))) json_array_append(c->items, item);
        json_decref(item);
    }
    free(c->written);
    c->written = NULL;
    c->written_length = 0;
}

/* Runs the list in its mode to the end (or to the consumer's stop); c->result is how it ended. */
static void run(consumer *c) {
    char *json = NULL;
    size_t length = 0;
    switch (c->mode) {
    case FETCH_ALL:
    case OWN_HEADER:
    case OWN_TRANSPORT:
    case PARTITION:
        c->result = sheaf_list_fetch_all(c->list, &json, &length);
        if (json) append_items(c, json, length);
        sheaf_free(json);
        atomic_fetch_add(&c->deliveries, 1);
        return;
    case PULL:
        if (!c->started && (c->result = start(c)) != SHEAF_OK) return;
        for (;;) {
            const sheaf_snapshot *snapshot = NULL;
            sheaf_result next = sheaf_list_next(c->list, -1, &snapshot);
            if (next != SHEAF_OK || snapshot == NULL) break;
            append_items(c, snapshot->delta_json, snapshot->delta_length);
            if (delivered(c)) break;
        }
        c->result = sheaf_list_wait(c->list);   /* stops the pulling when the consumer stopped */
        return;
    case GROUP_PULL:
        if (!c->started && (c->result = start(c)) != SHEAF_OK) return;
        for (;;) {
            const sheaf_group_delta *delta = NULL;
            sheaf_result next = sheaf_group_next(c->group, -1, &delta);
            if (next != SHEAF_OK || delta == NULL) break;
            if (delta->finished) continue;
            append_items(c, delta->delta_json, delta->delta_length);
            if (delivered(c)) break;
        }
        c->result = group_result(c, sheaf_group_wait(c->group));   /* stops the pulling when the consumer stopped */
        return;
    case GROUP:
        if (!c->started && (c->result = start(c)) != SHEAF_OK) return;
        c->result = group_result(c, sheaf_group_wait(c->group));
        return;
    case LOAD_MORE:
        if (!c->started && (c->result = start(c)) != SHEAF_OK) return;
        for (;;) {
            c->result = sheaf_list_more(c->list, -1, &json, &length);
            if (c->result != SHEAF_OK || json == NULL) return;
            append_items(c, json, length);
            sheaf_free(json);
            json = NULL;
            if (delivered(c)) {
                c->result = SHEAF_E_STOPPED;   /* it stops asking: nothing more is fetched */
                return;
            }
        }
    default:
        if (c->started || (c->result = start(c)) == SHEAF_OK) c->result = sheaf_list_wait(c->list);
        collect_written(c);   /* a write_fd start that failed has its reader to join too */
        return;
    }
}

static void *run_thread(void *argument) {
    run(argument);
    return NULL;
}

static int64_t stop_reason(sheaf_list *list) { return status_of(list).stop_reason; }

/* ---- the behaviours ------------------------------------------------------------------------- */

static void every_mode_delivers_every_item_in_order_and_ends_complete(void) {
    sheaf_client *client = new_client(4);
    const char *paths[] = {"/anchor?n=997&per_page=10", "/anchor?n=500&per_page=10&nototal=1", "/anchor?n=0&per_page=10"};
    const long counts[] = {997, 500, 0};
    for (mode m = 0; m < MODES; m++) {
        for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
            consumer c;
            consumer_init(&c, m, client, new_list(client, paths[p]));
            run(&c);
            if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK)) fprintf(stderr, "    mode %s, %s\n", mode_names[m], paths[p]);
            if (!ids_are(c.items, 0, counts[p], mode_names[m])) fprintf(stderr, "    mode %s, %s\n", mode_names[m], paths[p]);
            CHECK_INT(stop_reason(c.list), SHEAF_STOP_COMPLETE);
            consumer_free(&c);
            consumer_destroy(&c);
        }
    }
    sheaf_client_free(client);
}

/* A Stripe-shaped cursor list (Tests/server/ranges.py) with the stripe preset: split by its range
 * filter when `split`, walked one page at a time otherwise. */
static sheaf_list *new_stripe_list(sheaf_client *client, const char *path, int split) {
    sheaf_list *list = NULL;
    if (!CHECK_RESULT(sheaf_list_new(&list, client, path), SHEAF_OK)) return NULL;
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, split ? "{\"preset\":\"stripe\"}"
                                                                    : "{\"preset\":\"stripe\",\"split\":null}"), SHEAF_OK);
    return list;
}

/* Whether `items` and `expected` hold the same "id" strings, in the same order. */
static int same_ids(const json_t *items, const json_t *expected, const char *what) {
    if (items == NULL || json_array_size(items) != json_array_size(expected)) {
        fprintf(stderr, "    %s: %zu items, expected %zu\n", what, items ? json_array_size(items) : 0, json_array_size(expected));
        return CHECK(0);
    }
    for (size_t i = 0; i < json_array_size(expected); i++) {
        const char *got = json_string_value(json_object_get(json_array_get(items, i), "id"));
        const char *want = json_string_value(json_object_get(json_array_get(expected, i), "id"));
        if (got == NULL || want == NULL || strcmp(got, want) != 0) {
            fprintf(stderr, "    %s: item %zu is %s, expected %s\n", what, i, got ? got : "(none)", want ? want : "(none)");
            return CHECK(0);
        }
    }
    return 1;
}

/* A list behind a POST: `description` and a JSON `body` (Tests/server/post_api.py). */
static sheaf_list *new_post_list(sheaf_client *client, const char *path, const char *description, const char *body) {
    sheaf_list *list = NULL;
    if (!CHECK_RESULT(sheaf_list_new(&list, client, path), SHEAF_OK)) return NULL;
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, description), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_set_body(list, "POST", NULL, body, strlen(body)), SHEAF_OK);
    return list;
}

static void every_mode_delivers_post_and_graphql_lists_whole_in_order_once(void) {
    static const char *graphql =
        "{\"graphql\":{\"connection\":\"/data/repository/issues\",\"page_size\":20,\"nested\":[{\"field\":\"/comments\","
        "\"page_size\":6,\"query\":\"query($id: ID!, $first: Int!, $after: String) { node(id: $id) { ... on Issue { "
        "comments(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } } }\"}]}}";
    static const char *issues =
        "{\"query\":\"query($first: Int!, $after: String) { repository { issues(first: $first, after: $after) { totalCount "
        "pageInfo { hasNextPage endCursor } nodes { id number comments(first: 5) { totalCount pageInfo { hasNextPage "
        "endCursor } nodes { id } } } } } }\",\"variables\":{}}";
    sheaf_client *client = new_client(4);
    for (mode m = 0; m < MODES; m++) {
        consumer c;
        consumer_init(&c, m, client, new_post_list(client, "/post/notion/query?n=130", "{\"preset\":\"notion\",\"paging\":"
                                                   "{\"size_param\":\"body:/page_size\",\"size\":25}}", "{\"filter\":{}}"));
        run(&c);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK)) fprintf(stderr, "    mode %s (notion)\n", mode_names[m]);
        long count = (long)json_array_size(c.items);
        if (!CHECK_INT(count, 130)) fprintf(stderr, "    mode %s (notion)\n", mode_names[m]);
        for (long i = 0; i < count; i++) {
            char expected[64];
            snprintf(expected, sizeof expected, "59833787-2cf9-4fdf-8782-%012ld", i + 1);
            const char *id = json_string_value(json_object_get(json_array_get(c.items, (size_t)i), "id"));
            if (!CHECK(id != NULL && strcmp(id, expected) == 0)) { fprintf(stderr, "    mode %s: item %ld\n", mode_names[m], i); break; }
        }
        consumer_free(&c);
        consumer_destroy(&c);

        consumer_init(&c, m, client, new_post_list(client, "/post/graphql?n=70", graphql, issues));
        run(&c);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK)) fprintf(stderr, "    mode %s (graphql)\n", mode_names[m]);
        count = (long)json_array_size(c.items);
        if (!CHECK_INT(count, 70)) fprintf(stderr, "    mode %s (graphql)\n", mode_names[m]);
        for (long i = 0; i < count; i++) {
            json_t *item = json_array_get(c.items, (size_t)i);
            json_t *nodes = json_object_get(json_object_get(item, "comments"), "nodes");
            long number = (long)json_integer_value(json_object_get(item, "number"));
            if (!CHECK_INT(number, i + 1) || !CHECK_INT((long)json_array_size(nodes), (number * 7) % 23)) {
                fprintf(stderr, "    mode %s: issue %ld\n", mode_names[m], i + 1);
                break;
            }
        }
        consumer_free(&c);
        consumer_destroy(&c);
    }
    sheaf_client_free(client);
}

static void every_mode_delivers_a_split_cursor_list_whole_in_order_once(void) {
    sheaf_client *client = new_client(4);
    const char *path = "/range/stripe?n=1500&limit=100&burst=150:2&latency_ms=1";
    consumer walked;
    consumer_init(&walked, FETCH_ALL, client, new_stripe_list(client, path, 0));
    run(&walked);
    CHECK_LIST_RESULT(walked.list, walked.result, SHEAF_OK);
    CHECK_INT((long long)json_array_size(walked.items), 1500);
    for (mode m = 0; m < MODES; m++) {
        consumer c;
        consumer_init(&c, m, client, new_stripe_list(client, path, 1));
        run(&c);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK)) fprintf(stderr, "    mode %s\n", mode_names[m]);
        if (!same_ids(c.items, walked.items, mode_names[m])) fprintf(stderr, "    mode %s\n", mode_names[m]);
        CHECK_INT(stop_reason(c.list), SHEAF_STOP_COMPLETE);
        consumer_free(&c);
        consumer_destroy(&c);
    }
    consumer_free(&walked);
    consumer_destroy(&walked);
    sheaf_client_free(client);
}

/* After the consumer's stop, nothing more reaches the server: a request already on the wire lands
 * within the first 50 ms; a list still running would send more within the next 400 (100 ms pages). */
static void check_nothing_more_is_requested(const char *what) {
    sleep_ms(50);
    long long at_the_stop = server_requests();
    sleep_ms(400);
    long long later = server_requests();
    if (!CHECK_INT(later, at_the_stop)) fprintf(stderr, "    %s: %lld requests after the stop\n", what, later - at_the_stop);
}

static void a_consumer_that_stops_at_its_first_delivery_stops_the_list(void) {
    sheaf_client *client = new_client(4);
    const mode modes[] = {CALLBACK, PULL, WRITE_FN, LOAD_MORE, GROUP, GROUP_PULL};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        for (int freed = 0; freed <= 1; freed++) {
            test_server_reset(&g_server);
            consumer c;
            consumer_init(&c, modes[i], client, new_list(client, "/anchor?n=10000&per_page=10&latency_ms=100"));
            c.stop_at_first = 1;
            run(&c);
            if (modes[i] != LOAD_MORE) CHECK_LIST_RESULT(c.list, c.result, SHEAF_E_STOPPED);
            long delivered_items = (long)json_array_size(c.items);
            CHECK(delivered_items >= 10 && delivered_items % 10 == 0);
            if (freed) {
                consumer_free(&c);
                atomic_store(&c.freed, 1);
            }
            check_nothing_more_is_requested(mode_names[modes[i]]);
            CHECK_INT(atomic_load(&c.deliveries), 1);
            if (!freed) consumer_free(&c);
            consumer_destroy(&c);
        }
    }
    sheaf_client_free(client);
}

static void a_cancel_with_the_window_full_ends_cancelled_keeping_a_prefix(void) {
    sheaf_client *client = new_client(4);
    for (mode m = 0; m < MODES; m++) {
        test_server_reset(&g_server);
        consumer c;
        consumer_init(&c, m, client, new_list(client, "/anchor?n=10000&per_page=10&latency_ms=300"));
        pthread_t thread;
        pthread_create(&thread, NULL, run_thread, &c);
        if (m == LOAD_MORE) {
            /* load-more fetches only what is asked: one page and the one ahead */
            for (long long until = now_ms() + 5000; server_in_flight() < 1 && now_ms() < until;) sleep_ms(5);
        } else {
            for (long long until = now_ms() + 5000; server_in_flight() < WINDOW && now_ms() < until;) sleep_ms(5);
            CHECK_INT(server_in_flight(), WINDOW);
        }
        CHECK_RESULT(sheaf_list_cancel(c.list), SHEAF_OK);
        long long cancelled_at = now_ms();
        pthread_join(thread, NULL);
        if (!CHECK(now_ms() - cancelled_at < 250)) fprintf(stderr, "    %s: the cancel took %lld ms\n", mode_names[m], now_ms() - cancelled_at);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_E_CANCELLED)) fprintf(stderr, "    mode %s\n", mode_names[m]);
        CHECK_INT(stop_reason(c.list), SHEAF_STOP_FAILED);
        ids_are(c.items, 0, (long)json_array_size(c.items), mode_names[m]);   /* a prefix, in order */
        check_nothing_more_is_requested(mode_names[m]);
        consumer_free(&c);
        consumer_destroy(&c);
    }
    sheaf_client_free(client);
}

static void a_free_while_running_returns_promptly_and_nothing_is_delivered_after(void) {
    sheaf_client *client = new_client(4);
    for (mode m = CALLBACK; m < MODES; m++) {
        test_server_reset(&g_server);
        consumer c;
        consumer_init(&c, m, client, new_list(client, "/anchor?n=10000&per_page=10&latency_ms=100"));
        CHECK_LIST_RESULT(c.list, start(&c), SHEAF_OK);
        if (m == LOAD_MORE) {
            char *json = NULL;
            CHECK_RESULT(sheaf_list_more(c.list, 0, &json, NULL), SHEAF_PENDING);   /* page one, asked for */
        }
        for (long long until = now_ms() + 5000; server_requests() < 2 && now_ms() < until;) sleep_ms(5);
        sleep_ms(150);   /* some pages have arrived, others are in flight */
        long long freeing_at = now_ms();
        consumer_free(&c);
        atomic_store(&c.freed, 1);
        if (!CHECK(now_ms() - freeing_at < 250)) fprintf(stderr, "    %s: the free took %lld ms\n", mode_names[m], now_ms() - freeing_at);
        check_nothing_more_is_requested(mode_names[m]);
        CHECK_INT(atomic_load(&c.late), 0);
        c.list = NULL;
        collect_written(&c);
        ids_are(c.items, 0, (long)json_array_size(c.items), mode_names[m]);
        consumer_destroy(&c);
    }
    sheaf_client_free(client);
}

static void a_cancel_racing_the_end_may_win_but_an_ok_list_is_whole(void) {
    sheaf_client *client = new_client(4);
    unsigned seed = 42;
    for (mode m = 0; m < MODES; m++) {
        int ok = 0, cancelled = 0;
        for (int round = 0; round < 150; round++) {
            long n = 1 + (long)(rand_r(&seed) % 60);
            char path[96];
            snprintf(path, sizeof path, "/anchor?n=%ld&per_page=10", n);
            consumer c;
            consumer_init(&c, m, client, new_list(client, path));
            pthread_t thread;
            pthread_create(&thread, NULL, run_thread, &c);
            struct timespec pause = {0, (long)(rand_r(&seed) % 3000) * 1000L};
            nanosleep(&pause, NULL);
            sheaf_list_cancel(c.list);
            pthread_join(thread, NULL);
            if (c.result == SHEAF_OK) {
                ok++;
                if (!ids_are(c.items, 0, n, mode_names[m])) fprintf(stderr, "    %s: OK, yet not whole\n", mode_names[m]);
            } else {
                cancelled++;
                if (!CHECK_INT(c.result, SHEAF_E_CANCELLED)) fprintf(stderr, "    mode %s\n", mode_names[m]);
                ids_are(c.items, 0, (long)json_array_size(c.items), mode_names[m]);
            }
            consumer_free(&c);
            consumer_destroy(&c);
        }
        printf("    %s: %d ended OK (whole), %d cancelled\n", mode_names[m], ok, cancelled);
    }
    sheaf_client_free(client);
}

/* Runs the list described by `path` from `token` to its end in mode `m`; checks items first..n-1. */
static void resume_to_the_end(sheaf_client *client, mode m, const char *path, const char *token, long first, long n) {
    consumer c;
    consumer_init(&c, m, client, new_list(client, path));
    if (CHECK(token != NULL) && CHECK_LIST_RESULT(c.list, sheaf_list_set_resume(c.list, token), SHEAF_OK)) {
        run(&c);
        CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK);
        if (!ids_are(c.items, first, n - first, mode_names[m])) fprintf(stderr, "    resumed in mode %s\n", mode_names[m]);
    }
    consumer_free(&c);
    consumer_destroy(&c);
}

static char *token_of(sheaf_list *list) {
    char *token = NULL;
    CHECK_RESULT(sheaf_list_resume_token(list, &token), SHEAF_OK);
    return token;
}

static void a_failure_mid_list_keeps_the_items_before_it_and_its_token_completes_the_list(void) {
    sheaf_client *client = new_client(1);   /* no retry: page 5's one failure is the list's */
    const char *path = "/anchor?n=300&per_page=10&fail=5:1:500";
    for (mode m = 0; m < MODES; m++) {
        test_server_reset(&g_server);
        consumer c;
        consumer_init(&c, m, client, new_list(client, path));
        run(&c);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_E_HTTP)) fprintf(stderr, "    mode %s\n", mode_names[m]);
        CHECK_INT(stop_reason(c.list), SHEAF_STOP_FAILED);
        ids_are(c.items, 0, 40, mode_names[m]);   /* pages 1 to 4 */
        char *token = token_of(c.list);
        resume_to_the_end(client, m, path, token, 40, 300);   /* page 5 answers now */
        sheaf_free(token);
        consumer_free(&c);
        consumer_destroy(&c);
    }
    sheaf_client_free(client);
}

/* Issue 47: a token the library made is one it takes back. A list refused on a next link to
   another origin (port 1 of loopback: refused before anything is sent there) keeps a token that
   points there; given back, in every mode (a group's too), the list fails again, at its start,
   with SHEAF_E_INVALID_ARGUMENT as sheaf_list_set_resume promises for such a token, sending
   nothing, and keeps the same token. */
static void a_token_pointing_to_another_origin_is_taken_back_and_fails_again_alone(void) {
    sheaf_client *client = new_client(1);
    const char *path = "/anchor?n=60&per_page=10&next_base=http://127.0.0.1:1";
    for (mode m = 0; m < MODES; m++) {
        test_server_reset(&g_server);
        consumer c;
        consumer_init(&c, m, client, new_list(client, path));
        run(&c);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_E_CROSS_ORIGIN)) fprintf(stderr, "    mode %s\n", mode_names[m]);
        ids_are(c.items, 0, 10, mode_names[m]);   /* page one, then the link elsewhere */
        char *token = token_of(c.list);
        consumer_free(&c);
        consumer_destroy(&c);
        consumer again;
        consumer_init(&again, m, client, new_list(client, path));   /* a partition's plan reads page one */
        sleep_ms(100);   /* a request of the first run still on the wire lands within 50 ms */
        long long sent = server_requests();
        if (CHECK(token != NULL) && CHECK_LIST_RESULT(again.list, sheaf_list_set_resume(again.list, token), SHEAF_OK)) {
            run(&again);
            if (!CHECK_LIST_RESULT(again.list, again.result, SHEAF_E_INVALID_ARGUMENT)) fprintf(stderr, "    again, mode %s\n", mode_names[m]);
            ids_are(again.items, 0, 0, mode_names[m]);
            sleep_ms(100);
            sheaf_error *error = sheaf_list_error(again.list);   /* says why, and not only "edited" */
            if (!CHECK(error != NULL && strstr(error->message, "the list was refused a link there") != NULL))
                fprintf(stderr, "    again, mode %s: %s\n", mode_names[m], error != NULL ? error->message : "no error");
            sheaf_error_free(error);
            if (!CHECK_INT(server_requests(), sent)) fprintf(stderr, "    again, mode %s: sent a request\n", mode_names[m]);
            char *kept = token_of(again.list);
            if (!CHECK(kept != NULL && strcmp(kept, token) == 0)) fprintf(stderr, "    again, mode %s: another token\n", mode_names[m]);
            sheaf_free(kept);
        }
        sheaf_free(token);
        consumer_free(&again);
        consumer_destroy(&again);
    }
    sheaf_client_free(client);
}

static void each_budget_ends_ok_with_its_stop_reason_and_its_token_completes_the_list(void) {
    sheaf_client *client = new_client(4);
    const char *path = "/anchor?n=200&per_page=10";
    struct { sheaf_budget budget; int64_t value; sheaf_stop_reason reason; long items; } cases[] = {
        {SHEAF_BUDGET_ITEMS, 27, SHEAF_STOP_ITEM_LIMIT, 27},
        {SHEAF_BUDGET_PAGES, 3, SHEAF_STOP_PAGE_BUDGET, 30},
        {SHEAF_BUDGET_REQUESTS, 2, SHEAF_STOP_REQUEST_BUDGET, 20},
    };
    for (mode m = 0; m < MODES; m++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            consumer c;
            consumer_init(&c, m, client, new_list(client, path));
            CHECK_LIST_RESULT(c.list, sheaf_list_set_budget(c.list, cases[i].budget, cases[i].value), SHEAF_OK);
            run(&c);
            if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK)) fprintf(stderr, "    mode %s, budget %d\n", mode_names[m], cases[i].budget);
            if (!CHECK_INT(stop_reason(c.list), cases[i].reason)) fprintf(stderr, "    mode %s, budget %d\n", mode_names[m], cases[i].budget);
            if (!ids_are(c.items, 0, cases[i].items, mode_names[m])) fprintf(stderr, "    budget %d\n", cases[i].budget);
            char *token = token_of(c.list);
            resume_to_the_end(client, m, path, token, cases[i].items, 200);
            sheaf_free(token);
            consumer_free(&c);
            consumer_destroy(&c);
        }
    }
    sheaf_client_free(client);
}

/* The header's bound for a consumer that takes nothing: a window of pages waiting for it, the pages
 * in flight, and those that came ahead of a slow one (twice the window): 4 windows, and page one. */
static void a_consumer_that_takes_nothing_holds_the_fetching_back_within_the_bound(void) {
    sheaf_client *client = new_client(4);
    const mode modes[] = {CALLBACK, PULL, WRITE_FN, WRITE_FD, LOAD_MORE, GROUP, GROUP_PULL};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        mode m = modes[i];
        consumer c;
        consumer_init(&c, m, client, new_list(client, "/anchor?n=5000&per_page=10&pad=200"));
        c.hold = 1;
        CHECK_LIST_RESULT(c.list, start(&c), SHEAF_OK);
        sleep_ms(500);   /* a server answering at once: without a hold, the whole list by now */
        sheaf_list_status status = status_of(c.list);
        long long bound = m == LOAD_MORE ? 0 : 4 * WINDOW + 1;   /* load-more: nothing until asked */
        if (!CHECK(status.requests_made <= bound))
            fprintf(stderr, "    %s: %lld requests, the bound %lld\n", mode_names[m], (long long)status.requests_made, bound);
        CHECK_INT(status.state, m == LOAD_MORE ? SHEAF_LIST_IDLE : SHEAF_LIST_LOADING);
        printf("    %s: %lld requests while nothing was taken (bound %lld)\n", mode_names[m], (long long)status.requests_made, bound);
        sem_post(&c.release);
        run(&c);   /* takes everything now, from the started list */
        CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK);
        ids_are(c.items, 0, 5000, mode_names[m]);
        consumer_free(&c);
        consumer_destroy(&c);
    }
    sheaf_client_free(client);
}

static long long server_stat(const char *name) {
    json_t *stats = test_server_stats(&g_server);
    long long value = stats ? json_integer_value(json_object_get(stats, name)) : -1;
    json_decref(stats);
    return value;
}

/* A GitHub-shaped quota of 12 points (the server's quota=, a window of its own per mode through
 * quota_resource=): every mode stops SHEAF_E_RATE_LIMITED before the server refuses a request,
 * with the items of the pages paid for, in order, and a token that goes on after them. */
static void every_mode_stops_at_a_spent_quota_before_the_server_refuses_it(void) {
    for (mode m = 0; m < MODES; m++) {
        /* A client per mode: a client keeps what the origin said of its quota. */
        sheaf_client *client = new_client(4);
        CHECK_RESULT(sheaf_client_set_option(client, SHEAF_OPT_MAX_WAIT_MS, 0), SHEAF_OK);
        char path[160];
        snprintf(path, sizeof path, "/anchor?n=300&per_page=10&quota=12:3600&quota_resource=conformance-%s", mode_names[m]);
        test_server_reset(&g_server);
        consumer c;
        consumer_init(&c, m, client, new_list(client, path));
        run(&c);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_E_RATE_LIMITED)) fprintf(stderr, "    mode %s\n", mode_names[m]);
        CHECK_INT(server_stat("refused"), 0);
        long count = c.items ? (long)json_array_size(c.items) : 0;
        if (!CHECK(count <= 120 && count % 10 == 0)) fprintf(stderr, "    mode %s: %ld items\n", mode_names[m], count);
        ids_are(c.items, 0, count, mode_names[m]);
        char *token = token_of(c.list);
        if (!CHECK(token != NULL)) fprintf(stderr, "    mode %s: no token\n", mode_names[m]);
        sheaf_free(token);
        consumer_free(&c);
        consumer_destroy(&c);
        sheaf_client_free(client);
    }
}

/* With a response cache, every mode's second run of a list is answered 304 page by page and
 * delivers the same items; the status counts the 304s. */
static void every_mode_revalidates_from_the_cache_and_delivers_the_same_items(void) {
    char folder[] = "/tmp/sheaf-conformance-cache-XXXXXX";
    if (!CHECK(mkdtemp(folder) != NULL)) return;
    sheaf_client *client = new_client(4);
    CHECK_RESULT(sheaf_client_set_cache(client, folder, 0), SHEAF_OK);
    for (mode m = 0; m < MODES; m++) {
        char path[160];
        snprintf(path, sizeof path, "/anchor?n=97&per_page=10&etag=1&mode=%s", mode_names[m]);
        for (int round = 0; round < 2; round++) {
            test_server_reset(&g_server);
            consumer c;
            consumer_init(&c, m, client, new_list(client, path));
            run(&c);
            if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK)) fprintf(stderr, "    mode %s, run %d\n", mode_names[m], round + 1);
            ids_are(c.items, 0, 97, mode_names[m]);
            /* PARTITION plans the list first, reading page one: the run asks for it again, a
               304 on the first run already; the second run's planning is a 304 too. */
            long long planned = m == PARTITION;
            long long expected = round == 0 ? planned : 10;
            if (!CHECK_INT(server_stat("not_modified"), expected + (round == 1 ? planned : 0))
                | !CHECK_INT(status_of(c.list).requests_revalidated, expected))
                fprintf(stderr, "    mode %s, run %d\n", mode_names[m], round + 1);
            consumer_free(&c);
            consumer_destroy(&c);
        }
    }
    sheaf_client_free(client);
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    CHECK_INT(system(command), 0);
}

/* A detected list whose one full page names no next page, total or cursor (GitHub's shape
 * without its Link header) ends SHEAF_OK with SHEAF_STOP_UNCONFIRMED in every mode, its page whole:
 * never a plain SHEAF_STOP_COMPLETE. */
static void every_mode_ends_a_full_page_that_says_nothing_of_more_unconfirmed(void) {
    sheaf_client *client = new_client(4);
    for (mode m = 0; m < MODES; m++) {
        sheaf_list *list = NULL;
        if (!CHECK_RESULT(sheaf_list_new(&list, client, "/conv/github?n=95&link=none"), SHEAF_OK)) continue;
        consumer c;
        consumer_init(&c, m, client, list);
        run(&c);
        if (!CHECK_LIST_RESULT(c.list, c.result, SHEAF_OK)) fprintf(stderr, "    mode %s\n", mode_names[m]);
        ids_are(c.items, 0, 30, mode_names[m]);
        if (!CHECK_INT(stop_reason(c.list), SHEAF_STOP_UNCONFIRMED)) fprintf(stderr, "    mode %s\n", mode_names[m]);
        consumer_free(&c);
        consumer_destroy(&c);
    }
    sheaf_client_free(client);
}

/* ---- main ----------------------------------------------------------------------------------- */

typedef struct test { const char *name; void (*run)(void); } test;
#define TEST(name) {#name, name}
static const test tests[] = {
    TEST(every_mode_delivers_every_item_in_order_and_ends_complete),
    TEST(every_mode_delivers_a_split_cursor_list_whole_in_order_once),
    TEST(every_mode_delivers_post_and_graphql_lists_whole_in_order_once),
    TEST(a_consumer_that_stops_at_its_first_delivery_stops_the_list),
    TEST(a_cancel_with_the_window_full_ends_cancelled_keeping_a_prefix),
    TEST(a_free_while_running_returns_promptly_and_nothing_is_delivered_after),
    TEST(a_cancel_racing_the_end_may_win_but_an_ok_list_is_whole),
    TEST(a_failure_mid_list_keeps_the_items_before_it_and_its_token_completes_the_list),
    TEST(each_budget_ends_ok_with_its_stop_reason_and_its_token_completes_the_list),
    TEST(a_token_pointing_to_another_origin_is_taken_back_and_fails_again_alone),
    TEST(a_consumer_that_takes_nothing_holds_the_fetching_back_within_the_bound),
    TEST(every_mode_stops_at_a_spent_quota_before_the_server_refuses_it),
    TEST(every_mode_revalidates_from_the_cache_and_delivers_the_same_items),
    TEST(every_mode_ends_a_full_page_that_says_nothing_of_more_unconfirmed),
};

static void on_alarm(int signal) {
    (void)signal;
    static const char message[] = "conformance: a test ran past its alarm: a hang\n";
    (void)!write(2, message, sizeof message - 1);
    _exit(3);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    const char *python = getenv("SHEAF_TEST_PYTHON") ? getenv("SHEAF_TEST_PYTHON") : SHEAF_PYTHON3;
    if (!test_server_start(&g_server, python, SHEAF_SOURCE_DIR "/Tests/server/api_server.py")) {
        fprintf(stderr, "cannot start the test server\n");
        printf("0 passed, 1 failed\n");
        return 1;
    }
    blocking_transport_init(&g_transport);
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int selected = argc < 2;
        for (int a = 1; a < argc; a++) selected |= strstr(tests[i].name, argv[a]) != NULL;
        if (!selected) continue;
        long before = check_failures();
        long long started = now_ms();
        test_server_reset(&g_server);
        alarm(300);
        tests[i].run();
        alarm(0);
        int failures = check_failures() != before;
        printf("%s %s (%lld ms)\n", failures ? "FAIL" : "ok  ", tests[i].name, now_ms() - started);
        if (failures) failed++; else passed++;
    }
    test_server_stop(&g_server);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
