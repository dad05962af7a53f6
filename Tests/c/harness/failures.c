/*
 * failures.c - guards and failures: loops, the page and body caps, bad pages, short lists,
 * retried and unretried HTTP errors, and next links to another origin.
 */
#include "harness.h"

#define TOKEN "sheaf-harness-token-7f3a9c"

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

/* Retries fast, so the retry tests take milliseconds. */
static void retry_fast(sheaf_client *client) {
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);
    set_option(client, SHEAF_OPT_RETRY_MAX_MS, 20);
}

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

void a_next_link_that_loops_is_refused(void) {
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

void an_endless_list_stops_at_the_page_cap(void) {
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

void a_page_over_the_body_cap_is_refused(void) {
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

void a_page_that_is_not_json_is_a_bad_page_naming_its_url(void) {
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

void a_list_shorter_than_its_total_is_incomplete_but_keeps_its_items(void) {
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

/* A GitHub-shaped quota of 12 points an hour (the server's quota=, 403 past it): the list stops
   with SHEAF_E_RATE_LIMITED before a request is refused, with the pages it paid for and a resume
   token; never SHEAF_E_HTTP, which a caller would read as a refused token (issue 44). */
void a_spent_quota_stops_the_list_before_the_server_refuses_it(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL) return;
    set_option(client, SHEAF_OPT_MAX_WAIT_MS, 0);
    fresh_server(&g_server);
    snprintf(path, sizeof path, "/anchor?n=%d&quota=12:3600", list_size());
    json_t *items = run_failing_list(client, path, ANCHOR_ALL, 5, SHEAF_E_RATE_LIMITED, &list);
    if (list != NULL) {
        size_t count = json_array_size(items);
        CHECK(count > 0 && count <= 60);
        CHECK_ITEMS(items, 0, (int)count);
        char buffer[1024];
        CHECK(strstr(list_message(list, buffer, sizeof buffer), "the server's core limit of 12 requests is spent") != NULL);
        char *token = resume_token_of(list);
        CHECK(token != NULL);
        sheaf_free(token);
        json_t *stats = test_server_stats(&g_server);
        CHECK_INT(json_integer_value(json_object_get(stats, "refused")), 0);
        CHECK(json_integer_value(json_object_get(stats, "requests")) <= 12);
        json_decref(stats);
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void a_transient_503_is_retried(void) {
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

void a_persistent_500_fails_after_max_attempts(void) {
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

void a_404_inside_the_promised_pages_is_not_retried(void) {
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

void a_next_link_to_another_origin_is_refused_and_the_token_stays_home(void) {
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
