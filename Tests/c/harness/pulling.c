/*
 * pulling.c - pulled lists (sheaf_list_start_pull, sheaf_list_next): in order on the caller's
 * thread, woken through a notify fd, pending until a snapshot comes, held back while nobody
 * pulls.
 */
#include "harness.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

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

void a_pulled_list_arrives_in_order_on_the_callers_thread(void) {
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

void a_pulled_list_notifies_an_eventfd_or_a_socket_when_a_snapshot_is_ready(void) {
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

void a_list_started_with_a_callback_cannot_be_pulled(void) {
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

void pulling_says_pending_until_a_snapshot_comes_and_a_cancel_ends_it(void) {
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

void a_pulled_list_nobody_pulls_holds_back_and_frees_promptly(void) {
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

void waiting_on_a_pulled_list_stops_the_pulling(void) {
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

/* Pages of /digits from memory, walked by next links: 23 digits in an integer, 18 (always within
 * 64 bits), 19 in a string, 19 in a fraction (a run is a run), 8 at most. */
static const char *const g_digit_pages[] = {
    "{\"items\":[{\"id\":0,\"n\":12345678901234567890123}],\"next_page\":\"/digits?page=2\"}",
    "{\"items\":[{\"id\":1,\"n\":-123456789012345678,\"m\":123456789012345678}],\"next_page\":\"/digits?page=3\"}",
    "{\"items\":[{\"id\":2,\"s\":\"x1234567890123456789\"}],\"next_page\":\"/digits?page=4\"}",
    "{\"items\":[{\"id\":3,\"n\":1234567.1234567890123456789}],\"next_page\":\"/digits?page=5\"}",
    "{\"items\":[{\"id\":4,\"n\":1.5e300,\"s\":\"item-12345678\"}],\"next_page\":null}",
};
static const int g_digit_runs[] = {1, 0, 1, 1, 0};

static void digit_pages_transport(sheaf_exchange *exchange, void *user_data) {
    (void)user_data;
    const char *at = strstr(sheaf_exchange_url(exchange), "page=");
    int page = at != NULL ? atoi(at + 5) - 1 : 0;
    if (page < 0 || page > 4) page = 0;
    sheaf_exchange_respond(exchange, 200, g_digit_pages[page], strlen(g_digit_pages[page]));
}

static int g_callback_digit_runs[5];

static int record_digit_run(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
    (void)user_data;
    int long_digits = -1;
    CHECK_LIST_RESULT(list, sheaf_list_delta_has_long_digits(list, &long_digits), SHEAF_OK);
    if (CHECK(snapshot->items >= 1 && snapshot->items <= 5)) g_callback_digit_runs[snapshot->items - 1] = long_digits;
    return 0;
}

static sheaf_list *digit_pages_list(sheaf_client *client) {
    sheaf_list *list = anchor_list(client, "/digits", 1, NEXT);
    if (list != NULL)
        CHECK_LIST_RESULT(list, sheaf_list_set_transport(list, digit_pages_transport, NULL, NULL), SHEAF_OK);
    return list;
}

/* Whether items [first, end) of the digit pages hold 19 digits in a row. */
static int digit_run_in(size_t first, size_t end) {
    int any = 0;
    for (size_t item = first; item < end && item < 5; item++) any |= g_digit_runs[item];
    return any;
}

static int g_group_callback_checked;

static int check_group_digit_run(sheaf_group *group, const sheaf_group_delta *delta, void *user_data) {
    (void)user_data;
    int long_digits = -1;
    CHECK_RESULT(sheaf_group_delta_has_long_digits(group, &long_digits), SHEAF_OK);
    if (delta->delta_items > 0 && CHECK_INT(long_digits, digit_run_in(delta->items - delta->delta_items, delta->items)))
        g_group_callback_checked += (int)delta->delta_items;
    return 0;
}

void a_group_delta_says_whether_it_holds_19_digits_in_a_row(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    for (int pulled = 1; pulled >= 0; pulled--) {
        sheaf_group *group = NULL;
        sheaf_list *list = digit_pages_list(client);
        if (list == NULL || !CHECK_RESULT(sheaf_group_new(&group, client), SHEAF_OK) ||
            !CHECK_RESULT(sheaf_group_add(group, list, "digits", NULL), SHEAF_OK)) {
            sheaf_list_free(list);
            sheaf_group_free(group);
            break;
        }
        int long_digits = -1;
        CHECK_RESULT(sheaf_group_delta_has_long_digits(NULL, &long_digits), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_group_delta_has_long_digits(group, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_group_delta_has_long_digits(group, &long_digits), SHEAF_OK);
        CHECK_INT(long_digits, 0);   /* before any delta */
        if (pulled) {
            size_t items = 0;
            CHECK_RESULT(sheaf_group_start_pull(group), SHEAF_OK);
            for (int pulls = 0; pulls < 20; pulls++) {
                const sheaf_group_delta *delta = NULL;
                if (!CHECK_RESULT(sheaf_group_next(group, 10000, &delta), SHEAF_OK) || delta == NULL) break;
                CHECK_RESULT(sheaf_group_delta_has_long_digits(group, &long_digits), SHEAF_OK);
                CHECK_INT(long_digits, digit_run_in(delta->items - delta->delta_items, delta->items));
                items += delta->delta_items;
            }
            CHECK_INT(items, 5);
        } else {
            g_group_callback_checked = 0;
            CHECK_RESULT(sheaf_group_start(group, check_group_digit_run, NULL, NULL), SHEAF_OK);
        }
        CHECK_RESULT(sheaf_group_wait(group), SHEAF_OK);
        if (!pulled) CHECK_INT(g_group_callback_checked, 5);
        sheaf_group_free(group);
    }
    sheaf_client_free(client);
}

void a_delta_says_whether_it_holds_19_digits_in_a_row(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = digit_pages_list(client);
    if (list != NULL) {
        int long_digits = -1;
        CHECK_RESULT(sheaf_list_delta_has_long_digits(NULL, &long_digits), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_delta_has_long_digits(list, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_delta_has_long_digits(list, &long_digits), SHEAF_OK);
        CHECK_INT(long_digits, 0);   /* before any snapshot */
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_OK);
        for (int pulls = 0; pulls < 10; pulls++) {
            const sheaf_snapshot *snapshot = NULL;
            if (!CHECK_LIST_RESULT(list, sheaf_list_next(list, 10000, &snapshot), SHEAF_OK) || snapshot == NULL) break;
            CHECK_LIST_RESULT(list, sheaf_list_delta_has_long_digits(list, &long_digits), SHEAF_OK);
            /* One page a snapshot here (each answers at once, in order): the delta is that page's item. */
            if (CHECK_INT(snapshot->delta_items, 1) && CHECK(snapshot->items >= 1 && snapshot->items <= 5))
                CHECK_INT(long_digits, g_digit_runs[snapshot->items - 1]);
        }
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
    }
    sheaf_list_free(list);
    /* The same inside a snapshot callback. */
    list = digit_pages_list(client);
    if (list != NULL) {
        memset(g_callback_digit_runs, 0xff, sizeof g_callback_digit_runs);
        CHECK_LIST_RESULT(list, sheaf_list_start(list, record_digit_run, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        for (int page = 0; page < 5; page++) CHECK_INT(g_callback_digit_runs[page], g_digit_runs[page]);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}
