/*
 * contract.c - the API's own contract: versions and result texts, what NULL handles, bad
 * arguments and calls out of turn answer, the description JSON, a list that runs once and
 * outlives its client.
 */
#include "harness.h"

void versions_agree_and_every_result_has_a_text(void) {
    CHECK_INT(sheaf_version_number(), SHEAF_VERSION_NUMBER);
    CHECK_INT(SHEAF_VERSION_NUMBER, SHEAF_VERSION_MAJOR * 10000 + SHEAF_VERSION_MINOR * 100 + SHEAF_VERSION_PATCH);
    CHECK_STR(sheaf_version_string(), SHEAF_VERSION_STRING);
    for (int code = -1; code <= SHEAF_E_INTERNAL + 5; code++) {
        const char *text = sheaf_result_str(code);
        if (!CHECK(text != NULL && text[0] != '\0')) fprintf(stderr, "    for result %d\n", code);
    }
    CHECK(sheaf_result_str(1000000) != NULL);
    CHECK(strcmp(sheaf_result_str(SHEAF_PENDING), sheaf_result_str(1000000)) != 0);
    CHECK(strcmp(sheaf_result_str(SHEAF_OK), sheaf_result_str(SHEAF_E_LOOP)) != 0);
}

void null_handles_and_bad_arguments_are_rejected(void) {
    sheaf_client *client = (sheaf_client *)&client;   /* a non-NULL sentinel the call must clear */
    const char *bad_urls[] = { "", "not a url", "ftp://127.0.0.1/", "/relative/path", "http://", "127.0.0.1:80" };
    CHECK_RESULT(sheaf_client_new(&client, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK(client == NULL);
    for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
        client = (sheaf_client *)&client;
        if (!CHECK_RESULT(sheaf_client_new(&client, bad_urls[i]), SHEAF_E_INVALID_ARGUMENT))
            fprintf(stderr, "    for base URL \"%s\"\n", bad_urls[i]);
        CHECK(client == NULL);
        if (client != NULL && client != (sheaf_client *)&client) sheaf_client_free(client);
    }
    CHECK_RESULT(sheaf_client_new(NULL, g_server.base_url), SHEAF_E_INVALID_ARGUMENT);
    /* A password in the base URL is refused, and not repeated in the message. */
    client = (sheaf_client *)&client;
    CHECK_RESULT(sheaf_client_new(&client, "http://user:hunter2@127.0.0.1:1/"), SHEAF_E_INVALID_ARGUMENT);
    CHECK(client == NULL);
    sheaf_error *error = sheaf_last_error();
    if (CHECK(error != NULL)) {
        CHECK_INT(error->version, SHEAF_ERROR_VERSION);
        CHECK_INT(error->code, SHEAF_E_INVALID_ARGUMENT);
        CHECK(strlen(error->message) > 0 && strstr(error->message, "hunter2") == NULL);
        CHECK(error->url != NULL && error->body != NULL && error->hint != NULL && error->json_offset == -1);
    }
    sheaf_error_free(error);
    sheaf_error_free(NULL);
    /* Invalid UTF-8 is refused, never repaired. */
    CHECK_RESULT(sheaf_client_new(&client, "http://127.0.0.1:1/\xff"), SHEAF_E_INVALID_ARGUMENT);

    client = client_for(&g_server, NULL);
    if (client == NULL) return;
    CHECK(sheaf_last_error() == NULL);   /* the last call succeeded */
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_BEARER, "tok\xc3\x28"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_BEARER, "tok\nen"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, (sheaf_auth)77, "x"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(NULL, SHEAF_AUTH_NONE, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_NONE, NULL), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_option(NULL, SHEAF_OPT_WINDOW, 4), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_WINDOW, 0), SHEAF_E_INVALID_ARGUMENT);
    error = sheaf_last_error();
    CHECK(error != NULL && strlen(error->message) > 0);
    sheaf_error_free(error);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_BODY_BYTES, INT64_MAX), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_WINDOW, 65), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 101), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_MAX_PAGES, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, (sheaf_option)999, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_WINDOW, 64), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, 3), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, -1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, SHEAF_HTTP_2_PRIOR_KNOWLEDGE), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, SHEAF_HTTP_1_1), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, SHEAF_HTTP_AUTO), SHEAF_OK);
    CHECK_RESULT(sheaf_client_set_transport(NULL, blocking_transport_get, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);

    sheaf_list *list = (sheaf_list *)&list;
    CHECK_RESULT(sheaf_list_new(&list, NULL, "/anchor"), SHEAF_E_INVALID_ARGUMENT);
    CHECK(list == NULL);
    list = (sheaf_list *)&list;
    CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK(list == NULL);
    CHECK_RESULT(sheaf_list_new(NULL, client, "/anchor"), SHEAF_E_INVALID_ARGUMENT);

    list = NULL;
    if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK) && CHECK(list != NULL)) {
        char *json = NULL;
        CHECK_RESULT(sheaf_list_set_signal(NULL, SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_BODY, "/items"), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_BODY, "items"),
                          SHEAF_E_INVALID_ARGUMENT);
        sheaf_error *list_error = sheaf_list_error(list);
        CHECK(list_error != NULL && strstr(list_error->message, "items") != NULL);
        sheaf_error_free(list_error);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_ITEM, "id"),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_BODY, NULL),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, NULL, 1, NULL, 0),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 1, "per_page", 0),
                          SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_max_items(list, -1), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_set_keep_items(NULL, 0), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_set_transport(NULL, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_add_query(list, NULL, "x"), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_prefix(list, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_BODY, "/items"), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", 0, NULL, 0), SHEAF_OK);
        CHECK(sheaf_list_error(list) == NULL);   /* the last call on the list succeeded */
        CHECK_RESULT(sheaf_list_start(NULL, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_wait(NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_prefix(NULL, &json, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_RESULT(sheaf_list_fetch_all(NULL, &json, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_fetch_all(list, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        sheaf_free(json);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);

    sheaf_list_free(NULL);
    sheaf_client_free(NULL);
    sheaf_free(NULL);
}

/* Every function of the header, handed NULL for each handle and out-parameter, answers
 * SHEAF_E_INVALID_ARGUMENT (or a documented neutral value) without touching anything; started
 * lists refuse their setters with SHEAF_E_STATE; absurd options are refused by value. */
void a_careless_caller_gets_a_result_code_never_a_crash(void) {
    char *json = (char *)&json;
    size_t length = 99;
    const sheaf_snapshot *snapshot = (const sheaf_snapshot *)&snapshot;
    const char *name = NULL, *value = NULL;
    CHECK_RESULT(sheaf_client_set_auth(NULL, SHEAF_AUTH_BEARER, "t"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_option(NULL, SHEAF_OPT_WINDOW, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_transport(NULL, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_add_query(NULL, "a", "b"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_set_paging(NULL, SHEAF_PAGING_NEXT, NULL, 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_use_preset(NULL, "github"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_description(NULL, &json, &length), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_url(NULL, &json), SHEAF_E_INVALID_ARGUMENT);
    CHECK(json == NULL);
    json = (char *)&json;
    CHECK_RESULT(sheaf_list_set_max_items(NULL, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start_pull(NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_next(NULL, 0, &snapshot), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_cancel(NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_preset_description(NULL, &json, &length), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_preset_description("github", NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK(sheaf_preset_name((size_t)-1) == NULL);
    CHECK(sheaf_list_error(NULL) == NULL);
    CHECK_INT(sheaf_list_requests_made(NULL), 0);
    CHECK_INT(sheaf_list_requests_in_flight(NULL), 0);
    CHECK(sheaf_exchange_method(NULL) == NULL && sheaf_exchange_url(NULL) == NULL);
    CHECK_INT(sheaf_exchange_header_count(NULL), 0);
    CHECK_RESULT(sheaf_exchange_header(NULL, 0, &name, &value), SHEAF_E_INVALID_ARGUMENT);
    CHECK(sheaf_exchange_body(NULL, &length) == NULL && length == 0);
    CHECK_INT(sheaf_exchange_timeout_ms(NULL), 0);
    CHECK_INT(sheaf_exchange_max_body_bytes(NULL), 0);
    CHECK_INT(sheaf_exchange_is_cancelled(NULL), 0);
    CHECK_RESULT(sheaf_exchange_add_response_header(NULL, "a", "b"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_exchange_respond(NULL, 200, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_exchange_fail(NULL, SHEAF_TRANSPORT_OTHER, NULL), SHEAF_E_INVALID_ARGUMENT);

    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    /* Absurd option values. */
    const struct { sheaf_option option; int64_t value; } absurd[] = {
        { SHEAF_OPT_WINDOW, -1 }, { SHEAF_OPT_WINDOW, INT64_MAX }, { SHEAF_OPT_MAX_PAGES, INT64_MIN },
        { SHEAF_OPT_MAX_BODY_BYTES, 0 }, { SHEAF_OPT_MAX_BODY_BYTES, ((int64_t)1 << 40) + 1 },
        { SHEAF_OPT_MAX_ATTEMPTS, -5 }, { SHEAF_OPT_RETRY_BASE_MS, -1 }, { SHEAF_OPT_TIMEOUT_MS, -1 },
        { SHEAF_OPT_CONNECT_TIMEOUT_MS, INT64_MIN }, { SHEAF_OPT_MAX_REDIRECTS, 51 }, { (sheaf_option)0, 1 },
    };
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++)
        if (!CHECK_CLIENT_RESULT(client, sheaf_client_set_option(client, absurd[i].option, absurd[i].value),
                                 SHEAF_E_INVALID_ARGUMENT))
            fprintf(stderr, "    option %d = %lld\n", (int)absurd[i].option, (long long)absurd[i].value);
    /* Wrong call order: a started list refuses its setters, a second start, a pull on a pushed list. */
    sheaf_list *list = standard_list(client, "");
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_STATE);           /* not started */
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 0, &snapshot), SHEAF_E_STATE);
        CHECK(snapshot == NULL);
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_NEXT, NULL, 0, NULL, 0), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_NONE, NULL), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, "github"), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "a", "b"), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_next(list, 0, &snapshot), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_cancel(list), SHEAF_OK);              /* after the end: a no-op */
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);                /* the outcome again */
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

/* The description JSON is the one vocabulary: what a list or a preset prints is taken back as it is. */
void a_description_is_set_as_the_json_the_library_prints(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    for (size_t i = 0; i < sheaf_preset_count(); i++) {
        char *printed = NULL, *again = NULL;
        size_t length = 0, again_length = 0;
        sheaf_list *list = NULL;
        if (!CHECK_RESULT(sheaf_preset_description(sheaf_preset_name(i), &printed, &length), SHEAF_OK)) continue;
        if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK)
            && CHECK_LIST_RESULT(list, sheaf_list_set_description(list, printed), SHEAF_OK)
            && CHECK_LIST_RESULT(list, sheaf_list_description(list, &again, &again_length), SHEAF_OK)) {
            json_t *expected = json_loadb(printed, length, 0, NULL), *actual = json_loadb(again, again_length, 0, NULL);
            if (!CHECK(expected != NULL && json_equal(expected, actual)))
                fprintf(stderr, "    preset %s: set %s, described %s\n", sheaf_preset_name(i), printed, again);
            json_decref(expected);
            json_decref(actual);
        }
        sheaf_free(again);
        sheaf_free(printed);
        sheaf_list_free(list);
    }

    /* A bad one is refused naming its field, and the list is left as it was. */
    sheaf_list *list = NULL;
    if (!CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor?n=120"), SHEAF_OK)) {
        sheaf_client_free(client);
        return;
    }
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{\"paging\": {\"kind\": \"offset\", \"param\": \"o\", \"frist\": 0}}"),
                      SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_list_error(list);
    if (CHECK(error != NULL)) CHECK_STR(error->message, "the description's /paging/frist: unknown field; /paging has kind, param, first, size_param, size, detected");
    sheaf_error_free(error);
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{\"paging\": {\"kind\": \"page_number\", \"param\": \"page\", \"first\": 99999999999999999999}}"),
                      SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{\"preset\": \"anchor\", \"paging\": {\"size\": 25}}"), SHEAF_OK);
    char *items = NULL;
    size_t length = 0;
    CHECK_LIST_RESULT(list, sheaf_list_fetch_all(list, &items, &length), SHEAF_OK);
    json_t *parsed = items ? json_loadb(items, length, 0, NULL) : NULL;
    CHECK_ITEMS(parsed, 0, 120);
    json_decref(parsed);
    sheaf_free(items);
    /* Only before the list starts. */
    CHECK_LIST_RESULT(list, sheaf_list_set_description(list, "{}"), SHEAF_E_STATE);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void description_calls_refuse_what_cannot_run(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    if (client == NULL || !CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK)) {
        sheaf_client_free(client);
        return;
    }
    /* A signal from a source it cannot come from, or an unknown value. */
    const struct { sheaf_signal signal; sheaf_source source; const char *where; } refused[] = {
        { SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_HEADER, "X-Items" },
        { SHEAF_SIGNAL_ITEMS, SHEAF_SOURCE_LINK, "next" },
        { SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_BODY, "/id" },
        { SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_DETECT, NULL },
        { SHEAF_SIGNAL_CURSOR, SHEAF_SOURCE_LINK, "next" },
        { SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_LAST_ITEM, "/n" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_ITEM, "/next" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_HEADER, "Bad Name" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_HEADER, "" },
        { SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_LINK, NULL },
        { SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_BODY, "total" },
        { (sheaf_signal)0, SHEAF_SOURCE_BODY, "/x" },
        { (sheaf_signal)99, SHEAF_SOURCE_BODY, "/x" },
        { SHEAF_SIGNAL_TOTAL, (sheaf_source)99, "/x" },
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, refused[i].signal, refused[i].source, refused[i].where),
                               SHEAF_E_INVALID_ARGUMENT))
            fprintf(stderr, "    for signal %d from source %d\n", (int)refused[i].signal, (int)refused[i].source);
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_TOTAL, SHEAF_SOURCE_HEADER, "X-Total-Count"), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_NEXT, SHEAF_SOURCE_LINK, "next"), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_set_signal(list, SHEAF_SIGNAL_CURSOR, SHEAF_SOURCE_LAST_ITEM, "/id"), SHEAF_OK);

    /* Paging: a parameter where one is needed, a first value of 0 or more, a size of 1 or more. */
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_OFFSET, NULL, 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_CURSOR, "", 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, "page", -1, NULL, 0),
                      SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_SINGLE, NULL, 0, "limit", 10), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, (sheaf_paging)42, "x", 0, NULL, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_LIST_RESULT(list, sheaf_list_set_paging(list, SHEAF_PAGING_OFFSET, "page[offset]", 0, "page[limit]", 25), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_add_query(list, "q", "caf\xc3"), SHEAF_E_INVALID_ARGUMENT);

    /* Presets: listed by the library, each described as JSON; an unknown name lists the known. */
    CHECK(sheaf_preset_count() >= 18);
    CHECK(sheaf_preset_name(sheaf_preset_count()) == NULL);
    for (size_t i = 0; i < sheaf_preset_count(); i++) {
        const char *name = sheaf_preset_name(i);
        char *json = NULL;
        size_t length = 0;
        if (!CHECK(name != NULL) || !CHECK_RESULT(sheaf_preset_description(name, &json, &length), SHEAF_OK)) continue;
        json_error_t parse_error;
        json_t *description = json_loadb(json, length, 0, &parse_error);
        if (!CHECK(json_is_object(json_object_get(description, "paging")) && json_is_object(json_object_get(description, "signals"))
                   && json_is_string(json_object_get(description, "summary"))))
            fprintf(stderr, "    preset %s: %s\n", name, json);
        json_decref(description);
        sheaf_free(json);
    }
    CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, "no-such-preset"), SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_list_error(list);
    CHECK(error != NULL && strstr(error->message, "github") != NULL);
    sheaf_error_free(error);
    CHECK_LIST_RESULT(list, sheaf_list_use_preset(list, "stripe"), SHEAF_OK);
    char *json = NULL;
    size_t length = 0;
    if (CHECK_LIST_RESULT(list, sheaf_list_description(list, &json, &length), SHEAF_OK)) {
        json_t *description = json_loadb(json, length, 0, NULL);
        json_t *paging = json_object_get(description, "paging");
        CHECK_STR(json_string_value(json_object_get(paging, "kind")), "cursor");
        CHECK_STR(json_string_value(json_object_get(paging, "param")), "starting_after");
        CHECK_STR(json_string_value(json_object_get(description, "preset")), "stripe");
        json_decref(description);
    }
    sheaf_free(json);
    sheaf_list_free(list);

    /* The list's URL: its path on the client's base, with no secret query value in it. */
    list = NULL;
    char *url = NULL;
    CHECK_INT(sheaf_client_add_secret_param(client, "signature"), SHEAF_OK);
    if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor?signature=s3cret&n=5"), SHEAF_OK)) {
        CHECK_LIST_RESULT(list, sheaf_list_url(list, NULL), SHEAF_E_INVALID_ARGUMENT);
        if (CHECK_LIST_RESULT(list, sheaf_list_url(list, &url), SHEAF_OK)) {
            CHECK(strncmp(url, g_server.base_url, strlen(g_server.base_url)) == 0);
            CHECK(strstr(url, "/anchor?") != NULL && strstr(url, "n=5") != NULL);
            if (!CHECK(strstr(url, "s3cret") == NULL)) fprintf(stderr, "    the secret is in %s\n", url);
        }
        sheaf_free(url);
    }
    sheaf_list_free(list);

    /* An undescribed list shows "detect" until its first page is in. */
    list = NULL;
    if (CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK) &&
        CHECK_LIST_RESULT(list, sheaf_list_description(list, &json, &length), SHEAF_OK)) {
        json_t *description = json_loadb(json, length, 0, NULL);
        CHECK_STR(json_string_value(json_object_get(json_object_get(description, "paging"), "kind")), "detect");
        CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(description, "signals"), "items"), "source")),
                  "detect");
        CHECK(json_is_null(json_object_get(json_object_get(description, "signals"), "identity")));
        json_decref(description);
        sheaf_free(json);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void a_list_runs_once(void) {
    char path[128];
    sheaf_client *client = client_for(&g_server, NULL);
    snprintf(path, sizeof path, "/anchor?n=%d", page_size() * 2);
    sheaf_list *list = anchor_list(client, path, page_size(), ANCHOR_ALL);
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start(list, NULL, NULL, NULL), SHEAF_E_STATE);
        char *json = NULL;
        size_t length = 0;
        if (CHECK_LIST_RESULT(list, sheaf_list_prefix(list, &json, &length), SHEAF_OK) && CHECK(json != NULL)) {
            json_t *items = parse_array(json, length);
            CHECK_ITEMS(items, 0, page_size() * 2);
            json_decref(items);
        }
        sheaf_free(json);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void a_list_outlives_its_client(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = standard_list(client, "");
    sheaf_client_free(client);
    check_complete_list(list, list_size());
    sheaf_list_free(list);
}
