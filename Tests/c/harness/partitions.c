/*
 * partitions.c - a list split into partitions (sheaf_list_partitions), each run on a client of
 * its own (sheaf_list_set_partition): together they give the list's items exactly once, in
 * order; lists that cannot be split are one partition saying why; no secret is in a partition;
 * a malformed partition is refused naming its field.
 */
#include "harness.h"

#define PARTITION_TOKEN "tok-PARTITION-s3cret"
#define PARTITION_KEY "key-PARTITION-value-42"

/* The partitions of `list` (up to n), parsed; NULL on failure. The JSON text goes to *out_text. */
static json_t *partitions_of(sheaf_list *list, int64_t n, char **out_text) {
    char *json = NULL;
    size_t length = 0;
    *out_text = NULL;
    if (list == NULL) return NULL;
    if (!CHECK_LIST_RESULT(list, sheaf_list_partitions(list, n, &json, &length), SHEAF_OK) || !CHECK(json != NULL))
        return NULL;
    CHECK_INT(length, strlen(json));
    json_error_t error;
    json_t *array = json_loads(json, 0, &error);
    if (!CHECK(array != NULL && json_is_array(array))) fprintf(stderr, "    not a JSON array: %.300s\n", json);
    *out_text = json;
    return array;
}

/* Runs `partition` (a JSON object) on a fresh client and list: its items, and its stop reason. */
static json_t *run_partition(const json_t *partition, sheaf_stop_reason *out_reason) {
    sheaf_client *client = client_for(&g_server, PARTITION_TOKEN);
    sheaf_list *list = NULL;
    json_t *items = NULL;
    char *text = json_dumps(partition, JSON_COMPACT);
    *out_reason = SHEAF_STOP_NONE;
    if (client == NULL || text == NULL) goto done;
    /* The list's own path does not matter: the partition's URL replaces it; its query gives the
       secret value back (the partition left it out). */
    if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/not-this-one"), SHEAF_OK)) goto done;
    CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "api_key", PARTITION_KEY), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_set_partition(list, text), SHEAF_OK);
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    *out_reason = status_of(list).stop_reason;
done:
    free(text);
    sheaf_list_free(list);
    sheaf_client_free(client);
    return items;
}

/* Splits the list at `path` (detected, with a secret query value) into up to 4 partitions and
   checks that their runs give items 0..n-1 once, in order, and that partition 1 runs the same twice. */
static void check_split(const char *path, int n, int64_t expected_partitions) {
    sheaf_client *client = client_for(&g_server, PARTITION_TOKEN);
    sheaf_list *list = NULL;
    char *text = NULL;
    json_t *partitions = NULL, *all = json_array();
    fprintf(stderr, "  %s\n", path);
    if (client == NULL || !CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, path), SHEAF_OK)) goto done;
    CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "api_key", PARTITION_KEY), SHEAF_OK);
    partitions = partitions_of(list, 4, &text);
    if (partitions == NULL) goto done;
    CHECK(strstr(text, PARTITION_KEY) == NULL);
    CHECK(strstr(text, PARTITION_TOKEN) == NULL);
    CHECK_INT(status_of(list).state, SHEAF_LIST_NEW);   /* the list itself is not started */
    CHECK_INT((int64_t)json_array_size(partitions), expected_partitions);
    int64_t next_page = 0, expected_sum = 0;
    for (size_t i = 0; i < json_array_size(partitions); i++) {
        const json_t *partition = json_array_get(partitions, i);
        CHECK_INT(json_integer_value(json_object_get(partition, "sheaf_partition")), 1);
        CHECK_INT(json_integer_value(json_object_get(partition, "index")), (int64_t)i);
        CHECK_INT(json_integer_value(json_object_get(partition, "count")), (int64_t)json_array_size(partitions));
        CHECK_INT(json_integer_value(json_object_get(partition, "first_page")), next_page);
        CHECK(json_is_null(json_object_get(partition, "why")));
        CHECK(json_is_boolean(json_object_get(partition, "open_ended")));
        CHECK(json_is_true(json_object_get(partition, "open_ended")) == (i + 1 == json_array_size(partitions)));
        CHECK(json_is_object(json_object_get(partition, "description")));
        next_page += json_integer_value(json_object_get(partition, "pages"));
        sheaf_stop_reason reason;
        json_t *items = run_partition(partition, &reason);
        CHECK_INT(reason, SHEAF_STOP_COMPLETE);
        const json_t *expected = json_object_get(partition, "items_expected");
        if (items != NULL && json_is_integer(expected)) {
            CHECK_INT((int64_t)json_array_size(items), json_integer_value(expected));
            expected_sum += json_integer_value(expected);
        }
        if (items != NULL) json_array_extend(all, items);
        if (i == 1) {   /* run twice: the same items */
            json_t *again = run_partition(partition, &reason);
            CHECK(again != NULL && items != NULL && json_equal(again, items));
            json_decref(again);
        }
        json_decref(items);
    }
    CHECK_ITEMS(all, 0, n);
done:
    sheaf_free(text);
    json_decref(partitions);
    json_decref(all);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void the_partitions_of_a_list_together_give_its_items_once_in_order(void) {
    char path[160];
    const int n = 237;   /* 12 pages of 20, the last short */
    snprintf(path, sizeof path, "/anchor?n=%d&per_page=20", n);           /* page numbers, a total in the body */
    check_split(path, n, 4);
    snprintf(path, sizeof path, "/conv/drf-limit?n=%d&limit=20", n);      /* offset/limit, a count */
    check_split(path, n, 4);
    snprintf(path, sizeof path, "/conv/github?n=%d&per_page=20", n);      /* Link rel="last" */
    check_split(path, n, 4);
    snprintf(path, sizeof path, "/conv/json-server?n=%d&_page=1&_limit=20", n);   /* X-Total-Count */
    check_split(path, n, 4);
    snprintf(path, sizeof path, "/anchor?n=%d&per_page=100", 250);       /* 3 pages: 3 partitions, not 4 */
    check_split(path, 250, 3);
}

/* The window shared out: among all the partitions (sheaf_list_partitions), or among those that
   run at once (sheaf_list_partitions_at_once); never below 1, never above the whole. */
void the_window_is_shared_among_the_partitions_that_run_at_once(void) {
    sheaf_client *client = client_for(&g_server, PARTITION_TOKEN);
    sheaf_list *list = NULL;
    const int64_t at_once[] = {8, 1, 2, 3, 100};
    const json_int_t expected[] = {6, 48, 24, 16, 6};   /* 48 / min(8 partitions, at_once) */
    if (client == NULL || !CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_WINDOW, 48), SHEAF_OK))
        goto done;
    for (size_t k = 0; k < sizeof at_once / sizeof at_once[0]; k++) {
        char *json = NULL;
        if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor?n=400&per_page=20"), SHEAF_OK)) goto done;
        if (CHECK_LIST_RESULT(list, sheaf_list_partitions_at_once(list, 8, at_once[k], &json, NULL), SHEAF_OK)) {
            json_t *partitions = json_loads(json, 0, NULL);
            CHECK_INT((int64_t)json_array_size(partitions), 8);
            for (size_t i = 0; i < json_array_size(partitions); i++)
                CHECK_INT(json_integer_value(json_object_get(json_array_get(partitions, i), "window")), expected[k]);
            json_decref(partitions);
        }
        sheaf_free(json);
        json = NULL;
        if (k == 0) {   /* sheaf_list_partitions: all of them at once */
            CHECK_LIST_RESULT(list, sheaf_list_partitions(list, 8, &json, NULL), SHEAF_OK);
            CHECK(json != NULL && strstr(json, "\"window\":6,") != NULL);
            sheaf_free(json);
            json = (char *)"unchanged";
            CHECK_LIST_RESULT(list, sheaf_list_partitions_at_once(list, 8, 0, &json, NULL), SHEAF_E_INVALID_ARGUMENT);
            CHECK(json == NULL);
        }
        sheaf_list_free(list);
        list = NULL;
    }
done:
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void a_list_that_cannot_be_split_is_one_partition_saying_why(void) {
    sheaf_client *client = client_for(&g_server, PARTITION_TOKEN);
    sheaf_list *list = NULL;
    char *text = NULL;
    json_t *partitions = NULL;
    char path[160];
    snprintf(path, sizeof path, "/conv/drf-cursor?n=%d&page_size=20", 95);   /* next links carrying cursors */
    if (client == NULL || !CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, path), SHEAF_OK)) goto done;
    partitions = partitions_of(list, 4, &text);
    if (partitions == NULL || !CHECK_INT((int64_t)json_array_size(partitions), 1)) goto done;
    const json_t *only = json_array_get(partitions, 0);
    const char *why = json_string_value(json_object_get(only, "why"));
    CHECK(why != NULL && strstr(why, "next link") != NULL);
    CHECK(json_is_true(json_object_get(only, "open_ended")));
    sheaf_stop_reason reason;
    json_t *items = run_partition(only, &reason);
    CHECK_INT(reason, SHEAF_STOP_COMPLETE);
    CHECK_ITEMS(items, 0, 95);
    json_decref(items);
done:
    sheaf_free(text);
    json_decref(partitions);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

/* Sets `text` on a fresh list: the result, and whether the list's error names `field`. */
static void check_refused(sheaf_client *client, const char *text, const char *field) {
    sheaf_list *list = NULL;
    if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK)) return;
    CHECK_LIST_RESULT(list, sheaf_list_set_partition(list, text), SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_list_error(list);
    if (CHECK(error != NULL) && !CHECK(strstr(error->message, field) != NULL))
        fprintf(stderr, "    the message does not name %s: %s\n", field, error->message);
    sheaf_error_free(error);
    sheaf_list_free(list);
}

void a_malformed_or_foreign_partition_is_refused_naming_its_field(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL, *started = NULL;
    char *text = NULL, *edited = NULL;
    json_t *partitions = NULL;
    char path[160];
    snprintf(path, sizeof path, "/anchor?n=%d&per_page=20", 100);
    if (client == NULL || !CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, path), SHEAF_OK)) goto done;
    CHECK_LIST_RESULT(list, sheaf_list_partitions(list, 0, &text, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK(text == NULL);
    CHECK_LIST_RESULT(list, sheaf_list_partitions(list, -3, &text, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_partitions(list, 2, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    partitions = partitions_of(list, 2, &text);
    if (partitions == NULL) goto done;
    json_t *second = json_deep_copy(json_array_get(partitions, 1));
    json_object_set_new(second, "first_page", json_string("x"));
    edited = json_dumps(second, JSON_COMPACT);
    check_refused(client, edited, "/first_page");
    free(edited);
    json_object_set_new(second, "first_page", json_integer(2));
    json_object_set_new(second, "sheaf_partition", json_integer(2));
    edited = json_dumps(second, JSON_COMPACT);
    check_refused(client, edited, "/sheaf_partition");
    free(edited);
    json_object_set_new(second, "sheaf_partition", json_integer(1));
    json_object_del(second, "pages");
    edited = json_dumps(second, JSON_COMPACT);
    check_refused(client, edited, "/pages");
    free(edited);
    check_refused(client, "[1, 2]", "partition");
    check_refused(client, "{\"sheaf_partition\": 1", "not JSON");
    /* Off the client's origin: refused at the start, as a resume token's page is. */
    json_object_set_new(second, "pages", json_integer(2));
    json_object_set_new(second, "url", json_string("http://elsewhere.invalid/anchor?n=100&per_page=20&page=1"));
    edited = json_dumps(second, JSON_COMPACT);
    if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&started, client, "/anchor"), SHEAF_OK)) {
        json_t *items = NULL;
        CHECK_LIST_RESULT(started, sheaf_list_set_partition(started, edited), SHEAF_OK);
        CHECK_LIST_RESULT(started, fetch_all(started, &items), SHEAF_E_INVALID_ARGUMENT);
        json_decref(items);
        /* A list with a partition is not split again. */
        char *more = NULL;
        CHECK_LIST_RESULT(started, sheaf_list_partitions(started, 2, &more, NULL), SHEAF_E_INVALID_ARGUMENT);
        sheaf_free(more);
    }
    /* Once a list has run, neither call is allowed. */
    json_t *items = NULL;
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    CHECK_ITEMS(items, 0, 100);
    json_decref(items);
    char *more = NULL;
    CHECK_LIST_RESULT(list, sheaf_list_partitions(list, 2, &more, NULL), SHEAF_E_STATE);
    CHECK_LIST_RESULT(list, sheaf_list_set_partition(list, edited), SHEAF_E_STATE);
    sheaf_free(more);
    free(edited);
    json_decref(second);
done:
    sheaf_free(text);
    json_decref(partitions);
    sheaf_list_free(list);
    sheaf_list_free(started);
    sheaf_client_free(client);
}
