#include "blocking_transport.h"

#include <stdlib.h>
#include <string.h>

#include "http_get.h"

void blocking_transport_init(blocking_transport *transport) {
    memset(transport, 0, sizeof *transport);
}

static sheaf_transport_error transport_error_for(http_get_status status) {
    switch (status) {
    case HTTP_GET_TIMEOUT: return SHEAF_TRANSPORT_TIMEOUT;
    case HTTP_GET_CONNECT: return SHEAF_TRANSPORT_CONNECT;
    case HTTP_GET_DNS: return SHEAF_TRANSPORT_DNS;
    case HTTP_GET_TOO_LARGE: return SHEAF_TRANSPORT_TOO_LARGE;
    default: return SHEAF_TRANSPORT_OTHER;
    }
}

/* Counts a sheaf_exchange_* result that should have been SHEAF_OK. */
static void expect_ok(blocking_transport *transport, sheaf_result result) {
    if (result != SHEAF_OK) atomic_fetch_add(&transport->api_errors, 1);
}

void blocking_transport_get(sheaf_exchange *request, void *user_data) {
    blocking_transport *transport = user_data;
    int in_flight = atomic_fetch_add(&transport->in_flight, 1) + 1;
    int seen = atomic_load(&transport->max_in_flight);
    while (in_flight > seen && !atomic_compare_exchange_weak(&transport->max_in_flight, &seen, in_flight)) {}
    int call = atomic_fetch_add(&transport->calls, 1) + 1;
    if (transport->inspect != NULL) transport->inspect(request, call, transport->inspect_data);

    size_t header_count = sheaf_exchange_header_count(request);
    const char **names = calloc(header_count + 1, sizeof *names);
    const char **values = calloc(header_count + 1, sizeof *values);
    if (names == NULL || values == NULL) {
        free(names);
        free(values);
        atomic_fetch_sub(&transport->in_flight, 1);
        expect_ok(transport, sheaf_exchange_fail(request, SHEAF_TRANSPORT_OTHER, "out of memory"));
        return;
    }
    for (size_t i = 0; i < header_count; i++)
        expect_ok(transport, sheaf_exchange_header(request, i, &names[i], &values[i]));

    http_response response;
    char error[512];
    int64_t max_body = sheaf_exchange_max_body_bytes(request);
    size_t body_length = 0;
    const char *body = sheaf_exchange_body(request, &body_length);
    http_get_status status = http_send(sheaf_exchange_method(request), sheaf_exchange_url(request), header_count, names,
                                       values, body, body_length, (long)sheaf_exchange_timeout_ms(request),
                                       max_body > 0 ? (size_t)max_body : 0, &response, error, sizeof error);
    free(names);
    free(values);
    atomic_fetch_sub(&transport->in_flight, 1);
    if (status == HTTP_GET_OK) {
        for (size_t i = 0; i < response.header_count; i++)
            expect_ok(transport, sheaf_exchange_add_response_header(request, response.headers[i].name,
                                                                   response.headers[i].value));
        expect_ok(transport, sheaf_exchange_respond(request, response.status, response.body, response.body_length));
        http_response_free(&response);
    } else {
        expect_ok(transport, sheaf_exchange_fail(request, transport_error_for(status), error));
    }
}
