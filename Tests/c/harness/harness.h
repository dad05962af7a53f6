/*
 * harness.h - what the files of the C harness share. The harness drives the public C API of
 * libsheaf.so against the loopback test server (Tests/server/api_server.py) and checks what the
 * header promises, from a C user's seat. One file per section of behaviour, each test a function
 * named as a sentence of the behaviour it pins; main.c holds the table that runs them in order.
 * helpers.c holds the small helpers, the snapshot recorder, the inspected transport and whatever
 * else two sections use; a helper only one section needs stays static in that section's file.
 *
 * Include it first: with -std=c11, glibc declares the POSIX and Linux calls the harness makes
 * only when _GNU_SOURCE is defined before any system header.
 */
#ifndef SHEAF_HARNESS_H
#define SHEAF_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../blocking_transport.h"
#include "../check.h"
#include "../test_server.h"
#include "sheaf.h"
#include "sheaf/experimental.h"   /* the harness tests both tiers */

/* Set by main.c before the first test. */
extern int g_quick;            /* --quick: smaller lists, no timing-sensitive checks */
extern test_server g_server;   /* most tests */
extern test_server g_other;    /* a second origin, for the cross-origin tests */

/* ---- helpers.c: small helpers -------------------------------------------------------------- */

int list_size(void);
int page_size(void);
long long now_ms(void);
void sleep_ms(long ms);
json_t *parse_array(const char *text, size_t length);
int check_items(const json_t *items, long first, long count, const char *text, const char *file, int line);
/* check_items, reporting the expression and the line of the test that calls it. */
#define CHECK_ITEMS(items, first, count) check_items((items), (first), (count), #items, __FILE__, __LINE__)
sheaf_client *client_for(const test_server *server, const char *token);
void read_body(sheaf_list *list, sheaf_signal signal, const char *pointer);
void set_option(sheaf_client *client, sheaf_option option, int64_t value);

enum anchor_parts {
    PAGE_NUMBER = 1,   /* page=k from 1, per_page=<size> */
    NEXT = 2,          /* /next_page */
    TOTAL = 4,         /* /total */
    IDENTITY = 8,      /* /id */
    ANCHOR_ALL = PAGE_NUMBER | NEXT | TOTAL | IDENTITY
};

sheaf_list *anchor_list(sheaf_client *client, const char *path, int per_page, unsigned parts);
sheaf_list *standard_list(sheaf_client *client, const char *query);
sheaf_result fetch_all(sheaf_list *list, json_t **out_items);
void check_complete_list(sheaf_list *list, int count);
void fresh_server(const test_server *server);
sheaf_list_status status_of(sheaf_list *list);

/* ---- helpers.c: snapshot recorder ---------------------------------------------------------- */

typedef struct recorder {
    atomic_int calls;
    atomic_int inside;        /* snapshot callbacks of this list running right now */
    atomic_int overlaps;      /* callbacks that began while another was running */
    atomic_int closed;        /* set by the test once the list has been freed */
    atomic_int after_close;   /* callbacks that began after that */
    int stop_at;              /* return non-zero from this call on (0: never) */
    int check_prefix;         /* compare sheaf_list_prefix with the deltas so far */
    int first_page_size;      /* > 0: the first snapshot must be exactly page one */
    int64_t expected_items;   /* >= 0: every snapshot's expected_items */
    int try_blocking_calls;   /* call blocking functions from the callback (they must refuse) */
    sheaf_list *other_list;   /* an unstarted list for that */
    sheaf_list *pulled_list;  /* a list started for pulling, for that too */
    json_t *deltas;           /* the concatenation of every delta */
    size_t last_items, last_pages;
    int64_t last_expected_pages;
} recorder;

void recorder_init(recorder *r);
void recorder_free(recorder *r);
void record_delta(recorder *r, sheaf_list *list, const sheaf_snapshot *snapshot, int call);
int record_snapshot(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data);

/* ---- helpers.c: the inspected transport, resume tokens, single requests --------------------- */

void inspected_transport_init(blocking_transport *transport, sheaf_list *reentry_list);
char *resume_token_of(sheaf_list *list);
void resume_to_the_end(sheaf_list *list, const char *token, long first);
json_t *send_and_decode(sheaf_request *request, int expected);
const char *echoed_header(const json_t *echo, const char *name);
int send_simple(sheaf_client *client, const char *path);

/* ---- the tests, by file -------------------------------------------------------------------- */

/* watch.c */
void polls_deliver_each_item_of_a_growing_list_once(void);

/* post_lists.c */
void a_notion_query_pages_with_its_cursor_in_a_post_body(void);
void a_graphql_error_fails_the_list_with_sheaf_e_api(void);
void a_graphql_lists_nested_connections_arrive_whole(void);

/* groups.c */
void a_fan_out_gives_every_childs_items_once_tagged_with_its_parent_value(void);
void an_ordered_group_delivers_list_after_list_in_the_parents_order(void);
void a_parent_item_that_repeats_is_fetched_once_and_one_without_the_value_is_skipped(void);
void a_list_that_fails_leaves_the_others_whole_unless_fail_fast(void);
void the_clients_window_holds_for_every_list_of_a_group(void);
void a_pulled_group_gives_the_same_deltas_on_the_callers_thread(void);
void a_group_stops_when_its_callback_asks_and_misuse_is_refused(void);
void a_group_freed_from_its_callback_or_while_running_destroys_its_user_data_once(void);

/* cache.c */
void a_resync_with_the_cache_pays_only_for_the_pages_that_changed(void);
void the_cache_holds_no_credential_and_refuses_a_folder_it_cannot_trust(void);

/* arrow.c */
void items_become_an_arrow_struct_array_with_a_column_per_field(void);
void a_known_schema_keeps_its_types_and_its_fields_come_first(void);
void a_known_schema_that_lies_about_its_children_is_refused_not_followed(void);
void items_that_do_not_fit_arrow_are_refused_with_the_item_and_field_named(void);
void a_pulled_lists_deltas_read_as_arrow_give_every_item_in_order(void);

/* contract.c */
void versions_agree_and_every_result_has_a_text(void);
void null_handles_and_bad_arguments_are_rejected(void);
void a_careless_caller_gets_a_result_code_never_a_crash(void);
void a_description_is_set_as_the_json_the_library_prints(void);
void description_calls_refuse_what_cannot_run(void);
void a_list_runs_once(void);
void a_list_outlives_its_client(void);

/* lists.c */
void the_whole_list_arrives_in_order(void);
void snapshots_grow_in_order_one_at_a_time(void);
void a_list_that_keeps_no_items_still_streams_every_delta(void);
void every_convention_arrives_whole_detected_and_by_preset(void);
void a_signal_of_more_that_is_not_followed_fails_the_list(void);
void a_drf_style_list_arrives_whole(void);
void a_bare_array_list_arrives_whole(void);
void a_full_page_that_says_nothing_of_more_ends_unconfirmed(void);
void a_server_that_caps_the_page_size_still_gives_the_whole_list(void);
void identity_removes_the_repeated_items(void);
void without_identity_the_repeated_items_are_kept(void);
void max_items_stops_the_list_at_exactly_that_many(void);

/* pulling.c */
void a_pulled_list_arrives_in_order_on_the_callers_thread(void);
void a_delta_says_whether_it_holds_19_digits_in_a_row(void);
void a_group_delta_says_whether_it_holds_19_digits_in_a_row(void);
void a_pulled_list_notifies_an_eventfd_or_a_socket_when_a_snapshot_is_ready(void);
void a_list_started_with_a_callback_cannot_be_pulled(void);
void pulling_says_pending_until_a_snapshot_comes_and_a_cancel_ends_it(void);
void a_pulled_list_nobody_pulls_holds_back_and_frees_promptly(void);
void waiting_on_a_pulled_list_stops_the_pulling(void);

/* windows.c */
void an_adaptive_window_grows_while_the_server_keeps_up(void);
void an_adaptive_window_shrinks_to_what_a_refusing_server_takes(void);
void the_default_window_of_8_is_filled(void);
void a_window_of_4_is_filled_and_not_exceeded(void);
void page_numbers_without_a_total_still_fill_the_window(void);
void a_blocking_transport_still_fills_the_window(void);
void a_list_of_its_own_transport_sends_through_it_alone(void);
void a_list_with_a_transport_of_its_own_shares_the_clients_window(void);

/* user_data.c */
void a_refused_registration_leaves_the_user_data_with_the_caller(void);
void destroy_functions_run_once_when_nothing_needs_the_user_data(void);

/* output.c */
void lists_write_their_items_to_a_function_or_a_file_descriptor(void);

/* resume.c */
void each_budget_ends_ok_with_its_own_stop_reason_and_a_token_that_goes_on(void);
void a_deadline_ends_the_list_in_time_and_its_token_goes_on(void);
void a_bound_ends_a_newest_first_list_ok_before_the_first_item_at_or_below_it(void);
void a_resume_token_of_another_list_or_no_token_is_refused(void);

/* partitions.c */
void the_partitions_of_a_list_together_give_its_items_once_in_order(void);
void the_window_is_shared_among_the_partitions_that_run_at_once(void);
void a_list_that_cannot_be_split_is_one_partition_saying_why(void);
void a_malformed_or_foreign_partition_is_refused_naming_its_field(void);

/* load_more.c */
void load_more_fetches_a_page_per_call_and_joins_calls_in_flight(void);
void load_more_looks_ahead_keeps_budgets_and_refuses_misuse(void);

/* failures.c */
void a_next_link_that_loops_is_refused(void);
void an_endless_list_stops_at_the_page_cap(void);
void a_page_over_the_body_cap_is_refused(void);
void a_page_that_is_not_json_is_a_bad_page_naming_its_url(void);
void a_list_shorter_than_its_total_is_incomplete_but_keeps_its_items(void);
void a_spent_quota_stops_the_list_before_the_server_refuses_it(void);
void a_transient_503_is_retried(void);
void a_persistent_500_fails_after_max_attempts(void);
void a_404_inside_the_promised_pages_is_not_retried(void);
void a_next_link_to_another_origin_is_refused_and_the_token_stays_home(void);

/* stopping.c */
void a_callback_that_returns_non_zero_stops_the_list(void);
void cancel_from_another_thread_ends_the_wait(void);
void freeing_a_running_list_returns_promptly_and_silences_it(void);
void blocking_calls_inside_callbacks_are_refused(void);

/* requests.c */
void requests_send_every_method_path_query_and_body_kind(void);
void a_base_url_is_a_prefix_of_every_path(void);
void request_errors_carry_the_servers_own_fields(void);
void requests_retry_only_what_is_safe_to_repeat(void);
void redirects_turn_a_post_into_a_get_only_where_http_says_so(void);
void a_segment_reaches_the_server_as_one_segment_even_dots(void);
void framing_headers_are_refused_from_every_caller_and_others_go_out(void);
void requests_refuse_what_cannot_be_sent(void);
void a_started_request_calls_back_once_and_frees_its_user_data(void);

/* credentials.c */
void every_credential_kind_goes_only_to_its_origin(void);
void a_credential_provider_is_asked_once_then_once_per_401(void);

/* downloads.c */
void downloads_stream_to_a_file_that_appears_only_when_complete(void);

/* hooks.c */
void flushing_the_hooks_hands_over_every_queued_event(void);
void hooks_log_every_attempt_and_tell_events_without_secrets(void);

#endif
