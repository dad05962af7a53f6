/*
 * windows.c - the window of requests in flight: fixed windows filled and not exceeded, the
 * adaptive window growing and shrinking, and custom transports (a blocking one still fills the
 * window; a list's own transport carries that list alone).
 */
#include "harness.h"

/* A caller built against a later header (a version this library does not know, with more
 * fields) gets the fields of this library's version, is told which version that is, and nothing
 * is written past them. */
static void check_a_later_version_status(sheaf_list *list) {
    union { sheaf_list_status status; unsigned char bytes[sizeof(sheaf_list_status) + 64]; } later;
    memset(&later, 0x5a, sizeof later);
    later.status.version = SHEAF_LIST_STATUS_VERSION + 1;
    CHECK_LIST_RESULT(list, sheaf_list_get_status(list, &later.status), SHEAF_OK);
    CHECK_INT(later.status.version, SHEAF_LIST_STATUS_VERSION);
    CHECK_INT(later.status.state, SHEAF_LIST_ENDED);
    int untouched = 1;
    for (size_t i = sizeof(sheaf_list_status); i < sizeof later; i++) untouched &= later.bytes[i] == 0x5a;
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
        check_a_later_version_status(list);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
    return test_server_stats(&g_server);
}

void an_adaptive_window_grows_while_the_server_keeps_up(void) {
    long long window = 0;
    json_t *stats = adaptive_run("", &window);
    /* Latency holds at 50 ms: the window grows past where it started, never past its maximum. */
    long long most = stats_max_in_flight(stats);
    if (!CHECK(most > 8 && most <= 16)) fprintf(stderr, "    at most %lld in flight\n", most);
    if (!CHECK(window > 8 && window <= 16)) fprintf(stderr, "    the window ended at %lld\n", window);
    json_decref(stats);
}

void an_adaptive_window_shrinks_to_what_a_refusing_server_takes(void) {
    long long window = 0;
    json_t *stats = adaptive_run("&limit=4", &window);
    /* The server answers 429 to a fifth request in flight: the list still completes (the
     * refused pages are retried), the window ends at 4, or at 5 when its last try at five met
     * the server with a place just freed (ThreadSanitizer's pace once did), and refusals are
     * few: the first window's four, the retries that meet the server still full before the
     * window has shrunk (more of them when a sanitizer slows the answers down), and a rare try
     * at five. */
    long long refused = json_integer_value(json_object_get(stats, "refused"));
    printf("    %lld refused, the window ended at %lld\n", refused, window);
    if (!CHECK(refused >= 1 && refused <= 12)) fprintf(stderr, "    %lld refused\n", refused);
    if (!CHECK(window >= 1 && window <= 5)) fprintf(stderr, "    the window ended at %lld\n", window);
    json_decref(stats);
}

void the_default_window_of_8_is_filled(void) {
    CHECK_INT(max_in_flight_for(0, NULL, NULL, 1), 8);
}

void a_window_of_4_is_filled_and_not_exceeded(void) {
    CHECK_INT(max_in_flight_for(4, NULL, NULL, 1), 4);
}

void page_numbers_without_a_total_still_fill_the_window(void) {
    CHECK_INT(max_in_flight_for(6, NULL, NULL, 0), 6);
}

void a_blocking_transport_still_fills_the_window(void) {
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

/* A list with a transport of its own still sends through its client's window at the origin:
 * one list on the client's libcurl and one on a blocking transport of its own, started together
 * on a fixed window of 4, put at most 4 requests on the server. */
void a_list_with_a_transport_of_its_own_shares_the_clients_window(void) {
    blocking_transport own;
    inspected_transport_init(&own, NULL);
    sheaf_client *client = client_for(&g_server, NULL);
    set_option(client, SHEAF_OPT_ADAPTIVE_WINDOW, 0);
    set_option(client, SHEAF_OPT_WINDOW, 4);
    fresh_server(&g_server);
    char path[128];
    snprintf(path, sizeof path, "/anchor?n=%d&latency_ms=100", 12 * page_size());
    sheaf_list *a = anchor_list(client, path, page_size(), ANCHOR_ALL);
    sheaf_list *b = anchor_list(client, path, page_size(), ANCHOR_ALL);
    if (a != NULL && b != NULL) {
        CHECK_LIST_RESULT(a, sheaf_list_set_transport(a, blocking_transport_get, &own, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(a, sheaf_list_start(a, NULL, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(b, sheaf_list_start(b, NULL, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(a, sheaf_list_wait(a), SHEAF_OK);
        CHECK_LIST_RESULT(b, sheaf_list_wait(b), SHEAF_OK);
        CHECK_INT(atomic_load(&own.calls), 12);
        CHECK_INT(atomic_load(&own.api_errors), 0);
        json_t *stats = test_server_stats(&g_server);
        long long most = stats_max_in_flight(stats);
        json_decref(stats);
        if (!CHECK(most >= 1 && most <= 4)) fprintf(stderr, "    the server had %lld requests in flight at once\n", most);
    }
    sheaf_list_free(b);
    sheaf_list_free(a);
    sheaf_client_free(client);
}

void a_list_of_its_own_transport_sends_through_it_alone(void) {
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
