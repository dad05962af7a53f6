// The C side of the hooks and of the token provider: the library calls these functions, which pass
// the record, event or credential reply and the runtime/cgo.Handle given as user_data on to the Go
// functions hooks.go exports. C keeps no Go pointer: user_data is the handle's integer, deleted in
// the destroy callback.
#include <stdint.h>
#include <sheaf.h>
#include "_cgo_export.h"

static void sheafgo_log(const sheaf_log_record *record, void *user_data) {
    sheafgoLog((sheaf_log_record *)record, (uintptr_t)user_data);
}

static void sheafgo_event(const sheaf_event *event, void *user_data) {
    sheafgoEvent((sheaf_event *)event, (uintptr_t)user_data);
}

static void sheafgo_destroy(void *user_data) {
    sheafgoDestroy((uintptr_t)user_data);
}

sheaf_result sheafgo_set_log(sheaf_client *client, sheaf_log_level level, uintptr_t handle) {
    return sheaf_client_set_log(client, level, sheafgo_log, (void *)handle, sheafgo_destroy);
}

sheaf_result sheafgo_set_event_handler(sheaf_client *client, uintptr_t handle) {
    return sheaf_client_set_event_handler(client, sheafgo_event, (void *)handle, sheafgo_destroy);
}

static void sheafgo_credential(sheaf_credential_reply *reply, void *user_data) {
    sheafgoCredential(reply, (uintptr_t)user_data);
}

sheaf_result sheafgo_set_token_provider(sheaf_client *client, uintptr_t handle) {
    return sheaf_client_set_credential_provider(client, SHEAF_AUTH_BEARER, NULL, sheafgo_credential, (void *)handle,
                                                sheafgo_destroy);
}
