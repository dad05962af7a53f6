/*
 * check.h - the harness's tiny test vocabulary: CHECK-style assertions that report file:line and
 * the failing expression, count failures (also from library threads), and never abort, so one
 * run reports every broken behaviour.
 */
#ifndef SHEAF_TEST_CHECK_H
#define SHEAF_TEST_CHECK_H

#include <stdint.h>

#include "sheaf.h"

/* Records one check; returns `ok` so a caller can skip what depends on it. Thread-safe. */
int check_that(int ok, const char *expression, const char *file, int line);
int check_int(long long actual, long long expected, const char *actual_text, const char *file, int line);
int check_str(const char *actual, const char *expected, const char *actual_text, const char *file, int line);
/* A result check that names both codes when they differ. */
int check_result(int actual, int expected, const char *actual_text, const char *file, int line);
/* The same, adding the handle's message, read only after the call that made `actual` returned. */
int check_list_result(const sheaf_list *list, int actual, int expected, const char *actual_text,
                      const char *file, int line);
int check_client_result(const sheaf_client *client, int actual, int expected, const char *actual_text,
                        const char *file, int line);

/* Failures recorded since the start of the program. */
long check_failures(void);

/* The enum name of a result code ("SHEAF_E_LOOP"), or "?" for an unknown one. */
const char *result_name(int result);

#define CHECK(expression) check_that((expression) ? 1 : 0, #expression, __FILE__, __LINE__)
#define CHECK_INT(actual, expected) check_int((long long)(actual), (long long)(expected), #actual, __FILE__, __LINE__)
#define CHECK_STR(actual, expected) check_str((actual), (expected), #actual, __FILE__, __LINE__)
#define CHECK_RESULT(actual, expected) check_result((int)(actual), (int)(expected), #actual, __FILE__, __LINE__)
/* Like CHECK_RESULT, printing sheaf_list_errmsg(list) / sheaf_client_errmsg(client) on a mismatch. */
#define CHECK_LIST_RESULT(list, actual, expected) \
    check_list_result((list), (int)(actual), (int)(expected), #actual, __FILE__, __LINE__)
#define CHECK_CLIENT_RESULT(client, actual, expected) \
    check_client_result((client), (int)(actual), (int)(expected), #actual, __FILE__, __LINE__)

#endif
