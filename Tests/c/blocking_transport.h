/*
 * blocking_transport.h - a custom Sheaf transport that blocks: each request is one blocking socket
 * request (http_get.c: its method, headers and body) on the library's thread, then answered. Used by the C harness (the window must
 * still be reached on 2 cores) and by the benchmark driver (P6).
 */
#ifndef SHEAF_TEST_BLOCKING_TRANSPORT_H
#define SHEAF_TEST_BLOCKING_TRANSPORT_H

#include <stdatomic.h>

#include "sheaf.h"

typedef struct blocking_transport {
    atomic_int calls;          /* requests handed to the transport */
    atomic_int in_flight;      /* inside an exchange now */
    atomic_int max_in_flight;  /* the most at once */
    atomic_int api_errors;     /* sheaf_exchange_* calls that did not return SHEAF_OK */
    /* Optional: called with each request (call counts from 1) before the exchange, on the
       library's thread; the harness checks the request accessors there. */
    void (*inspect)(sheaf_exchange *request, int call, void *inspect_data);
    void *inspect_data;
} blocking_transport;

/* Zeroes the counters and clears the hook. */
void blocking_transport_init(blocking_transport *transport);

/* The sheaf_transport_fn; `user_data` is the blocking_transport. */
void blocking_transport_get(sheaf_exchange *request, void *user_data);

#endif
