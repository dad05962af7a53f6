/*
 * resume.c - budgets and resume tokens: each budget ends the list ok with its own stop reason
 * and a token that goes on; a deadline; tokens that are refused.
 */
#include "harness.h"

void each_budget_ends_ok_with_its_own_stop_reason_and_a_token_that_goes_on(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    const long size = page_size(), cut = 2 * size + 7;
    struct { sheaf_budget budget; int64_t value; sheaf_stop_reason reason; long items; } cases[] = {
        { SHEAF_BUDGET_ITEMS, cut, SHEAF_STOP_ITEM_LIMIT, cut },           /* page 3 cut after 7 items */
        { SHEAF_BUDGET_PAGES, 3, SHEAF_STOP_PAGE_BUDGET, 3 * size },
        { SHEAF_BUDGET_REQUESTS, 2, SHEAF_STOP_REQUEST_BUDGET, 2 * size },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sheaf_list *list = standard_list(client, "");
        json_t *items = NULL;
        if (list == NULL) continue;
        CHECK_LIST_RESULT(list, sheaf_list_set_budget(list, cases[i].budget, cases[i].value), SHEAF_OK);
        CHECK_INT(status_of(list).stop_reason, SHEAF_STOP_NONE);
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_INT(status_of(list).state, SHEAF_LIST_ENDED);
        CHECK_INT(status_of(list).stop_reason, cases[i].reason);
        CHECK_ITEMS(items, 0, cases[i].items);
        CHECK(sheaf_list_error(list) == NULL);   /* a budget reached is no failure */
        char *token = resume_token_of(list);
        resume_to_the_end(standard_list(client, ""), token, cases[i].items);
        sheaf_free(token);
        json_decref(items);
        sheaf_list_free(list);
    }
    sheaf_client_free(client);
}

void a_deadline_ends_the_list_in_time_and_its_token_goes_on(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    json_t *items = NULL;
    char path[128];
    snprintf(path, sizeof path, "/anchor?n=%d&latency_ms=150", list_size());
    /* Next links only, one page at a time: the whole list would take list_size()/page_size() x 150 ms. */
    list = anchor_list(client, path, page_size(), NEXT);
    if (list == NULL) goto done;
    const int64_t deadline = 400;
    CHECK_LIST_RESULT(list, sheaf_list_set_budget(list, SHEAF_BUDGET_DEADLINE_MS, deadline), SHEAF_OK);
    long long started = now_ms();
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_E_DEADLINE);
    long long took = now_ms() - started;
    if (!CHECK(took < 2 * deadline)) fprintf(stderr, "    the list ended after %lld ms, its deadline %lld ms\n", took, (long long)deadline);
    long arrived = items ? (long)json_array_size(items) : 0;
    CHECK(arrived > 0 && arrived < list_size() && arrived % page_size() == 0);
    CHECK_ITEMS(items, 0, arrived);
    char *token = resume_token_of(list);
    resume_to_the_end(anchor_list(client, path, page_size(), NEXT), token, arrived);
    sheaf_free(token);
done:
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void a_resume_token_of_another_list_or_no_token_is_refused(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, ""), *other = standard_list(client, "&other=1");
    json_t *items = NULL;
    if (list == NULL || other == NULL) goto done;
    CHECK_LIST_RESULT(list, sheaf_list_set_max_items(list, 10), SHEAF_OK);
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    char *token = resume_token_of(list);
    CHECK_LIST_RESULT(other, sheaf_list_set_resume(other, "sheaf-resume-1.!!"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(other, sheaf_list_set_resume(other, "not a token"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(other, sheaf_list_set_resume(other, token), SHEAF_OK);   /* the form is right... */
    CHECK_LIST_RESULT(other, sheaf_list_start_pull(other), SHEAF_E_INVALID_ARGUMENT);   /* ...the list is not */
    CHECK_RESULT(sheaf_list_set_budget(list, (sheaf_budget)99, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_set_budget(NULL, SHEAF_BUDGET_PAGES, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_resume_token(list, NULL), SHEAF_E_INVALID_ARGUMENT);
    sheaf_free(token);
done:
    json_decref(items);
    sheaf_list_free(list);
    sheaf_list_free(other);
    sheaf_client_free(client);
}

/* An org's issues are newest first (Tests/server/org_api.py): repository 114 of "sync" holds
 * issues 120 down to 1, ids 11500120 down to 11500001, a total in each page. */
void a_bound_ends_a_newest_first_list_ok_before_the_first_item_at_or_below_it(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    json_t *items = NULL, *described = NULL;
    char *json = NULL;
    size_t length = 0;
    if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/repos/sync/repo-114/issues"), SHEAF_OK)) goto done;
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{\"until\": {\"pointer\": \"/id\", \"value\": 11500100}}"),
                      SHEAF_OK);
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    CHECK_INT(status_of(list).stop_reason, SHEAF_STOP_BOUND);
    CHECK_INT(items ? json_array_size(items) : 0, 20);   /* issues 120 to 101; 100 is the bound */
    CHECK_INT(json_integer_value(json_object_get(json_array_get(items, 0), "id")), 11500120);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(items, 19), "id")), 11500101);
    CHECK(sheaf_list_error(list) == NULL);   /* a bound reached is no failure */
    /* The state to store for the next run: the newest id delivered. */
    if (CHECK_LIST_RESULT(list, sheaf_list_description(list, &json, &length), SHEAF_OK)) {
        described = json_loadb(json, length, 0, NULL);
        json_t *state = json_object_get(described, "sync_state");
        CHECK_STR(json_string_value(json_object_get(state, "field")), "/id");
        CHECK_INT(json_integer_value(json_object_get(state, "value")), 11500120);
    }
    /* A bound that is not a number or a string is refused, naming the field. */
    sheaf_list *refused = NULL;
    if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&refused, client, "/repos/sync/repo-114/issues"), SHEAF_OK)) {
        CHECK_LIST_RESULT(refused, sheaf_list_set_description(refused, "{\"until\": {\"pointer\": \"/id\", \"value\": true}}"),
                          SHEAF_E_INVALID_ARGUMENT);
        sheaf_error *error = sheaf_list_error(refused);
        CHECK(error != NULL && strstr(error->message, "/until/value") != NULL);
        sheaf_error_free(error);
        sheaf_list_free(refused);
    }
done:
    sheaf_free(json);
    json_decref(described);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}
