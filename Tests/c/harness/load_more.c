/*
 * load_more.c - load more (sheaf_list_start_load_more, sheaf_list_more): a page a call,
 * callers joined, pages looked ahead, budgets kept, misuse refused.
 */
#include "harness.h"

#include <pthread.h>

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

void load_more_fetches_a_page_per_call_and_joins_calls_in_flight(void) {
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

void load_more_looks_ahead_keeps_budgets_and_refuses_misuse(void) {
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
    sheaf_list_status small = { .version = 0 };
    CHECK_RESULT(sheaf_list_get_status(other, &small), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_get_status(NULL, &small), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(status_of(other).state, SHEAF_LIST_NEW);
done:
    sheaf_list_free(list);
    sheaf_list_free(other);
    sheaf_client_free(client);
}
