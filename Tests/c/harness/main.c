/*
 * main.c - the runner of the C harness of libsheaf.so (sheaf_harness): the table of tests, in the
 * order they run, and main, which starts the loopback test servers (Tests/server/api_server.py)
 * and runs the tests selected. The tests themselves are in this folder, one file per section of
 * behaviour, each declared in harness.h under its file's name.
 *
 * usage: sheaf_harness [--quick] [--list] [NAME-FRAGMENT...]
 *   --quick   a subset on smaller lists, without timing-sensitive checks (for the valgrind run)
 *   --list    print the test names and exit
 *   fragments run only the tests whose name contains one of them
 *
 * Each test is a function named as a sentence of the behaviour it pins. Checks report file:line and
 * the failing expression and never abort; the last line is "N passed, N failed".
 */
#include "harness.h"

#include <signal.h>
#include <unistd.h>

#ifndef SHEAF_SOURCE_DIR
#error "SHEAF_SOURCE_DIR (the repository root) must be defined by the build"
#endif
#ifndef SHEAF_PYTHON3
#define SHEAF_PYTHON3 "python3"
#endif

int g_quick;
test_server g_server;
test_server g_other;

typedef struct test_case {
    const char *name;
    void (*run)(void);
    int in_quick;   /* part of the --quick subset (no timing-sensitive checks there) */
} test_case;

#define TEST(function, quick) { #function, function, quick }
static const test_case tests[] = {
    TEST(requests_send_every_method_path_query_and_body_kind, 1),
    TEST(a_base_url_is_a_prefix_of_every_path, 1),
    TEST(request_errors_carry_the_servers_own_fields, 1),
    TEST(requests_retry_only_what_is_safe_to_repeat, 1),
    TEST(redirects_turn_a_post_into_a_get_only_where_http_says_so, 1),
    TEST(a_segment_reaches_the_server_as_one_segment_even_dots, 1),
    TEST(requests_refuse_what_cannot_be_sent, 1),
    TEST(framing_headers_are_refused_from_every_caller_and_others_go_out, 1),
    TEST(every_credential_kind_goes_only_to_its_origin, 1),
    TEST(a_started_request_calls_back_once_and_frees_its_user_data, 1),
    TEST(downloads_stream_to_a_file_that_appears_only_when_complete, 1),
    TEST(hooks_log_every_attempt_and_tell_events_without_secrets, 1),
    TEST(flushing_the_hooks_hands_over_every_queued_event, 1),
    TEST(a_credential_provider_is_asked_once_then_once_per_401, 1),
    TEST(versions_agree_and_every_result_has_a_text, 1),
    TEST(null_handles_and_bad_arguments_are_rejected, 1),
    TEST(a_careless_caller_gets_a_result_code_never_a_crash, 1),
    TEST(description_calls_refuse_what_cannot_run, 1),
    TEST(a_description_is_set_as_the_json_the_library_prints, 1),
    TEST(the_whole_list_arrives_in_order, 1),
    TEST(snapshots_grow_in_order_one_at_a_time, 1),
    TEST(a_list_that_keeps_no_items_still_streams_every_delta, 1),
    TEST(a_pulled_list_arrives_in_order_on_the_callers_thread, 1),
    TEST(a_delta_says_whether_it_holds_19_digits_in_a_row, 1),
    TEST(a_group_delta_says_whether_it_holds_19_digits_in_a_row, 1),
    TEST(items_become_an_arrow_struct_array_with_a_column_per_field, 1),
    TEST(a_known_schema_keeps_its_types_and_its_fields_come_first, 1),
    TEST(a_known_schema_that_lies_about_its_children_is_refused_not_followed, 1),
    TEST(items_that_do_not_fit_arrow_are_refused_with_the_item_and_field_named, 1),
    TEST(a_pulled_lists_deltas_read_as_arrow_give_every_item_in_order, 1),
    TEST(a_list_started_with_a_callback_cannot_be_pulled, 1),
    TEST(pulling_says_pending_until_a_snapshot_comes_and_a_cancel_ends_it, 1),
    TEST(a_pulled_list_notifies_an_eventfd_or_a_socket_when_a_snapshot_is_ready, 1),
    TEST(a_pulled_list_nobody_pulls_holds_back_and_frees_promptly, 1),
    TEST(waiting_on_a_pulled_list_stops_the_pulling, 1),
    TEST(the_default_window_of_8_is_filled, 0),
    TEST(an_adaptive_window_grows_while_the_server_keeps_up, 0),
    TEST(an_adaptive_window_shrinks_to_what_a_refusing_server_takes, 0),
    TEST(a_window_of_4_is_filled_and_not_exceeded, 0),
    TEST(page_numbers_without_a_total_still_fill_the_window, 0),
    TEST(a_blocking_transport_still_fills_the_window, 1),
    TEST(a_list_of_its_own_transport_sends_through_it_alone, 1),
    TEST(a_list_with_a_transport_of_its_own_shares_the_clients_window, 0),
    TEST(destroy_functions_run_once_when_nothing_needs_the_user_data, 1),
    TEST(a_refused_registration_leaves_the_user_data_with_the_caller, 1),
    TEST(every_convention_arrives_whole_detected_and_by_preset, 0),
    TEST(a_signal_of_more_that_is_not_followed_fails_the_list, 1),
    TEST(a_drf_style_list_arrives_whole, 1),
    TEST(a_bare_array_list_arrives_whole, 1),
    TEST(a_full_page_that_says_nothing_of_more_ends_unconfirmed, 1),
    TEST(a_server_that_caps_the_page_size_still_gives_the_whole_list, 0),
    TEST(identity_removes_the_repeated_items, 1),
    TEST(without_identity_the_repeated_items_are_kept, 0),
    TEST(max_items_stops_the_list_at_exactly_that_many, 1),
    TEST(lists_write_their_items_to_a_function_or_a_file_descriptor, 1),
    TEST(each_budget_ends_ok_with_its_own_stop_reason_and_a_token_that_goes_on, 1),
    TEST(a_deadline_ends_the_list_in_time_and_its_token_goes_on, 1),
    TEST(a_bound_ends_a_newest_first_list_ok_before_the_first_item_at_or_below_it, 1),
    TEST(a_resume_token_of_another_list_or_no_token_is_refused, 1),
    TEST(the_partitions_of_a_list_together_give_its_items_once_in_order, 1),
    TEST(the_window_is_shared_among_the_partitions_that_run_at_once, 1),
    TEST(a_list_that_cannot_be_split_is_one_partition_saying_why, 1),
    TEST(a_malformed_or_foreign_partition_is_refused_naming_its_field, 1),
    TEST(a_fan_out_gives_every_childs_items_once_tagged_with_its_parent_value, 0),
    TEST(an_ordered_group_delivers_list_after_list_in_the_parents_order, 0),
    TEST(a_parent_item_that_repeats_is_fetched_once_and_one_without_the_value_is_skipped, 0),
    TEST(a_list_that_fails_leaves_the_others_whole_unless_fail_fast, 1),
    TEST(the_clients_window_holds_for_every_list_of_a_group, 0),
    TEST(a_pulled_group_gives_the_same_deltas_on_the_callers_thread, 1),
    TEST(a_group_stops_when_its_callback_asks_and_misuse_is_refused, 1),
    TEST(a_group_freed_from_its_callback_or_while_running_destroys_its_user_data_once, 1),
    TEST(load_more_fetches_a_page_per_call_and_joins_calls_in_flight, 1),
    TEST(load_more_looks_ahead_keeps_budgets_and_refuses_misuse, 1),
    TEST(polls_deliver_each_item_of_a_growing_list_once, 1),
    TEST(a_notion_query_pages_with_its_cursor_in_a_post_body, 1),
    TEST(a_graphql_error_fails_the_list_with_sheaf_e_api, 1),
    TEST(a_graphql_lists_nested_connections_arrive_whole, 1),
    TEST(a_list_runs_once, 1),
    TEST(a_list_outlives_its_client, 1),
    TEST(a_next_link_that_loops_is_refused, 1),
    TEST(an_endless_list_stops_at_the_page_cap, 1),
    TEST(a_page_over_the_body_cap_is_refused, 1),
    TEST(a_page_that_is_not_json_is_a_bad_page_naming_its_url, 1),
    TEST(a_list_shorter_than_its_total_is_incomplete_but_keeps_its_items, 0),
    TEST(a_spent_quota_stops_the_list_before_the_server_refuses_it, 1),
    TEST(a_resync_with_the_cache_pays_only_for_the_pages_that_changed, 1),
    TEST(the_cache_holds_no_credential_and_refuses_a_folder_it_cannot_trust, 1),
    TEST(a_transient_503_is_retried, 1),
    TEST(a_persistent_500_fails_after_max_attempts, 1),
    TEST(a_404_inside_the_promised_pages_is_not_retried, 0),
    TEST(a_next_link_to_another_origin_is_refused_and_the_token_stays_home, 1),
    TEST(a_callback_that_returns_non_zero_stops_the_list, 1),
    TEST(cancel_from_another_thread_ends_the_wait, 1),
    TEST(freeing_a_running_list_returns_promptly_and_silences_it, 1),
    TEST(blocking_calls_inside_callbacks_are_refused, 1),
};

static const char *volatile g_running_test = "(none)";

static void on_alarm(int signal_number) {
    (void)signal_number;
    static const char prefix[] = "\nTIMEOUT: the harness was stuck in test ";
    const char *name = g_running_test;
    ssize_t ignored = write(STDERR_FILENO, prefix, sizeof prefix - 1);
    ignored = write(STDERR_FILENO, name, strlen(name));
    ignored = write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    _exit(3);   /* the servers exit on their own when their stdin closes */
}

static int selected(const test_case *test, int argc, char **argv, int first_fragment) {
    if (g_quick && !test->in_quick) return 0;
    if (first_fragment >= argc) return 1;
    for (int i = first_fragment; i < argc; i++)
        if (strstr(test->name, argv[i]) != NULL) return 1;
    return 0;
}

int main(int argc, char **argv) {
    int first_fragment = 1, passed = 0, failed = 0, skipped = 0;
    const size_t count = sizeof tests / sizeof tests[0];
    for (; first_fragment < argc && argv[first_fragment][0] == '-'; first_fragment++) {
        if (strcmp(argv[first_fragment], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[first_fragment], "--list") == 0) {
            for (size_t i = 0; i < count; i++) printf("%s%s\n", tests[i].name, tests[i].in_quick ? " (quick)" : "");
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--quick] [--list] [NAME-FRAGMENT...]\n", argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);

    const char *python = getenv("SHEAF_TEST_PYTHON") ? getenv("SHEAF_TEST_PYTHON") : SHEAF_PYTHON3;
    const char *script = SHEAF_SOURCE_DIR "/Tests/server/api_server.py";
    if (!test_server_start(&g_server, python, script) || !test_server_start(&g_other, python, script)) {
        fprintf(stderr, "cannot start the test server (%s %s)\n", python, script);
        test_server_stop(&g_server);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    printf("test servers at %s and %s%s\n", g_server.base_url, g_other.base_url, g_quick ? " (quick run)" : "");

    for (size_t i = 0; i < count; i++) {
        if (!selected(&tests[i], argc, argv, first_fragment)) {
            skipped++;
            continue;
        }
        long before = check_failures();
        long long started = now_ms();
        g_running_test = tests[i].name;
        alarm(g_quick ? 600 : 180);
        tests[i].run();
        alarm(0);
        long failures = check_failures() - before;
        printf("%s %s (%lld ms)\n", failures ? "FAIL" : "ok  ", tests[i].name, now_ms() - started);
        if (failures) failed++; else passed++;
    }

    test_server_stop(&g_server);
    test_server_stop(&g_other);
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
