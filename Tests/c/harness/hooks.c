/*
 * hooks.c - log records and events: one record per attempt, events without secrets, never two
 * hooks at once, and a flush that hands over every queued event.
 */
#include "harness.h"

#include <pthread.h>

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
void flushing_the_hooks_hands_over_every_queued_event(void) {
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

void hooks_log_every_attempt_and_tell_events_without_secrets(void) {
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
