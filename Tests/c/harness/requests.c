/*
 * requests.c - single requests (sheaf_request_*): methods, paths, queries and bodies as sent,
 * errors with the server's own fields, retries, redirects, refused headers and requests, and
 * a request started with a callback.
 */
#include "harness.h"

void requests_send_every_method_path_query_and_body_kind(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    CHECK_CLIENT_RESULT(client, sheaf_client_add_header(client, "X-Client", "default"), SHEAF_OK);
    CHECK_CLIENT_RESULT(client, sheaf_client_add_header(client, "X-Replaced", "client"), SHEAF_OK);
    const char *methods[] = { "GET", "PUT", "DELETE", "OPTIONS", "POST", "PATCH" };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, methods[i], "/req/echo"), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_segment(request, "a/b c"), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_query(request, "q", "x&y=z"), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_header(request, "X-Replaced", "request"), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_INT(sheaf_request_status(request), 200);
        CHECK_STR(json_string_value(json_object_get(echo, "method")), methods[i]);
        CHECK_STR(json_string_value(json_object_get(echo, "path")), "/req/echo/a%2Fb%20c");
        json_t *pair = json_array_get(json_object_get(echo, "query"), 0);
        CHECK_STR(json_string_value(json_array_get(pair, 1)), "x&y=z");
        CHECK_STR(echoed_header(echo, "x-client"), "default");
        CHECK_STR(echoed_header(echo, "x-replaced"), "request");
        CHECK(json_array_size(json_object_get(json_object_get(echo, "headers"), "x-replaced")) == 1);
        CHECK_STR(sheaf_request_header_value(request, "x-echo-method"), methods[i]);
        json_decref(echo);
        sheaf_request_free(request);
    }

    /* HEAD: a status and headers, no body. */
    sheaf_request *head = NULL;
    CHECK_RESULT(sheaf_request_new(&head, client, "HEAD", "req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(head), SHEAF_OK);
    size_t length = 99;
    CHECK(sheaf_request_body(head, &length) != NULL && length == 0);
    CHECK_STR(sheaf_request_header_value(head, "X-Echo-Method"), "HEAD");
    sheaf_request_free(head);

    /* A JSON body, a form body and raw bytes with a NUL in them. */
    sheaf_request *post = NULL;
    CHECK_RESULT(sheaf_request_new(&post, client, "POST", "/req/echo"), SHEAF_OK);
    const char *json = "{\"name\":\"sheaf\",\"n\":3}";
    CHECK_RESULT(sheaf_request_set_body(post, "application/json", json, strlen(json)), SHEAF_OK);
    json_t *echo = send_and_decode(post, SHEAF_OK);
    CHECK_STR(json_string_value(json_object_get(json_object_get(echo, "json"), "name")), "sheaf");
    CHECK_STR(json_string_value(json_object_get(echo, "content_type")), "application/json");
    json_decref(echo);
    sheaf_request_free(post);

    sheaf_request *form = NULL;
    CHECK_RESULT(sheaf_request_new(&form, client, "PUT", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_form(form, "name", "a b&c=d"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_form(form, "caf\xc3\xa9", "\xe2\x82\xac"), SHEAF_OK);
    echo = send_and_decode(form, SHEAF_OK);
    json_t *fields = json_object_get(echo, "form");
    CHECK_STR(json_string_value(json_array_get(json_object_get(fields, "name"), 0)), "a b&c=d");
    CHECK_STR(json_string_value(json_array_get(json_object_get(fields, "caf\xc3\xa9"), 0)), "\xe2\x82\xac");
    json_decref(echo);
    sheaf_request_free(form);

    sheaf_request *raw = NULL;
    CHECK_RESULT(sheaf_request_new(&raw, client, "PATCH", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_body(raw, "application/octet-stream", "a\0b", 3), SHEAF_OK);
    echo = send_and_decode(raw, SHEAF_OK);
    CHECK_INT(json_integer_value(json_object_get(echo, "body_length")), 3);
    json_decref(echo);
    sheaf_request_free(raw);
    sheaf_client_free(client);
}

void a_base_url_is_a_prefix_of_every_path(void) {
    char base[128];
    snprintf(base, sizeof base, "%s/req", g_server.base_url);
    sheaf_client *client = NULL;
    CHECK_RESULT(sheaf_client_new(&client, base), SHEAF_OK);
    const char *paths[] = { "echo/x", "/echo/x", "./echo/x" };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", paths[i]), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_STR(json_string_value(json_object_get(echo, "path")), "/req/echo/x");
        json_decref(echo);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

void request_errors_carry_the_servers_own_fields(void) {
    static const struct { const char *shape; int status; const char *wanted; } cases[] = {
        { "plain", 400, "invalid_cursor" },
        { "reason", 401, "token expired" },
        { "drf", 403, "You do not have permission" },
        { "fastapi", 422, "body.name: Field required" },
        { "stripe", 400, "Missing required param: amount." },
        { "stripe", 400, "parameter_missing" },
        { "google", 404, "Requested entity was not found." },
        { "github", 401, "Bad credentials" },
        { "jsonapi", 422, "First name must contain at least two characters." },
        { "problem", 403, "Your current balance is 30, but that costs 50." },
        { "problem", 403, "You do not have enough credit." },
        { "odata", 400, "Invalid $top value." },
    };
    sheaf_client *client = client_for(&g_server, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/req/error/%s", cases[i].shape);
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "GET", path), SHEAF_OK);
        CHECK_RESULT(sheaf_request_send(request), SHEAF_E_HTTP);
        CHECK_INT(sheaf_request_status(request), cases[i].status);
        size_t length = 0;
        CHECK(sheaf_request_body(request, &length) != NULL && length > 0);   /* the response stays readable */
        sheaf_error *error = sheaf_request_error(request);
        if (CHECK(error != NULL)) {
            CHECK_INT(error->http_status, cases[i].status);
            if (!CHECK(strstr(error->server_message, cases[i].wanted) != NULL))
                fprintf(stderr, "    %s: server_message \"%s\"\n", cases[i].shape, error->server_message);
            CHECK(strstr(error->message, cases[i].wanted) != NULL);
        }
        sheaf_error_free(error);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

/* Sends `method` to /req/flaky (one 503 first) under a fresh key; returns the result. */
static int send_flaky(sheaf_client *client, const char *method, const char *key, int opt_in, const char *idempotency_key) {
    char path[96];
    snprintf(path, sizeof path, "/req/flaky?fails=1&key=%s", key);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, method, path), SHEAF_OK);
    if (opt_in) CHECK_RESULT(sheaf_request_set_retry(request, 1), SHEAF_OK);
    if (idempotency_key) CHECK_RESULT(sheaf_request_add_header(request, "Idempotency-Key", idempotency_key), SHEAF_OK);
    int result = sheaf_request_send(request);
    sheaf_request_free(request);
    return result;
}

void requests_retry_only_what_is_safe_to_repeat(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);
    char key[64];
    snprintf(key, sizeof key, "get-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "GET", key, 0, NULL), SHEAF_OK);
    snprintf(key, sizeof key, "put-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "PUT", key, 0, NULL), SHEAF_OK);
    snprintf(key, sizeof key, "post-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "POST", key, 0, NULL), SHEAF_E_HTTP);   /* may have taken effect: not repeated */
    snprintf(key, sizeof key, "patch-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "PATCH", key, 0, NULL), SHEAF_E_HTTP);
    snprintf(key, sizeof key, "post-opt-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "POST", key, 1, NULL), SHEAF_OK);
    snprintf(key, sizeof key, "post-key-%lld", now_ms());
    CHECK_RESULT(send_flaky(client, "POST", key, 0, "7c1b"), SHEAF_OK);
    sheaf_client_free(client);
}

void redirects_turn_a_post_into_a_get_only_where_http_says_so(void) {
    static const struct { int code; const char *method; int keeps_body; } cases[] = {
        { 303, "GET", 0 }, { 302, "GET", 0 }, { 301, "GET", 0 }, { 307, "POST", 1 }, { 308, "POST", 1 },
    };
    sheaf_client *client = client_for(&g_server, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[96];
        snprintf(path, sizeof path, "/req/redirect?code=%d&to=/req/echo/after", cases[i].code);
        sheaf_request *request = NULL;
        CHECK_RESULT(sheaf_request_new(&request, client, "POST", path), SHEAF_OK);
        CHECK_RESULT(sheaf_request_set_body(request, "text/plain", "hello", 5), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_STR(json_string_value(json_object_get(echo, "method")), cases[i].method);
        CHECK_INT(json_integer_value(json_object_get(echo, "body_length")), cases[i].keeps_body ? 5 : 0);
        CHECK(strstr(sheaf_request_url(request), "/req/echo/after") != NULL);
        json_decref(echo);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

/* A segment is one segment as the server receives it: "." and ".." are data, not a step up the
 * path (DELETE users/.. reached /req/ in 0.4.0), and every delimiter in it is escaped. */
void a_segment_reaches_the_server_as_one_segment_even_dots(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    static const struct { const char *method, *first, *second, *path; } cases[] = {
        { "DELETE", "users", "..", "/req/echo/users/%2E%2E" },
        { "GET", ".", "items", "/req/echo/%2E/items" },
        { "PUT", "..", "..", "/req/echo/%2E%2E/%2E%2E" },
        { "GET", "...", ".x", "/req/echo/.../.x" },          /* not dot segments: as they are */
        { "GET", "a/b?c#d%e f", "", "/req/echo/a%2Fb%3Fc%23d%25e%20f/" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sheaf_request *request = NULL;
        if (!CHECK_RESULT(sheaf_request_new(&request, client, cases[i].method, "/req/echo"), SHEAF_OK)) continue;
        CHECK_RESULT(sheaf_request_add_segment(request, cases[i].first), SHEAF_OK);
        CHECK_RESULT(sheaf_request_add_segment(request, cases[i].second), SHEAF_OK);
        json_t *echo = send_and_decode(request, SHEAF_OK);
        CHECK_INT(sheaf_request_status(request), 200);
        CHECK_STR(json_string_value(json_object_get(echo, "path")), cases[i].path);
        json_decref(echo);
        sheaf_request_free(request);
    }
    sheaf_client_free(client);
}

/* Whether `result` is SHEAF_E_INVALID_ARGUMENT with a message (sheaf_last_error) naming `name`. */
static int refused_naming(sheaf_result result, const char *name) {
    sheaf_error *error = sheaf_last_error();
    int named = error != NULL && strstr(error->message, name) != NULL;
    if (!named) fprintf(stderr, "    the error does not name %s: %s\n", name, error ? error->message : "(none)");
    sheaf_error_free(error);
    return CHECK_RESULT(result, SHEAF_E_INVALID_ARGUMENT) && CHECK(named);
}

/* Headers that frame the message are the transport's: a caller's Content-Length: 0 on a POST
 * left the body on a keep-alive connection, read as a second request (request smuggling). They
 * are refused wherever a caller sets headers; any other header still goes out. */
void framing_headers_are_refused_from_every_caller_and_others_go_out(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = NULL;
    sheaf_request *request = NULL;
    if (client == NULL) return;
    CHECK_CLIENT_RESULT(client, sheaf_list_new(&list, client, "/anchor"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_new(&request, client, "POST", "/req/echo"), SHEAF_OK);
    static const struct { const char *name, *value; } framing[] = {
        { "Content-Length", "0" }, { "content-length", "5" }, { "Transfer-Encoding", "chunked" },
        { "TRANSFER-encoding", "identity" }, { "Host", "internal.example" }, { "host", "x" },
        { "Connection", "close" }, { "CONNECTION", "keep-alive, Upgrade" },
    };
    for (size_t i = 0; i < sizeof framing / sizeof framing[0]; i++) {
        refused_naming(sheaf_client_add_header(client, framing[i].name, framing[i].value), framing[i].name);
        refused_naming(sheaf_list_add_header(list, framing[i].name, framing[i].value), framing[i].name);
        refused_naming(sheaf_request_add_header(request, framing[i].name, framing[i].value), framing[i].name);
    }
    CHECK_RESULT(sheaf_client_add_header(client, "X-Injected", "a\rb"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_add_header(list, "X-Injected", "a\nb"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_add_header(request, "X-Bad\rName", "v"), SHEAF_E_INVALID_ARGUMENT);

    /* Nothing refused was kept: the request goes out with its own framing and the other headers. */
    CHECK_CLIENT_RESULT(client, sheaf_client_add_header(client, "X-Client-Custom", "c1"), SHEAF_OK);
    CHECK_LIST_RESULT(list, sheaf_list_add_header(list, "X-List-Custom", "l1"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_header(request, "X-Request-Custom", "r1"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain", "hello", 5), SHEAF_OK);
    json_t *echo = send_and_decode(request, SHEAF_OK);
    CHECK_STR(echoed_header(echo, "x-client-custom"), "c1");
    CHECK_STR(echoed_header(echo, "x-request-custom"), "r1");
    CHECK_STR(echoed_header(echo, "content-length"), "5");
    CHECK(echoed_header(echo, "transfer-encoding") == NULL);
    const char *host = echoed_header(echo, "host");   /* the server's own, e.g. 127.0.0.1:PORT */
    CHECK(host != NULL && strstr(g_server.base_url, host) != NULL);
    json_decref(echo);
    sheaf_request_free(request);
    sheaf_list_free(list);
    sheaf_client_free(client);
}

void requests_refuse_what_cannot_be_sent(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GE T", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK(request == NULL);
    CHECK_RESULT(sheaf_request_new(&request, client, "", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_new(&request, NULL, "GET", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_new(NULL, client, "GET", "/req/echo"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_add_header(client, "X-Bad\nName", "v"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_add_header(client, "X-Injected", "v\r\nX-Evil: 1"), SHEAF_E_INVALID_ARGUMENT);

    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_add_header(request, "Bad Name", "v"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_add_header(request, "X-Injected", "a\nb"), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain\r\nX-Evil: 1", "x", 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain", NULL, 4), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_set_body(request, "text/plain", "body", 4), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_E_INVALID_ARGUMENT);   /* a body on GET */
    sheaf_error *error = sheaf_request_error(request);
    CHECK(error != NULL && strstr(error->message, "GET") != NULL);
    sheaf_error_free(error);
    CHECK_INT(sheaf_request_status(request), 0);
    CHECK(sheaf_request_body(request, NULL) == NULL);
    sheaf_request_free(request);

    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_wait(request), SHEAF_E_STATE);              /* not started */
    CHECK_RESULT(sheaf_request_send(request), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_E_STATE);              /* sent once */
    CHECK_RESULT(sheaf_request_add_query(request, "a", "b"), SHEAF_E_STATE);
    const char *name = NULL, *value = NULL;
    CHECK_RESULT(sheaf_request_header(request, 9999, &name, &value), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_header(request, 0, &name, &value), SHEAF_OK);
    CHECK(name != NULL && value != NULL);
    sheaf_request_free(request);
    sheaf_request_free(NULL);
    CHECK_INT(sheaf_request_status(NULL), 0);
    CHECK(sheaf_request_body(NULL, NULL) == NULL);
    sheaf_client_free(client);
}

typedef struct done_record {
    atomic_int calls;
    atomic_int destroyed;
    atomic_int result;
    atomic_int status;
    atomic_int reentrant;
} done_record;

static void on_request_done(sheaf_request *request, sheaf_result result, void *user_data) {
    done_record *record = user_data;
    atomic_store(&record->result, result);
    atomic_store(&record->status, sheaf_request_status(request));
    atomic_store(&record->reentrant, sheaf_request_wait(request) == SHEAF_E_REENTRANT);
    atomic_fetch_add(&record->calls, 1);
}

static void on_request_destroy(void *user_data) {
    atomic_fetch_add(&((done_record *)user_data)->destroyed, 1);
}

void a_started_request_calls_back_once_and_frees_its_user_data(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    done_record record = { 0 };
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "DELETE", "/req/echo?status=204"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, on_request_done, &record, on_request_destroy), SHEAF_OK);
    CHECK_RESULT(sheaf_request_wait(request), SHEAF_OK);
    CHECK_INT(atomic_load(&record.calls), 1);         /* wait returns after the callback */
    CHECK_INT(atomic_load(&record.result), SHEAF_OK);
    CHECK_INT(atomic_load(&record.status), 204);
    CHECK_INT(atomic_load(&record.reentrant), 1);
    CHECK_RESULT(sheaf_request_start(request, on_request_done, &record, on_request_destroy), SHEAF_E_STATE);
    sheaf_request_free(request);
    CHECK_INT(atomic_load(&record.destroyed), 1);     /* the refused start's user data stays the caller's */

    /* Freed while in flight: no callback after the free, the user data released once. */
    done_record slow = { 0 };
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/anchor?latency_ms=3000"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, on_request_done, &slow, on_request_destroy), SHEAF_OK);
    long long started = now_ms();
    sheaf_request_free(request);
    int calls_at_free = atomic_load(&slow.calls);
    CHECK(now_ms() - started < 2000);
    sleep_ms(50);
    CHECK_INT(atomic_load(&slow.calls), calls_at_free);
    CHECK_INT(atomic_load(&slow.destroyed), 1);

    /* Cancelled: the outcome says so. */
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/anchor?latency_ms=3000"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, NULL, NULL, NULL), SHEAF_OK);
    CHECK_RESULT(sheaf_request_cancel(request), SHEAF_OK);
    CHECK_RESULT(sheaf_request_wait(request), SHEAF_E_CANCELLED);
    sheaf_request_free(request);
    sheaf_client_free(client);
}
