/*
 * watch.c - polling a list for what is new (issue 46): sheaf_list_poll against a Stripe-shaped
 * list that grows between polls (Tests/server/feeds.py), each item once, an idle poll one request.
 */
#include <sheaf/experimental.h>

#include "harness.h"

static void insert(int count, long long second) {
    char path[96];
    snprintf(path, sizeof path, "/_feed/insert?feed=c&n=%d&at=%lld", count, second);
    json_decref(test_server_get_json(&g_server, path));
}

/* One poll from `offset` (NULL: the first); the items' ids joined by spaces into `ids`. */
static sheaf_result poll(sheaf_list *list, const char *offset, char **out_offset, char *ids, size_t size) {
    char *items = NULL;
    size_t length = 0;
    sheaf_result result = sheaf_list_poll(list, offset, NULL, SHEAF_FORMAT_JSON, &items, &length, out_offset);
    ids[0] = '\0';
    if (result != SHEAF_OK) {
        CHECK(items == NULL && *out_offset == NULL);
        return result;
    }
    json_t *parsed = parse_array(items, length);
    for (size_t i = 0; parsed != NULL && i < json_array_size(parsed); i++) {
        const char *id = json_string_value(json_object_get(json_array_get(parsed, i), "id"));
        size_t used = strlen(ids);
        snprintf(ids + used, size - used, "%s%s", used ? " " : "", id ? id : "?");
    }
    json_decref(parsed);
    sheaf_free(items);
    return result;
}

void polls_deliver_each_item_of_a_growing_list_once(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    fresh_server(&g_server);
    insert(3, 1700000000);
    sheaf_list *list = NULL;
    CHECK_INT(sheaf_list_new(&list, client, "/feed/stripe?feed=c&limit=2"), SHEAF_OK);
    CHECK_INT(sheaf_list_set_description(list, "{\"preset\": \"stripe\", \"until\": {\"pointer\": \"/created\", \"value\": 0},"
                                               " \"signals\": {\"identity\": {\"source\": \"item\", \"where\": \"/id\"}}}"), SHEAF_OK);
    char ids[256], *first = NULL, *second = NULL, *third = NULL;
    CHECK_INT(poll(list, NULL, &first, ids, sizeof ids), SHEAF_OK);
    CHECK_STR(ids, "ch_00000003 ch_00000002 ch_00000001");
    /* Two more in the same second as the newest delivered, one in the next. */
    insert(2, 1700000000);
    insert(1, 1700000001);
    CHECK_INT(poll(list, first, &second, ids, sizeof ids), SHEAF_OK);
    CHECK_STR(ids, "ch_00000006 ch_00000005 ch_00000004");
    json_t *stats = test_server_stats(&g_server);
    long long before = json_integer_value(json_object_get(stats, "requests"));
    json_decref(stats);
    CHECK_INT(poll(list, second, &third, ids, sizeof ids), SHEAF_OK);
    CHECK_STR(ids, "");
    stats = test_server_stats(&g_server);
    CHECK_INT(json_integer_value(json_object_get(stats, "requests")) - before, 1);
    json_decref(stats);
    json_t *offset = json_loads(third, 0, NULL);
    CHECK(offset != NULL && json_integer_value(json_object_get(offset, "value")) == 1700000001);
    CHECK(json_array_size(json_object_get(offset, "seen")) == 1);
    json_decref(offset);

    /* The second poll's range read again, after one more item: the same three, as JSON lines. */
    insert(1, 1700000001);
    char *items = NULL, *again = NULL;
    size_t length = 0;
    CHECK_INT(sheaf_list_poll(list, first, second, SHEAF_FORMAT_JSON_LINES, &items, &length, &again), SHEAF_OK);
    const char *six = items ? strstr(items, "ch_00000006") : NULL, *five = six ? strstr(six, "\n{\"id\":\"ch_00000005\"") : NULL;
    CHECK(six != NULL && five != NULL && strstr(five, "\n{\"id\":\"ch_00000004\"") != NULL && strstr(items, "ch_00000007") == NULL);
    CHECK(length > 0 && items[length - 1] == '\n');
    CHECK_STR(again, second);
    sheaf_free(items);
    sheaf_free(again);

    /* Refused, nothing handed out: NULL outs, a bad offset, one of another list, an unknown format. */
    CHECK_INT(sheaf_list_poll(list, NULL, NULL, SHEAF_FORMAT_JSON, NULL, NULL, &again), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_list_poll(list, "{\"field\": 7}", NULL, SHEAF_FORMAT_JSON, &items, &length, &again), SHEAF_E_INVALID_ARGUMENT);
    CHECK(items == NULL && again == NULL);
    CHECK_INT(sheaf_list_poll(list, "{\"list\": \"http://elsewhere/x\", \"field\": \"/created\", \"value\": 1}", NULL,
                              SHEAF_FORMAT_JSON, &items, &length, &again), SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_list_error(list);
    CHECK(error != NULL && strstr(error->message, "of the list http://elsewhere/x") != NULL);
    sheaf_error_free(error);
    CHECK_INT(sheaf_list_poll(list, NULL, NULL, (sheaf_format)9, &items, &length, &again), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_list_poll(NULL, NULL, NULL, SHEAF_FORMAT_JSON, &items, &length, &again), SHEAF_E_INVALID_ARGUMENT);
    /* A list that does not sync cannot be polled; a started list cannot either. */
    sheaf_list *plain = NULL;
    CHECK_INT(sheaf_list_new(&plain, client, "/feed/stripe?feed=c"), SHEAF_OK);
    CHECK_INT(sheaf_list_use_preset(plain, "stripe"), SHEAF_OK);
    CHECK_INT(sheaf_list_poll(plain, NULL, NULL, SHEAF_FORMAT_JSON, &items, &length, &again), SHEAF_E_INVALID_ARGUMENT);
    json_t *all = NULL;
    CHECK_INT(fetch_all(plain, &all), SHEAF_OK);
    json_decref(all);
    CHECK_INT(sheaf_list_poll(plain, NULL, NULL, SHEAF_FORMAT_JSON, &items, &length, &again), SHEAF_E_STATE);
    sheaf_list_free(plain);
    sheaf_free(first);
    sheaf_free(second);
    sheaf_free(third);
    sheaf_list_free(list);
    sheaf_client_free(client);
}
