#include "check.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_long failures;

static void report(const char *file, int line, const char *what) {
    atomic_fetch_add(&failures, 1);
    fprintf(stderr, "    %s:%d: %s\n", file, line, what);
}

int check_that(int ok, const char *expression, const char *file, int line) {
    char text[1024];
    if (!ok) {
        snprintf(text, sizeof text, "check failed: %s", expression);
        report(file, line, text);
    }
    return ok;
}

int check_int(long long actual, long long expected, const char *actual_text, const char *file, int line) {
    char text[1024];
    if (actual == expected) return 1;
    snprintf(text, sizeof text, "check failed: %s is %lld, expected %lld", actual_text, actual, expected);
    report(file, line, text);
    return 0;
}

int check_str(const char *actual, const char *expected, const char *actual_text, const char *file, int line) {
    char text[1024];
    if (actual != NULL && expected != NULL && strcmp(actual, expected) == 0) return 1;
    snprintf(text, sizeof text, "check failed: %s is \"%.300s\", expected \"%.300s\"", actual_text,
             actual ? actual : "(null)", expected ? expected : "(null)");
    report(file, line, text);
    return 0;
}

static int check_result_with(int actual, int expected, const char *message, const char *actual_text,
                             const char *file, int line) {
    char text[1400];
    if (actual == expected) return 1;
    snprintf(text, sizeof text, "check failed: %s is %s (%d), expected %s (%d)%s%.600s%s", actual_text,
             result_name(actual), actual, result_name(expected), expected,
             message ? "; message: \"" : "", message ? message : "", message ? "\"" : "");
    report(file, line, text);
    return 0;
}

int check_result(int actual, int expected, const char *actual_text, const char *file, int line) {
    return check_result_with(actual, expected, NULL, actual_text, file, line);
}

/* The message of the last failing call on this thread, read right after the call it checks. */
static int check_result_with_last_error(int actual, int expected, const char *actual_text, const char *file, int line) {
    sheaf_error *error = sheaf_last_error();
    int ok = check_result_with(actual, expected, error ? error->message : NULL, actual_text, file, line);
    sheaf_error_free(error);
    return ok;
}

int check_list_result(const sheaf_list *list, int actual, int expected, const char *actual_text,
                      const char *file, int line) {
    (void)list;
    if (actual == expected) return 1;
    return check_result_with_last_error(actual, expected, actual_text, file, line);
}

int check_client_result(const sheaf_client *client, int actual, int expected, const char *actual_text,
                        const char *file, int line) {
    (void)client;
    if (actual == expected) return 1;
    return check_result_with_last_error(actual, expected, actual_text, file, line);
}

long check_failures(void) {
    return atomic_load(&failures);
}

const char *result_name(int result) {
    switch (result) {
    case SHEAF_OK: return "SHEAF_OK";
    case SHEAF_LIMIT_REACHED: return "SHEAF_LIMIT_REACHED";
    case SHEAF_E_INVALID_ARGUMENT: return "SHEAF_E_INVALID_ARGUMENT";
    case SHEAF_E_UNSUPPORTED: return "SHEAF_E_UNSUPPORTED";
    case SHEAF_E_STATE: return "SHEAF_E_STATE";
    case SHEAF_E_REENTRANT: return "SHEAF_E_REENTRANT";
    case SHEAF_E_HTTP: return "SHEAF_E_HTTP";
    case SHEAF_E_TRANSPORT: return "SHEAF_E_TRANSPORT";
    case SHEAF_E_BAD_PAGE: return "SHEAF_E_BAD_PAGE";
    case SHEAF_E_INCOMPLETE: return "SHEAF_E_INCOMPLETE";
    case SHEAF_E_LOOP: return "SHEAF_E_LOOP";
    case SHEAF_E_PAGE_LIMIT: return "SHEAF_E_PAGE_LIMIT";
    case SHEAF_E_BODY_TOO_LARGE: return "SHEAF_E_BODY_TOO_LARGE";
    case SHEAF_E_CROSS_ORIGIN: return "SHEAF_E_CROSS_ORIGIN";
    case SHEAF_E_STOPPED: return "SHEAF_E_STOPPED";
    case SHEAF_E_CANCELLED: return "SHEAF_E_CANCELLED";
    case SHEAF_E_INTERNAL: return "SHEAF_E_INTERNAL";
    case SHEAF_PENDING: return "SHEAF_PENDING";
    case SHEAF_E_NOT_FOLLOWED: return "SHEAF_E_NOT_FOLLOWED";
    case SHEAF_E_UNDETECTED: return "SHEAF_E_UNDETECTED";
    case SHEAF_E_REPEATED_PAGE: return "SHEAF_E_REPEATED_PAGE";
    }
    return "?";
}
