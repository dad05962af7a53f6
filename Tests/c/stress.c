/*
 * stress.c - many lists on shared clients from many threads, through an in-process transport that
 * answers on its own threads, late, or not at all until after the library's timeout; lists
 * cancelled, freed and stopped at random moments; hundreds of pulled lists nobody pulls from.
 *
 * What must hold, checked here: every run that should finish finishes with every item; every run
 * cut short ends with the code its cut says; every destroy function runs exactly once; the stalled
 * pulled lists hold no thread the other lists need (the workers' lists all finish while they
 * stall). Built against sanitized libraries (Tests/sanitizers/run.sh) LeakSanitizer and
 * ThreadSanitizer check the rest at exit. Every loop is bounded; a watchdog aborts after a limit.
 *
 * usage: sheaf_stress [RUNS_PER_THREAD [STALLED_LISTS]]      (defaults 400 and 300)
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "sheaf.h"

enum { THREADS = 6, RESPONDERS = 3, PAGE = 10, WATCHDOG_SECONDS = 900 };

static atomic_int failures;

#define EXPECT(condition, ...)                                                     \
    do {                                                                           \
        if (!(condition)) {                                                        \
            atomic_fetch_add(&failures, 1);                                        \
            fprintf(stderr, "stress.c:%d: expected %s: ", __LINE__, #condition);  \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
        }                                                                          \
    } while (0)

static void sleep_us(long microseconds) {
    struct timespec pause = {.tv_sec = microseconds / 1000000, .tv_nsec = (microseconds % 1000000) * 1000};
    nanosleep(&pause, NULL);
}

/* ---- The in-process server -------------------------------------------------------------- */

/* A query parameter of `url` as an integer, or `fallback`. */
static long query_number(const char *url, const char *name, long fallback) {
    const char *query = strchr(url, '?');
    size_t length = strlen(name);
    for (const char *at = query; at != NULL; at = strchr(at + 1, '&')) {
        if (strncmp(at + 1, name, length) == 0 && at[1 + length] == '=') return strtol(at + 2 + length, NULL, 10);
    }
    return fallback;
}

/* Answers one exchange for the list /items?n=N&page=K[&fail=K]: PAGE items a page with "total",
   page `fail` a permanent 404. */
static void answer(sheaf_exchange *exchange, unsigned *seed) {
    const char *url = sheaf_exchange_url(exchange);
    long total = query_number(url, "n", 0), page = query_number(url, "page", 1);
    if (page == query_number(url, "fail", -1)) {
        sheaf_exchange_respond(exchange, 404, "{\"detail\":\"gone\"}", 17);
        return;
    }
    if (rand_r(seed) % 40 == 0) {   /* a transient failure, retried by the library */
        if (rand_r(seed) % 2) sheaf_exchange_respond(exchange, 503, "", 0);
        else sheaf_exchange_fail(exchange, SHEAF_TRANSPORT_CONNECT, "connection reset (injected)");
        return;
    }
    char body[PAGE * 24 + 64];
    size_t used = (size_t)snprintf(body, sizeof body, "{\"total\":%ld,\"items\":[", total);
    for (long k = (page - 1) * PAGE; k < page * PAGE && k < total; k++)
        used += (size_t)snprintf(body + used, sizeof body - used, "%s{\"id\":%ld}", k % PAGE ? "," : "", k);
    used += (size_t)snprintf(body + used, sizeof body - used, "]}");
    EXPECT(sheaf_exchange_respond(exchange, 200, body, used) == SHEAF_OK, "respond refused: %s", url);
}

/* Exchanges waiting for a responder thread. */
typedef struct server {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    sheaf_exchange *queue[4096];
    size_t head, count;
    int stopping;
    atomic_int destroyed;
    pthread_t responders[RESPONDERS];
} server;

static void *respond_loop(void *argument) {
    server *s = argument;
    unsigned seed = (unsigned)(uintptr_t)pthread_self();
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (s->count == 0 && !s->stopping) pthread_cond_wait(&s->ready, &s->lock);
        if (s->count == 0) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        sheaf_exchange *exchange = s->queue[s->head];
        s->head = (s->head + 1) % 4096;
        s->count--;
        pthread_mutex_unlock(&s->lock);
        if (rand_r(&seed) % 4 == 0) sleep_us(rand_r(&seed) % 1000);
        answer(exchange, &seed);
    }
}

/* Lists with &hang=1 are answered by a thread of their own, after the library's deadline (the
   30 ms timeout plus the library's 1 s grace for transports that keep no time): a late answer. */
static void *answer_late(void *exchange) {
    unsigned seed = 1;
    sleep_us(3000 * 1000);
    answer(exchange, &seed);
    return NULL;
}

/* The sheaf_transport_fn: a third of the exchanges is answered at once on the library's thread,
   the rest later from a responder thread. */
static void transport(sheaf_exchange *exchange, void *user_data) {
    static atomic_uint calls;
    server *s = user_data;
    /* A seed of its own for each exchange. The exchange's address alone is no such thing: a retry's
       exchange is often allocated where the one it retries was, and drew the same injected
       failure every time, so a transient failure became a permanent one. */
    unsigned seed = (unsigned)(uintptr_t)exchange ^ (atomic_fetch_add(&calls, 1u) * 2654435761u);
    pthread_t late;
    if (query_number(sheaf_exchange_url(exchange), "hang", 0) && pthread_create(&late, NULL, answer_late, exchange) == 0) {
        pthread_detach(late);
        return;
    }
    if (seed % 3 == 0) {
        answer(exchange, &seed);
        return;
    }
    pthread_mutex_lock(&s->lock);
    if (s->count == 4096) {
        pthread_mutex_unlock(&s->lock);
        answer(exchange, &seed);
        return;
    }
    s->queue[(s->head + s->count) % 4096] = exchange;
    s->count++;
    pthread_cond_signal(&s->ready);
    pthread_mutex_unlock(&s->lock);
}

static void transport_destroyed(void *user_data) {
    atomic_fetch_add(&((server *)user_data)->destroyed, 1);
}

/* ---- Lists ------------------------------------------------------------------------------ */

static atomic_int list_data_made, list_data_destroyed;

typedef struct run_data {
    int stop_after;           /* the callback returns non-zero at this snapshot (0: never) */
    int snapshots;
    size_t items;
} run_data;

static int on_snapshot(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
    (void)list;
    run_data *data = user_data;
    EXPECT(snapshot->items >= data->items, "snapshot items went down: %zu < %zu", snapshot->items, data->items);
    data->items = snapshot->items;
    return ++data->snapshots == data->stop_after;
}

static void run_data_free(void *user_data) {
    atomic_fetch_add(&list_data_destroyed, 1);
    free(user_data);
}

static sheaf_list *new_list(sheaf_client *client, long items, const char *extra) {
    char path[128];
    snprintf(path, sizeof path, "/items?n=%ld%s", items, extra);
    sheaf_list *list = NULL;
    EXPECT(sheaf_list_new(&list, client, path) == SHEAF_OK, "sheaf_list_new");
    EXPECT(sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 1, NULL, 0) == SHEAF_OK, "paging");
    EXPECT(sheaf_list_set_signal(list, SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_BODY, "/items") == SHEAF_OK, "items");
    EXPECT(sheaf_list_set_signal(list, SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_BODY, "/total") == SHEAF_OK, "total");
    EXPECT(sheaf_list_set_signal(list, SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_ITEM, "/id") == SHEAF_OK, "id");
    return list;
}

static size_t json_items(const char *json) {
    json_error_t error;
    json_t *array = json_loads(json, 0, &error);
    size_t count = json_is_array(array) ? json_array_size(array) : (size_t)-1;
    json_decref(array);
    return count;
}

static sheaf_result start_with_callback(sheaf_list *list, int stop_after) {
    run_data *data = calloc(1, sizeof *data);
    data->stop_after = stop_after;
    atomic_fetch_add(&list_data_made, 1);
    return sheaf_list_start(list, on_snapshot, data, run_data_free);
}

typedef struct worker {
    sheaf_client *shared, *hanging;
    int runs;
    unsigned seed;
    int outcomes[8];
} worker;

/* One run of one randomly chosen kind; checks its outcome. */
static void one_run(worker *w) {
    int draw = (int)(rand_r(&w->seed) % 64), kind = draw == 0 ? 7 : draw % 7;   /* hanging lists are slow: fewer */
    long n = 1 + (long)(rand_r(&w->seed) % 60);
    sheaf_list *list = NULL;
    char *json = NULL;
    sheaf_result result;
    const sheaf_snapshot *snapshot = NULL;
    w->outcomes[kind]++;
    switch (kind) {
    case 0:   /* fetch_all: every item */
        list = new_list(w->shared, n, "");
        result = sheaf_list_fetch_all(list, &json, NULL);
        EXPECT(result == SHEAF_OK && json_items(json) == (size_t)n, "fetch_all %ld: %s, %zu items", n,
               sheaf_result_str(result), json ? json_items(json) : 0);
        break;
    case 1:   /* callback, waited: every item */
        list = new_list(w->shared, n, "");
        EXPECT(start_with_callback(list, 0) == SHEAF_OK, "start");
        result = sheaf_list_wait(list);
        EXPECT(result == SHEAF_OK, "wait %ld: %s", n, sheaf_result_str(result));
        EXPECT(sheaf_list_prefix(list, &json, NULL) == SHEAF_OK && json_items(json) == (size_t)n, "prefix %ld", n);
        break;
    case 2:   /* pulled to the end */
        list = new_list(w->shared, n, "");
        EXPECT(sheaf_list_start_pull(list) == SHEAF_OK, "start_pull");
        size_t pulled = 0;
        for (int guard = 0; guard < 10000; guard++) {
            result = sheaf_list_next(list, -1, &snapshot);
            if (result != SHEAF_OK || snapshot == NULL) break;
            pulled = snapshot->items;
        }
        EXPECT(pulled == (size_t)n && sheaf_list_wait(list) == SHEAF_OK, "pulled %zu of %ld", pulled, n);
        break;
    case 3:   /* cancelled at a random moment, racing the end: either outcome, but an OK list is whole */
        list = new_list(w->shared, n, "");
        EXPECT(start_with_callback(list, 0) == SHEAF_OK, "start");
        sleep_us(rand_r(&w->seed) % 2000);
        EXPECT(sheaf_list_cancel(list) == SHEAF_OK, "cancel");
        result = sheaf_list_wait(list);
        EXPECT(result == SHEAF_OK || result == SHEAF_E_CANCELLED, "cancelled: %s", sheaf_result_str(result));
        EXPECT(sheaf_list_prefix(list, &json, NULL) == SHEAF_OK, "prefix after a cancel");
        EXPECT(result != SHEAF_OK || json_items(json) == (size_t)n, "cancelled, yet OK with %zu of %ld items",
               json ? json_items(json) : 0, n);
        break;
    case 4:   /* freed while running (with a callback, or pulled and half taken) */
        list = new_list(w->shared, n, "");
        if (rand_r(&w->seed) % 2) {
            EXPECT(start_with_callback(list, 0) == SHEAF_OK, "start");
        } else {
            EXPECT(sheaf_list_start_pull(list) == SHEAF_OK, "start_pull");
            for (int k = (int)(rand_r(&w->seed) % 3); k > 0; k--) sheaf_list_next(list, 5, &snapshot);
        }
        sleep_us(rand_r(&w->seed) % 2000);
        break;
    case 5:   /* stopped by the callback */
        list = new_list(w->shared, 40, "");
        EXPECT(start_with_callback(list, 1) == SHEAF_OK, "start");
        result = sheaf_list_wait(list);
        EXPECT(result == SHEAF_E_STOPPED || result == SHEAF_OK, "stopped: %s", sheaf_result_str(result));
        break;
    case 6:   /* a page the server refuses: the items before it, and the error */
        list = new_list(w->shared, 35, "&fail=3");
        result = sheaf_list_fetch_all(list, &json, NULL);
        EXPECT(result == SHEAF_E_HTTP && json_items(json) == 20, "fail=3: %s, %zu items", sheaf_result_str(result),
               json ? json_items(json) : 0);
        break;
    default:  /* a transport that answers only after the library's timeout */
        list = new_list(w->hanging, 5, "&hang=1");
        result = sheaf_list_fetch_all(list, &json, NULL);
        EXPECT(result == SHEAF_E_TRANSPORT, "hang: %s", sheaf_result_str(result));
        break;
    }
    sheaf_free(json);
    sheaf_list_free(list);
}

static void *work(void *argument) {
    worker *w = argument;
    for (int k = 0; k < w->runs; k++) one_run(w);
    return NULL;
}

static void *watchdog(void *argument) {
    (void)argument;
    sleep(WATCHDOG_SECONDS);
    fprintf(stderr, "stress: still running after %d s: a hang\n", WATCHDOG_SECONDS);
    abort();
}

static sheaf_client *new_client(server *s) {
    sheaf_client *client = NULL;
    EXPECT(sheaf_client_new(&client, "http://stress.invalid/") == SHEAF_OK, "client");
    EXPECT(sheaf_client_set_transport(client, transport, s, transport_destroyed) == SHEAF_OK, "transport");
    EXPECT(sheaf_client_set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1) == SHEAF_OK, "retry base");
    EXPECT(sheaf_client_set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 8) == SHEAF_OK, "attempts");
    return client;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 400, stalled = argc > 2 ? atoi(argv[2]) : 300;
    pthread_t dog;
    pthread_create(&dog, NULL, watchdog, NULL);
    pthread_detach(dog);

    server s = {.lock = PTHREAD_MUTEX_INITIALIZER, .ready = PTHREAD_COND_INITIALIZER};
    for (int k = 0; k < RESPONDERS; k++) pthread_create(&s.responders[k], NULL, respond_loop, &s);

    sheaf_client *shared = new_client(&s), *hanging[THREADS];
    /* A client of its own for each thread's hanging lists: a server that answers nothing in time
       takes one request at a time from a client (every timeout is a refusal), so on one shared
       client the threads' hanging lists would wait for each other's timeouts. */
    for (int k = 0; k < THREADS; k++) {
        hanging[k] = new_client(&s);
        EXPECT(sheaf_client_set_option(hanging[k], SHEAF_OPT_TIMEOUT_MS, 30) == SHEAF_OK, "timeout");
        EXPECT(sheaf_client_set_option(hanging[k], SHEAF_OPT_MAX_ATTEMPTS, 1) == SHEAF_OK, "attempts");
    }

    /* Pulled lists nobody pulls from, each holding back once a window's worth of pages waits. */
    sheaf_list **stalled_lists = calloc((size_t)stalled, sizeof *stalled_lists);
    for (int k = 0; k < stalled; k++) {
        stalled_lists[k] = new_list(shared, 5000, "");
        EXPECT(sheaf_list_start_pull(stalled_lists[k]) == SHEAF_OK, "stalled start_pull");
    }

    struct timespec began, ended;
    clock_gettime(CLOCK_MONOTONIC, &began);
    worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int k = 0; k < THREADS; k++) {
        workers[k] = (worker){.shared = shared, .hanging = hanging[k], .runs = runs, .seed = 7919u * (unsigned)(k + 1)};
        pthread_create(&threads[k], NULL, work, &workers[k]);
    }
    for (int k = 0; k < THREADS; k++) pthread_join(threads[k], NULL);
    clock_gettime(CLOCK_MONOTONIC, &ended);

    /* The stalled lists are still there, none finished: they held back, and took nothing from the workers.
       Held back means, for a list nobody takes from: fewer than a window (8) of pages in its
       snapshots when it last sent, and at most twice the most the adaptive window reaches (64)
       arrived or in flight past them; with retries, well under 300 of its 500 pages' requests. */
    int held_back = 0;
    int64_t most_requests = 0;
    for (int k = 0; k < stalled; k++) {
        sheaf_list_status status = {.version = SHEAF_LIST_STATUS_VERSION};
        EXPECT(sheaf_list_get_status(stalled_lists[k], &status) == SHEAF_OK, "status");
        held_back += status.state == SHEAF_LIST_LOADING && status.requests_made < 300;
        if (status.requests_made > most_requests) most_requests = status.requests_made;
    }
    EXPECT(held_back == stalled, "%d of %d stalled lists held back", held_back, stalled);
    for (int k = 0; k < stalled; k++) sheaf_list_free(stalled_lists[k]);
    free(stalled_lists);

    sheaf_client_free(shared);
    for (int k = 0; k < THREADS; k++) sheaf_client_free(hanging[k]);
    /* Destroy functions run once nothing needs them: wait (bounded) for the last late answers. */
    for (int k = 0; k < 1000 && (atomic_load(&s.destroyed) < 1 + THREADS || atomic_load(&list_data_destroyed) < atomic_load(&list_data_made)); k++)
        sleep_us(10 * 1000);
    pthread_mutex_lock(&s.lock);
    s.stopping = 1;
    pthread_cond_broadcast(&s.ready);
    pthread_mutex_unlock(&s.lock);
    for (int k = 0; k < RESPONDERS; k++) pthread_join(s.responders[k], NULL);
    EXPECT(atomic_load(&s.destroyed) == 1 + THREADS, "transport destroyed %d times (%d clients)", atomic_load(&s.destroyed), 1 + THREADS);
    EXPECT(atomic_load(&list_data_destroyed) == atomic_load(&list_data_made), "list user data: %d made, %d destroyed",
           atomic_load(&list_data_made), atomic_load(&list_data_destroyed));

    int total = 0;
    printf("stress: %d threads x %d runs + %d stalled pulled lists in %.1f s; runs by kind:", THREADS, runs, stalled,
           (double)(ended.tv_sec - began.tv_sec) + (double)(ended.tv_nsec - began.tv_nsec) / 1e9);
    for (int kind = 0; kind < 8; kind++) {
        int count = 0;
        for (int k = 0; k < THREADS; k++) count += workers[k].outcomes[kind];
        printf(" %d", count);
        total += count;
    }
    printf("\nstress: %d runs, %d failed checks; a stalled list sent at most %lld requests\n", total,
           atomic_load(&failures), (long long)most_requests);
    return atomic_load(&failures) == 0 ? 0 : 1;
}
