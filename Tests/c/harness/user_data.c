/*
 * user_data.c - who owns a callback's user_data: a refused registration leaves it with the
 * caller, an accepted one is destroyed once, when nothing needs it any more.
 */
#include "harness.h"

/* Destroy calls seen by the test below. */
static atomic_int g_destroyed_transport, g_destroyed_snapshot;
static void destroy_transport(void *user_data) { (void)user_data; atomic_fetch_add(&g_destroyed_transport, 1); }
static void destroy_snapshot(void *user_data) { (void)user_data; atomic_fetch_add(&g_destroyed_snapshot, 1); }
static int count_snapshot(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
    (void)list; (void)snapshot;
    atomic_fetch_add((atomic_int *)user_data, 1);
    return 0;
}

/* Destroy calls of the refused registrations below. */
static atomic_int g_destroyed_refused;
static void destroy_refused(void *user_data) { (void)user_data; atomic_fetch_add(&g_destroyed_refused, 1); }
static void ignore_log(const sheaf_log_record *record, void *user_data) { (void)record; (void)user_data; }
static void ignore_event(const sheaf_event *event, void *user_data) { (void)event; (void)user_data; }
static void refuse_credential(sheaf_credential_reply *reply, void *user_data) {
    (void)user_data;
    sheaf_credential_reply_fail(reply, "never asked");
}
static int ignore_output(const char *bytes, size_t length, void *user_data) {
    (void)user_data; (void)bytes; (void)length;
    return 0;
}
static void ignore_done(sheaf_request *request, sheaf_result result, void *user_data) {
    (void)request; (void)result; (void)user_data;
}

/* A call that takes a callback and refuses it does not take its user_data: destroy is not called,
 * and the caller, who still owns it, frees it once (as after any failed call). */
void a_refused_registration_leaves_the_user_data_with_the_caller(void) {
    atomic_store(&g_destroyed_refused, 0);
    int data = 0;
    blocking_transport transport;
    blocking_transport_init(&transport);
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    /* NULL handles. */
    CHECK_RESULT(sheaf_client_set_log(NULL, SHEAF_LOG_INFO, ignore_log, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_event_handler(NULL, ignore_event, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(NULL, SHEAF_AUTH_BEARER, NULL, refuse_credential, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_transport(NULL, blocking_transport_get, &transport, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_set_transport(NULL, blocking_transport_get, &transport, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start(NULL, count_snapshot, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start_write(NULL, SHEAF_FORMAT_JSON_LINES, ignore_output, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_start(NULL, ignore_done, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(atomic_load(&g_destroyed_refused), 0);
    /* Bad arguments and calls out of turn on real handles. */
    CHECK_RESULT(sheaf_client_set_log(client, (sheaf_log_level)99, ignore_log, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_NONE, NULL, refuse_credential, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_credential_provider(client, SHEAF_AUTH_BASIC, NULL, refuse_credential, &data, destroy_refused),
                 SHEAF_E_INVALID_ARGUMENT);
    sheaf_list *list = NULL;
    CHECK_RESULT(sheaf_list_new(&list, client, "/anchor?n=5"), SHEAF_OK);
    CHECK_RESULT(sheaf_list_start_write(list, (sheaf_format)99, ignore_output, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start_write(list, SHEAF_FORMAT_JSON_LINES, NULL, &data, destroy_refused), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_list_start(list, NULL, NULL, NULL), SHEAF_OK);
    CHECK_RESULT(sheaf_list_start(list, count_snapshot, &data, destroy_refused), SHEAF_E_STATE);
    CHECK_RESULT(sheaf_list_set_transport(list, blocking_transport_get, &transport, destroy_refused), SHEAF_E_STATE);
    CHECK_RESULT(sheaf_list_wait(list), SHEAF_OK);
    sheaf_list_free(list);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/echo"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_send(request), SHEAF_OK);
    CHECK_RESULT(sheaf_request_start(request, ignore_done, &data, destroy_refused), SHEAF_E_STATE);
    sheaf_request_free(request);
    sheaf_client_free(client);
    CHECK_INT(atomic_load(&g_destroyed_refused), 0);
}

/* Each user_data is destroyed once, when nothing needs it any more: the snapshot callback's after
 * the list ended, the transport's once the client and the lists that used it are freed. */
void destroy_functions_run_once_when_nothing_needs_the_user_data(void) {
    blocking_transport transport;
    blocking_transport_init(&transport);
    atomic_int snapshots = 0;
    atomic_store(&g_destroyed_transport, 0);
    atomic_store(&g_destroyed_snapshot, 0);
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    CHECK_CLIENT_RESULT(client, sheaf_client_set_transport(client, blocking_transport_get, &transport, destroy_transport),
                        SHEAF_OK);
    sheaf_list *list = anchor_list(client, "/anchor?n=30", 10, ANCHOR_ALL);
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start(list, count_snapshot, &snapshots, destroy_snapshot), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        CHECK(atomic_load(&snapshots) >= 1);
        for (int i = 0; i < 200 && atomic_load(&g_destroyed_snapshot) == 0; i++) sleep_ms(10);
        CHECK_INT(atomic_load(&g_destroyed_snapshot), 1);   /* the list has ended: no more callbacks */
        CHECK_INT(atomic_load(&g_destroyed_transport), 0);  /* the client still holds the transport */
    }
    sheaf_client_free(client);
    CHECK_INT(atomic_load(&g_destroyed_transport), 0);      /* the list still holds it */
    sheaf_list_free(list);
    /* The library's threads let go of their last references just after: wait (bounded). */
    for (int i = 0; i < 200 && atomic_load(&g_destroyed_transport) == 0; i++) sleep_ms(10);
    CHECK_INT(atomic_load(&g_destroyed_transport), 1);
    CHECK_INT(atomic_load(&g_destroyed_snapshot), 1);
    /* The three pages, and at most a window of pages asked for ahead of page one. */
    CHECK(atomic_load(&transport.calls) >= 3 && atomic_load(&transport.calls) <= 8);
}
