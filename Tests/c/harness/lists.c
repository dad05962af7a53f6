/*
 * lists.c - whole lists: in order, as snapshots that grow one at a time, in every convention
 * of the test server (detected and by preset), with or without identity, up to max_items.
 */
#include "harness.h"

#include "../http_get.h"

void the_whole_list_arrives_in_order(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "");
    check_complete_list(list, list_size());
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void snapshots_grow_in_order_one_at_a_time(void) {
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

void a_list_that_keeps_no_items_still_streams_every_delta(void) {
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

/* Every convention of Tests/server/conventions.py, detected and through its preset. */
void every_convention_arrives_whole_detected_and_by_preset(void) {
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
void a_signal_of_more_that_is_not_followed_fails_the_list(void) {
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

void a_drf_style_list_arrives_whole(void) {
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

void a_bare_array_list_arrives_whole(void) {
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

/* A full page that names no next page, cursor, total or has-more (GitHub's shape without its Link
   header) may be the first of several: it ends SHEAF_OK with SHEAF_STOP_UNCONFIRMED, never a plain
   SHEAF_STOP_COMPLETE; a short page, or a described list, is a plain end (issue 47). */
void a_full_page_that_says_nothing_of_more_ends_unconfirmed(void) {
    static const struct { const char *path; int paging, items, reason; } cases[] = {
        { "/conv/github?n=95&link=none", SHEAF_PAGING_DETECT, 30, SHEAF_STOP_UNCONFIRMED },
        { "/conv/github?n=95&link=none&per_page=40", SHEAF_PAGING_DETECT, 40, SHEAF_STOP_UNCONFIRMED },
        { "/conv/github?n=27&link=none", SHEAF_PAGING_DETECT, 27, SHEAF_STOP_COMPLETE },
        { "/conv/github?n=95&link=none", SHEAF_PAGING_SINGLE, 30, SHEAF_STOP_COMPLETE },
    };
    sheaf_client *client = client_for(&g_server, NULL);
    for (size_t i = 0; client != NULL && i < sizeof cases / sizeof cases[0]; i++) {
        sheaf_list *list = NULL;
        json_t *items = NULL;
        if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, cases[i].path), SHEAF_OK)) {
            if (cases[i].paging != SHEAF_PAGING_DETECT)
                CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, cases[i].paging, NULL, 0, NULL, 0), SHEAF_OK);
            CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
            CHECK_ITEMS(items, 0, cases[i].items);
            CHECK_INT(status_of(list).stop_reason, cases[i].reason);
        }
        json_decref(items);
        sheaf_list_free(list);
    }
    sheaf_client_free(client);
}

void a_server_that_caps_the_page_size_still_gives_the_whole_list(void) {
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

void identity_removes_the_repeated_items(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "&dup=1");
    check_complete_list(list, list_size());
    sheaf_list_free(list);
    sheaf_client_free(client);
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

void without_identity_the_repeated_items_are_kept(void) {
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

void max_items_stops_the_list_at_exactly_that_many(void) {
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
