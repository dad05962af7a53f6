/*
 * stopping.c - stopping, cancelling, re-entering: a callback that stops its list, a cancel from
 * another thread, a running list freed, blocking calls refused inside callbacks.
 */
#include "harness.h"

#include <pthread.h>

void a_callback_that_returns_non_zero_stops_the_list(void) {
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

void cancel_from_another_thread_ends_the_wait(void) {
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

void freeing_a_running_list_returns_promptly_and_silences_it(void) {
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

void blocking_calls_inside_callbacks_are_refused(void) {
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
