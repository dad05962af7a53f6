/*
 * credentials.c - credentials: every kind goes only to its origin and never into a message;
 * a credential provider is asked once, then once per 401.
 */
#include "harness.h"

#include <pthread.h>

void every_credential_kind_goes_only_to_its_origin(void) {
    char foreign[160];
    snprintf(foreign, sizeof foreign, "%s/req/echo", g_other.base_url);
    static const struct { sheaf_auth kind; const char *name, *value, *header, *expected; } cases[] = {
        { SHEAF_AUTH_BEARER, NULL, "t0ken-1", "authorization", "Bearer t0ken-1" },
        { SHEAF_AUTH_BASIC, "Aladdin", "open sesame", "authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==" },
        { SHEAF_AUTH_API_KEY_HEADER, "X-Api-Key", "k3y-header", "x-api-key", "k3y-header" },
        { SHEAF_AUTH_API_KEY_QUERY, "api_key", "k3y-query", NULL, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sheaf_client *client = client_for(&g_server, NULL);
        CHECK_RESULT(sheaf_client_set_credential(client, cases[i].kind, cases[i].name, cases[i].value), SHEAF_OK);
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        if (cases[i].header) {
            CHECK_STR(echoed_header(echo, cases[i].header), cases[i].expected);
        } else {
            json_t *pair = json_array_get(json_object_get(echo, "query"), 0);
            CHECK_STR(json_string_value(json_array_get(pair, 0)), "api_key");
            CHECK_STR(json_string_value(json_array_get(pair, 1)), "k3y-query");
            CHECK(strstr(sheaf_request_url(request), "k3y-query") == NULL);   /* redacted */
        }
        json_decref(echo);
        sheaf_request_free(request);

        /* Another origin: refused by default, sent without any credential when allowed. */
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", foreign), SHEAF_OK);
        CHECK_RESULT(sheaf_request_send(request), SHEAF_E_CROSS_ORIGIN);
        sheaf_request_free(request);
        set_option(client, SHEAF_OPT_CROSS_ORIGIN, 1);
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", foreign), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_header(request, "Cookie", "session=1"), SHEAF_OK);
        echo = send_and_decode(request, SHEAF_OK);
        char *text = json_dumps(echo, 0);
        CHECK(text != NULL && strstr(text, cases[i].value) == NULL);
        CHECK(text != NULL && strstr(text, "session=1") == NULL);
        CHECK(echoed_header(echo, "authorization") == NULL);
        free(text);
        json_decref(echo);
        sheaf_request_free(request);

        /* A failure's message never shows the credential, whatever the server echoes. */
        char path[96];
        snprintf(path, sizeof path, "/req/echo?status=400&token=s3cret-param");
        CHECK_RESULT(sheaf_request_new(&request, client, "POST", path), SHEAF_OK);
        CHECK_RESULT(sheaf_request_send(request), SHEAF_E_HTTP);
        sheaf_error *error = sheaf_request_error(request);
        if (CHECK(error != NULL)) {
            CHECK(strstr(error->message, cases[i].value) == NULL && strstr(error->body, cases[i].value) == NULL);
            CHECK(strstr(error->url, "s3cret-param") == NULL && strstr(error->message, "s3cret-param") == NULL);
            CHECK(strstr(error->body, "s3cret-param") == NULL);
        }
        sheaf_error_free(error);
        sheaf_request_free(request);
        sheaf_client_free(client);
    }
    sheaf_client *client = client_for(&g_server, NULL);
    CHECK_RESULT(sheaf_client_set_credential(client, SHEAF_AUTH_BASIC, "user:colon", "pw"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential(client, SHEAF_AUTH_API_KEY_HEADER, "Bad Header", "v"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential(client, SHEAF_AUTH_API_KEY_QUERY, "k", ""), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_auth(client, SHEAF_AUTH_BASIC, "a:b"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential(client, (sheaf_auth)99, "a", "b"), SHEAF_E_INVALID_ARGUMENT);
    sheaf_client_free(client);
}

/* A credential provider that gives "stale-c-token" first and "fresh-c-token" after, counting its calls. */
typedef struct { pthread_mutex_t lock; int calls, refreshes, destroyed; int refuse; } token_source;

static void provide_token(sheaf_credential_reply *reply, void *user_data) {
    token_source *source = user_data;
    pthread_mutex_lock(&source->lock);
    int call = source->calls++;
    source->refreshes += sheaf_credential_reply_is_refresh(reply);
    pthread_mutex_unlock(&source->lock);
    if (source->refuse) {
        CHECK_RESULT(sheaf_credential_reply_fail(reply, "no token today"), SHEAF_OK);
        return;
    }
    CHECK_RESULT(sheaf_credential_reply_set(reply, ""), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_credential_reply_set(reply, call == 0 ? "stale-c-token" : "fresh-c-token"), SHEAF_OK);
}

static void forget_token_source(void *user_data) {
    token_source *source = user_data;
    pthread_mutex_lock(&source->lock);
    source->destroyed++;
    pthread_mutex_unlock(&source->lock);
}

void a_credential_provider_is_asked_once_then_once_per_401(void) {
    token_source source = { .lock = PTHREAD_MUTEX_INITIALIZER };
    sheaf_client *client = client_for(&g_server, NULL);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_NONE, NULL, provide_token, &source, NULL),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_BASIC, NULL, provide_token, &source, NULL),
                 SHEAF_E_INVALID_ARGUMENT);   /* Basic needs its user */
    CHECK(source.destroyed == 0);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_BEARER, NULL, provide_token, &source,
                                                      forget_token_source), SHEAF_OK);
    /* A list whose pages from 2 on want the fresh token: page 1 goes with the stale one. */
    char path[160];
    snprintf(path, sizeof path, "/anchor?n=%d&bearer=fresh-c-token&bearer_from=2", list_size());
    sheaf_list *list = anchor_list(client, path, page_size(), ANCHOR_ALL);
    json_t *items = NULL;
    if (list != NULL) {
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        CHECK_ITEMS(items, 0, list_size());
    }
    CHECK_INT(source.calls, 2);
    CHECK_INT(source.refreshes, 1);
    /* A request the fresh token cannot open either: one more refresh, then the 401 is the answer. */
    CHECK_RESULT(send_simple(client, "/req/echo?bearer=another-token"), SHEAF_E_HTTP);
    CHECK_INT(source.calls, 3);
    json_decref(items);
    sheaf_list_free(list);
    sheaf_client_free(client);
    /* Nothing needs it any more; the library's threads let go of their last references just
     * after (a fetch finishing on another thread): wait (bounded). */
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&source.lock);
        int destroyed = source.destroyed;
        pthread_mutex_unlock(&source.lock);
        if (destroyed) break;
        sleep_ms(10);
    }
    CHECK_INT(source.destroyed, 1);

    /* A provider without a credential: the request fails with SHEAF_E_CREDENTIAL, its message said. */
    token_source refusing = { .lock = PTHREAD_MUTEX_INITIALIZER, .refuse = 1 };
    client = client_for(&g_server, NULL);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_API_KEY_HEADER, "X-Api-Key", provide_token,
                                                      &refusing, NULL), SHEAF_OK);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_E_CREDENTIAL);
    sheaf_error *error = sheaf_request_error(request);
    CHECK(error != NULL && strstr(error->message, "no token today") != NULL);
    sheaf_error_free(error);
    sheaf_request_free(request);
    sheaf_client_free(client);
}
