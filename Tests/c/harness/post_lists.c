/*
 * post_lists.c - lists behind a POST (issue 45): a Notion-shaped query whose cursor goes in the
 * JSON body, and a GitHub-shaped GraphQL connection whose errors fail the list with SHEAF_E_API.
 */
#include "harness.h"

#define NOTION_BODY "{\"filter\":{\"property\":\"n\",\"number\":{\"greater_than_or_equal_to\":1}}}"
#define ISSUES_QUERY "{\"query\":\"query($first: Int!, $after: String) { repository { issues(first: $first, after: $after) " \
                     "{ totalCount pageInfo { hasNextPage endCursor } nodes { id number } } } }\",\"variables\":{}}"

/* Item i (from 1) of a Notion-shaped list has the id 59833787-2cf9-4fdf-8782-<i, 12 digits>. */
static int notion_ids_in_order(const json_t *items, int count) {
    if (!CHECK(items != NULL) || !CHECK_INT(json_array_size(items), count)) return 0;
    for (int i = 0; i < count; i++) {
        char expected[64];
        snprintf(expected, sizeof expected, "59833787-2cf9-4fdf-8782-%012d", i + 1);
        const char *id = json_string_value(json_object_get(json_array_get(items, (size_t)i), "id"));
        if (!CHECK(id != NULL && strcmp(id, expected) == 0)) return 0;
    }
    return 1;
}

void a_notion_query_pages_with_its_cursor_in_a_post_body(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    fresh_server(&g_server);
    sheaf_list *list = NULL;
    CHECK_INT(sheaf_list_new(&list, client, "/post/notion/query?n=230"), SHEAF_OK);
    CHECK_INT(sheaf_list_use_preset(list, "notion"), SHEAF_OK);
    CHECK_INT(sheaf_list_set_body(list, "POST", NULL, NOTION_BODY, strlen(NOTION_BODY)), SHEAF_OK);
    json_t *items = NULL;
    CHECK_INT(fetch_all(list, &items), SHEAF_OK);
    notion_ids_in_order(items, 230);
    json_t *stats = test_server_stats(&g_server);
    CHECK_INT(json_integer_value(json_object_get(stats, "requests")), 3); /* 100 a page */
    json_decref(stats);
    /* Set once started: refused, as the description is. */
    CHECK_INT(sheaf_list_set_body(list, "POST", NULL, "{}", 2), SHEAF_E_STATE);
    json_decref(items);
    sheaf_list_free(list);

    /* What cannot be sent is refused when it is set, or when the list starts, without the body. */
    CHECK_INT(sheaf_list_set_body(NULL, "POST", NULL, "{}", 2), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_list_new(&list, client, "/post/notion/query?n=5"), SHEAF_OK);
    CHECK_INT(sheaf_list_set_body(list, "HEAD", NULL, "{}", 2), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_list_set_body(list, "PO ST", NULL, "{}", 2), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_list_set_body(list, "POST", NULL, NULL, 4), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_list_set_body(list, "POST", "text/plain\r\nX: y", "{}", 2), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_list_use_preset(list, "notion"), SHEAF_OK);
    CHECK_INT(sheaf_list_set_body(list, "POST", NULL, "[\"hidden-9d2\"]", 14), SHEAF_OK);
    CHECK_INT(fetch_all(list, &items), SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_list_error(list);
    CHECK(error != NULL && strstr(error->message, "must be a JSON object") != NULL && strstr(error->message, "hidden-9d2") == NULL);
    sheaf_error_free(error);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void a_graphql_error_fails_the_list_with_sheaf_e_api(void) {
    static const char *description = "{\"graphql\":{\"connection\":\"/data/repository/issues\",\"page_size\":100}}";
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    for (int failing = 0; failing <= 1; failing++) {
        sheaf_list *list = NULL;
        CHECK_INT(sheaf_list_new(&list, client, failing ? "/post/graphql?n=230&error_at=150" : "/post/graphql?n=230"), SHEAF_OK);
        CHECK_INT(sheaf_list_set_description(list, description), SHEAF_OK);
        CHECK_INT(sheaf_list_set_body(list, "POST", "application/json", ISSUES_QUERY, strlen(ISSUES_QUERY)), SHEAF_OK);
        json_t *items = NULL;
        CHECK_INT(fetch_all(list, &items), failing ? SHEAF_E_API : SHEAF_OK);
        size_t count = json_array_size(items);
        CHECK_INT(count, failing ? 100 : 230);
        for (size_t i = 0; i < count; i++) {
            if (!CHECK_INT(json_integer_value(json_object_get(json_array_get(items, i), "number")), (long long)i + 1)) break;
        }
        if (failing) {
            sheaf_error *error = sheaf_list_error(list);
            CHECK(error != NULL && strstr(error->message, "the GraphQL answer has errors: Something went wrong while executing "
                                                          "your query. (at repository.issues.nodes.0.author)") != NULL);
            CHECK(strcmp(sheaf_result_str(SHEAF_E_API), "unknown result code") != 0);
            sheaf_error_free(error);
        }
        json_decref(items);
        sheaf_list_free(list);
    }
    sheaf_client_free(client);
}

/* Each issue's comments, cut at 5 by the list's query, completed by a node(id:) query of their
   own: every issue arrives whole, all totalCount of its comments in order. */
void a_graphql_lists_nested_connections_arrive_whole(void) {
    static const char *description =
        "{\"graphql\":{\"connection\":\"/data/repository/issues\",\"nested\":[{\"field\":\"/comments\",\"page_size\":4,"
        "\"query\":\"query($id: ID!, $first: Int!, $after: String) { node(id: $id) { ... on Issue { comments(first: $first, "
        "after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } } }\"}]}}";
    static const char *body =
        "{\"query\":\"query($first: Int!, $after: String) { repository { issues(first: $first, after: $after) { pageInfo "
        "{ hasNextPage endCursor } nodes { id number comments(first: 5) { totalCount pageInfo { hasNextPage endCursor } "
        "nodes { id } } } } } }\",\"variables\":{}}";
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    sheaf_list *list = NULL;
    CHECK_INT(sheaf_list_new(&list, client, "/post/graphql?n=120"), SHEAF_OK);
    CHECK_INT(sheaf_list_set_description(list, description), SHEAF_OK);
    CHECK_INT(sheaf_list_set_body(list, "POST", NULL, body, strlen(body)), SHEAF_OK);
    json_t *items = NULL;
    CHECK_INT(fetch_all(list, &items), SHEAF_OK);
    CHECK_INT(json_array_size(items), 120);
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *item = json_array_get(items, i);
        long number = (long)json_integer_value(json_object_get(item, "number"));
        json_t *comments = json_object_get(item, "comments");
        json_t *nodes = json_object_get(comments, "nodes");
        long count = (number * 7) % 23; /* post_api.py: issue i has (i * 7) % 23 comments */
        if (!CHECK_INT(number, (long)i + 1) || !CHECK_INT(json_array_size(nodes), count)) break;
        char expected[64];
        snprintf(expected, sizeof expected, "IC_%ld_%ld", number, count);
        if (count > 0) CHECK(strcmp(json_string_value(json_object_get(json_array_get(nodes, (size_t)count - 1), "id")), expected) == 0);
        CHECK(json_is_false(json_object_get(json_object_get(comments, "pageInfo"), "hasNextPage")));
    }
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
}
