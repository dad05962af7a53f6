/*
 * groups.c - many lists as one job (sheaf_group_*): a fan-out over the test server's organisation
 * (/orgs/<org>/repos, 300 repositories, each with an issues list of 0 to 12 pages in one of three
 * conventions) gives every child's issues exactly once, tagged, each child once; lists in order
 * when asked; a failing list leaves the others whole; the client's window holds for all of them;
 * pulling gives the same; misuse is refused with the lists left to their caller.
 */
#include "harness.h"

#include <pthread.h>

#define GROUP_LISTS 400

/* What a group's deltas said, per list. */
typedef struct group_record {
    pthread_mutex_t lock;
    atomic_int inside, overlaps;
    size_t deltas;
    int order_broken;               /* a list's delta after its last one, or items that went down */
    int ended_before[GROUP_LISTS];  /* ordered: lists whose last delta came before this list's first */
    size_t items[GROUP_LISTS];
    int finished[GROUP_LISTS];
    sheaf_result result[GROUP_LISTS];
    char *tag[GROUP_LISTS];
    int parent[GROUP_LISTS];        /* the last delta's `parent` (version 2) */
    char *templates[GROUP_LISTS];   /* and its templates_json (copied), NULL for a list of items */
    json_t *ids;                    /* every item's id, by list: {"<list>": [ids]} */
    size_t last_list;               /* the list of the last delta */
    int out_of_turn;                /* ordered: a delta of a list before one already seen */
    int stop_after;                 /* return non-zero at this delta (0: never) */
} group_record;

static void group_record_init(group_record *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->ids = json_object();
}

static void group_record_free(group_record *r) {
    for (int k = 0; k < GROUP_LISTS; k++) free(r->tag[k]), free(r->templates[k]);
    json_decref(r->ids);
    pthread_mutex_destroy(&r->lock);
}

static void record_group_delta(group_record *r, const sheaf_group_delta *delta) {
    pthread_mutex_lock(&r->lock);
    r->deltas++;
    size_t k = delta->list;
    if (k >= GROUP_LISTS || delta->version != SHEAF_GROUP_DELTA_VERSION) {
        r->order_broken++;
        pthread_mutex_unlock(&r->lock);
        return;
    }
    if (r->finished[k]) r->order_broken++;
    if (r->tag[k] == NULL) r->tag[k] = strdup(delta->tag);
    else if (strcmp(r->tag[k], delta->tag) != 0) r->order_broken++;
    /* Ordered: a child's delta never comes after a later child's (the parent, 0, takes no turn). */
    if (k > 0 && k < r->last_list) r->out_of_turn++;
    if (k > 0) r->last_list = k;
    json_t *items = parse_array(delta->delta_json, delta->delta_length);
    if (items == NULL || json_array_size(items) != delta->delta_items) r->order_broken++;
    char key[32];
    snprintf(key, sizeof key, "%zu", k);
    json_t *ids = json_object_get(r->ids, key);
    if (ids == NULL) {
        ids = json_array();
        json_object_set_new(r->ids, key, ids);
    }
    for (size_t i = 0; items != NULL && i < json_array_size(items); i++)
        json_array_append(ids, json_object_get(json_array_get(items, i), "id"));
    json_decref(items);
    r->items[k] += delta->delta_items;
    if (delta->finished) {
        r->finished[k] = 1;
        r->result[k] = delta->result;
        r->parent[k] = delta->parent;   /* the version was checked above */
        free(r->templates[k]);
        r->templates[k] = delta->templates_json ? strdup(delta->templates_json) : NULL;
        if (delta->delta_items != 0) r->order_broken++;
    } else if (delta->items != r->items[k]) {
        r->order_broken++;
    }
    pthread_mutex_unlock(&r->lock);
}

static int on_group_delta(sheaf_group *group, const sheaf_group_delta *delta, void *user_data) {
    (void)group;
    group_record *r = user_data;
    if (atomic_fetch_add(&r->inside, 1) != 0) atomic_fetch_add(&r->overlaps, 1);
    record_group_delta(r, delta);
    atomic_fetch_sub(&r->inside, 1);
    return r->stop_after > 0 && (int)r->deltas >= r->stop_after;
}

/* The org's issues by repository full name, from the server's own account: {"org/repo-000": n}. */
static json_t *issues_by_repository(const char *org) {
    char path[128];
    snprintf(path, sizeof path, "/_orgs/%s/issues?repos=300", org);
    json_t *answer = test_server_get_json(&g_server, path), *counts = json_object();
    json_t *issues = json_object_get(answer, "issues");
    for (size_t i = 0; i < json_array_size(issues); i++) {
        const char *repository = json_string_value(json_object_get(json_array_get(issues, i), "repository"));
        if (repository == NULL) continue;
        json_int_t n = json_integer_value(json_object_get(counts, repository));
        json_object_set_new(counts, repository, json_integer(n + 1));
    }
    json_decref(answer);
    return counts;
}

/* A group on a fresh client whose parent is the org's repository list (with `query`), and whose
   children are /repos/{/full_name}/issues, run with a callback into `r`; returns the group's
   result. *out_group stays for the caller to inspect and free. */
static sheaf_result run_fan_out(sheaf_client *client, const char *org, const char *query, int ordered,
                                int missing_fails, group_record *r, sheaf_group **out_group) {
    sheaf_group *group = NULL;
    sheaf_list *parent = NULL, *child = NULL;
    char path[160];
    snprintf(path, sizeof path, "/orgs/%s/repos%s", org, query);
    *out_group = NULL;
    if (!CHECK_CLIENT_RESULT(client, sheaf_group_new(&group, client), SHEAF_OK)) return SHEAF_E_INTERNAL;
    *out_group = group;
    CHECK_INT(sheaf_group_set_option(group, SHEAF_GROUP_ORDERED, ordered), SHEAF_OK);
    CHECK_INT(sheaf_group_set_option(group, SHEAF_GROUP_MISSING_FAILS, missing_fails), SHEAF_OK);
    CHECK_INT(sheaf_list_new(&parent, client, path), SHEAF_OK);
    CHECK_INT(sheaf_list_new(&child, client, "/ignored"), SHEAF_OK);
    CHECK_INT(sheaf_list_set_keep_items(child, 0), SHEAF_OK);
    const char *templates[] = {"/repos/{/full_name}/issues"};
    size_t index = 99;
    if (!CHECK_INT(sheaf_group_add_each(group, parent, templates, 1, child, &index), SHEAF_OK)) {
        sheaf_list_free(parent);
        sheaf_list_free(child);
        return SHEAF_E_INTERNAL;
    }
    CHECK_INT(index, 0);
    CHECK_INT(sheaf_group_start(group, on_group_delta, r, NULL), SHEAF_OK);
    return sheaf_group_wait(group);
}

/* Every child of the org was fetched once, whole, tagged with its repository's full name. */
static void check_children(group_record *r, sheaf_group *group, const char *org, size_t expected_children) {
    json_t *expected = issues_by_repository(org);
    CHECK_INT(sheaf_group_count(group), expected_children + 1);
    CHECK_INT(r->finished[0], 1);                 /* the parent's last delta, and no items of it */
    CHECK_INT(r->items[0], 0);
    CHECK_INT(r->parent[0], 1);                   /* a parent, and the templates its items fill */
    CHECK(r->templates[0] != NULL && strcmp(r->templates[0], "[\"/repos/{/full_name}/issues\"]") == 0);
    CHECK_INT(r->order_broken, 0);
    CHECK_INT(atomic_load(&r->overlaps), 0);
    size_t children = 0, issues = 0;
    for (size_t k = 1; k < GROUP_LISTS && k <= expected_children; k++) {
        if (!CHECK(r->finished[k] && r->tag[k] != NULL)) continue;
        children++;
        CHECK_INT(r->result[k], SHEAF_OK);
        CHECK_INT(r->parent[k], 0);
        CHECK(r->templates[k] == NULL);
        /* The tag is the repository's full name; the list's status agrees with the deltas. */
        json_int_t n = json_integer_value(json_object_get(expected, r->tag[k]));
        if (!CHECK_INT((json_int_t)r->items[k], n)) fprintf(stderr, "    child %zu (%s)\n", k, r->tag[k]);
        sheaf_list *list = sheaf_group_list(group, k);
        if (CHECK(list != NULL)) {
            sheaf_list_status status = status_of(list);
            CHECK_INT(status.state, SHEAF_LIST_ENDED);
            CHECK_INT(status.items, (int64_t)r->items[k]);
            /* The URL its template made: the repository's issues on the parent's origin. */
            char *url = NULL, expected_url[256];
            snprintf(expected_url, sizeof expected_url, "%s/repos/%s/issues", g_server.base_url, r->tag[k]);
            if (CHECK_LIST_RESULT(list, sheaf_list_url(list, &url), SHEAF_OK)) CHECK_STR(url, expected_url);
            sheaf_free(url);
        }
        issues += r->items[k];
    }
    CHECK_INT(children, expected_children);
    /* Each issue once across the whole job (ids are unique across the org). */
    json_t *seen = json_object();
    const char *key;
    json_t *ids;
    json_object_foreach(r->ids, key, ids) {
        for (size_t i = 0; i < json_array_size(ids); i++) {
            char id[32];
            snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_array_get(ids, i)));
            CHECK(json_object_get(seen, id) == NULL);
            json_object_set_new(seen, id, json_true());
        }
    }
    CHECK_INT(json_object_size(seen), issues);
    json_decref(seen);
    CHECK(sheaf_group_list(group, expected_children + 1) == NULL);
    json_decref(expected);
}

void a_fan_out_gives_every_childs_items_once_tagged_with_its_parent_value(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    group_record r;
    group_record_init(&r);
    sheaf_group *group = NULL;
    /* Page one of the parent is 30 repositories; 10 pages in all. */
    CHECK_INT(run_fan_out(client, "acme", "", 0, 0, &r, &group), SHEAF_OK);
    check_children(&r, group, "acme", 300);
    CHECK(sheaf_group_error(group) == NULL);
    sheaf_group_free(group);
    group_record_free(&r);
    sheaf_client_free(client);
}

void an_ordered_group_delivers_list_after_list_in_the_parents_order(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    group_record r;
    group_record_init(&r);
    sheaf_group *group = NULL;
    CHECK_INT(run_fan_out(client, "ordered", "?repos=100", 1, 0, &r, &group), SHEAF_OK);
    check_children(&r, group, "ordered", 100);
    CHECK_INT(r.out_of_turn, 0);
    /* The children came in the parent's order: repo-000, repo-001, ... */
    for (int k = 1; k <= 100; k++) {
        char expected[64];
        snprintf(expected, sizeof expected, "ordered/repo-%03d", k - 1);
        if (r.tag[k] != NULL && !CHECK(strcmp(r.tag[k], expected) == 0)) break;
    }
    sheaf_group_free(group);
    group_record_free(&r);
    sheaf_client_free(client);
}

void a_parent_item_that_repeats_is_fetched_once_and_one_without_the_value_is_skipped(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    group_record r;
    group_record_init(&r);
    sheaf_group *group = NULL;
    /* repeat=1: every parent page after the first starts with the last repository of the one
       before; missing=10: repositories 9, 19, ... have no full_name (10 of 100). */
    CHECK_INT(run_fan_out(client, "skips", "?repos=100&repeat=1&missing=10", 0, 0, &r, &group), SHEAF_OK);
    CHECK_INT(sheaf_group_count(group), 91);
    for (size_t k = 1; k <= 90; k++) {
        CHECK(r.finished[k] && r.result[k] == SHEAF_OK);
        CHECK(r.tag[k] != NULL && r.tag[k][strlen(r.tag[k]) - 1] != '9');   /* repo-009, -019, ... were skipped */
    }
    sheaf_group_free(group);
    group_record_free(&r);
    /* The same with SHEAF_GROUP_MISSING_FAILS: the parent fails naming the pointer, the children
       it made before end whole, and the group ends SHEAF_E_PARTIAL. */
    group_record_init(&r);
    CHECK_INT(run_fan_out(client, "skips", "?repos=100&missing=10", 0, 1, &r, &group), SHEAF_E_PARTIAL);
    CHECK_INT(r.result[0], SHEAF_E_BAD_PAGE);
    sheaf_error *error = sheaf_list_error(sheaf_group_list(group, 0));
    if (CHECK(error != NULL)) {
        CHECK(strstr(error->message, "/full_name") != NULL);
        sheaf_error_free(error);
    }
    error = sheaf_group_error(group);
    if (CHECK(error != NULL)) {
        CHECK_INT(error->code, SHEAF_E_PARTIAL);
        CHECK(strstr(error->message, "1 of") != NULL);
        sheaf_error_free(error);
    }
    for (size_t k = 1; k < sheaf_group_count(group); k++) CHECK(r.finished[k] && r.result[k] == SHEAF_OK);
    sheaf_group_free(group);
    group_record_free(&r);
    sheaf_client_free(client);
}

/* A group of the lists at `paths`, each tagged with its path, run to its end with a callback. */
static sheaf_result run_lists(sheaf_client *client, const char *const *paths, size_t n, int fail_fast,
                              group_record *r, sheaf_group **out_group) {
    sheaf_group *group = NULL;
    *out_group = NULL;
    if (!CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK)) return SHEAF_E_INTERNAL;
    *out_group = group;
    CHECK_INT(sheaf_group_set_option(group, SHEAF_GROUP_FAIL_FAST, fail_fast), SHEAF_OK);
    for (size_t k = 0; k < n; k++) {
        sheaf_list *list = NULL;
        CHECK_INT(sheaf_list_new(&list, client, paths[k]), SHEAF_OK);
        size_t index = 99;
        CHECK_INT(sheaf_group_add(group, list, NULL, &index), SHEAF_OK);
        CHECK_INT(index, k);
    }
    CHECK_INT(sheaf_group_start(group, on_group_delta, r, NULL), SHEAF_OK);
    return sheaf_group_wait(group);
}

void a_list_that_fails_leaves_the_others_whole_unless_fail_fast(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);
    const char *paths[] = {
        "/repos/fails/repo-001/issues",
        "/repos/fails/no-such-repo/issues",     /* 404 */
        "/anchor?n=95&per_page=10&fail=3:99:500",            /* page 3 answers 500 every time: fails after retries */
        "/repos/fails/repo-004/issues",
    };
    group_record r;
    group_record_init(&r);
    sheaf_group *group = NULL;
    json_t *expected = issues_by_repository("fails");
    CHECK_INT(run_lists(client, paths, 4, 0, &r, &group), SHEAF_E_PARTIAL);
    CHECK_INT(r.result[0], SHEAF_OK);
    CHECK_INT(r.result[1], SHEAF_E_HTTP);
    CHECK_INT(r.result[2], SHEAF_E_HTTP);
    CHECK_INT(r.result[3], SHEAF_OK);
    CHECK_INT((json_int_t)r.items[0], json_integer_value(json_object_get(expected, "fails/repo-001")));
    CHECK_INT((json_int_t)r.items[3], json_integer_value(json_object_get(expected, "fails/repo-004")));
    CHECK(strcmp(r.tag[1] ? r.tag[1] : "", paths[1]) == 0);
    sheaf_error *error = sheaf_group_error(group);
    if (CHECK(error != NULL)) {
        CHECK_INT(error->code, SHEAF_E_PARTIAL);
        CHECK(strstr(error->message, "2 of 4 lists failed") != NULL);
        sheaf_error_free(error);
    }
    /* The failed list says why, and its resume token goes on from where it stopped. */
    error = sheaf_list_error(sheaf_group_list(group, 2));
    if (CHECK(error != NULL)) {
        CHECK_INT(error->http_status, 500);
        sheaf_error_free(error);
    }
    char *token = NULL;
    CHECK_INT(sheaf_list_resume_token(sheaf_group_list(group, 2), &token), SHEAF_OK);
    CHECK(token != NULL);
    sheaf_free(token);
    sheaf_group_free(group);
    group_record_free(&r);

    /* Fail fast: the first failure cancels the rest; the group ends with its code. */
    group_record_init(&r);
    const char *slow[] = {"/anchor?n=400&latency_ms=30", "/repos/fails/no-such-repo/issues", "/anchor?n=400&latency_ms=30"};
    CHECK_INT(run_lists(client, slow, 3, 1, &r, &group), SHEAF_E_HTTP);
    CHECK_INT(r.result[1], SHEAF_E_HTTP);
    CHECK_INT(r.result[0], SHEAF_E_CANCELLED);
    CHECK_INT(r.result[2], SHEAF_E_CANCELLED);
    sheaf_group_free(group);
    group_record_free(&r);
    json_decref(expected);
    sheaf_client_free(client);
}

void the_clients_window_holds_for_every_list_of_a_group(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    /* A window of 4 for the origin: 300 children started together send at most 4 at once. */
    set_option(client, SHEAF_OPT_WINDOW, 4);
    set_option(client, SHEAF_OPT_ADAPTIVE_WINDOW, 0);
    fresh_server(&g_server);
    group_record r;
    group_record_init(&r);
    sheaf_group *group = NULL;
    CHECK_INT(run_fan_out(client, "budget", "", 0, 0, &r, &group), SHEAF_OK);
    json_t *stats = test_server_stats(&g_server);
    long long most = stats_max_in_flight(stats);
    if (!CHECK(most >= 1 && most <= 4)) fprintf(stderr, "    the server had %lld requests in flight at once\n", most);
    json_decref(stats);
    check_children(&r, group, "budget", 300);
    sheaf_group_free(group);
    group_record_free(&r);
    sheaf_client_free(client);
}

void a_pulled_group_gives_the_same_deltas_on_the_callers_thread(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_group *group = NULL;
    sheaf_list *parent = NULL;
    CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK);
    CHECK_INT(sheaf_list_new(&parent, client, "/orgs/pulled/repos?repos=40"), SHEAF_OK);
    const char *templates[] = {"/repos/{/full_name}/issues"};
    CHECK_INT(sheaf_group_add_each(group, parent, templates, 1, NULL, NULL), SHEAF_OK);
    const sheaf_group_delta *delta = NULL;
    CHECK_INT(sheaf_group_next(group, 0, &delta), SHEAF_E_STATE);   /* not started for pulling */
    CHECK_INT(sheaf_group_start_pull(group), SHEAF_OK);
    CHECK_INT(sheaf_group_start_pull(group), SHEAF_E_STATE);
    group_record r;
    group_record_init(&r);
    size_t guard = 0;
    for (; guard < 100000; guard++) {
        sheaf_result result = sheaf_group_next(group, -1, &delta);
        if (!CHECK_INT(result, SHEAF_OK) || delta == NULL) break;
        record_group_delta(&r, delta);
    }
    CHECK_INT(sheaf_group_wait(group), SHEAF_OK);
    CHECK_INT(sheaf_group_count(group), 41);
    CHECK_INT(r.order_broken, 0);
    size_t issues = 0, finished = 0;
    for (size_t k = 0; k <= 40; k++) {
        finished += (size_t)r.finished[k];
        issues += r.items[k];
        CHECK_INT(r.result[k], SHEAF_OK);
    }
    CHECK_INT(finished, 41);
    json_t *answer = test_server_get_json(&g_server, "/_orgs/pulled/issues?repos=40");
    CHECK_INT((json_int_t)issues, json_integer_value(json_object_get(answer, "count")));
    json_decref(answer);
    /* A child's list keeps its items (the default): its prefix is what its deltas gave. */
    for (size_t k = 1; k <= 40; k++) {
        char *json = NULL;
        CHECK_INT(sheaf_list_prefix(sheaf_group_list(group, k), &json, NULL), SHEAF_OK);
        json_t *items = parse_array(json, json ? strlen(json) : 0);
        CHECK_INT(items ? json_array_size(items) : 0, r.items[k]);
        json_decref(items);
        sheaf_free(json);
    }
    sheaf_group_free(group);
    group_record_free(&r);
    sheaf_client_free(client);
}

void a_group_stops_when_its_callback_asks_and_misuse_is_refused(void) {
    sheaf_client *client = client_for(&g_server, NULL), *other = client_for(&g_server, NULL);
    sheaf_group *group = NULL;
    group_record r;
    group_record_init(&r);
    r.stop_after = 3;
    CHECK_INT(run_fan_out(client, "stops", "", 0, 0, &r, &group), SHEAF_E_STOPPED);
    CHECK_INT(r.deltas, 3);
    sheaf_group_free(group);
    group_record_free(&r);

    /* Misuse: the lists stay the caller's whenever a call is refused. */
    CHECK_INT(sheaf_group_new(NULL, client), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_new(&group, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK);
    sheaf_list *list = NULL, *foreign = NULL;
    CHECK_INT(sheaf_list_new(&list, client, "/anchor?n=5"), SHEAF_OK);
    CHECK_INT(sheaf_list_new(&foreign, other, "/anchor?n=5"), SHEAF_OK);
    CHECK_INT(sheaf_group_add(group, foreign, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_add(NULL, list, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_add(group, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    const char *bad[] = {"/repos/{/full_name/issues"}, *none[] = {NULL};
    CHECK_INT(sheaf_group_add_each(group, list, bad, 1, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_add_each(group, list, none, 1, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_add_each(group, list, bad, 0, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    sheaf_error *error = sheaf_group_error(group);
    CHECK(error != NULL);
    sheaf_error_free(error);
    CHECK_INT(sheaf_group_set_option(group, (sheaf_group_option)99, 1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_set_option(group, SHEAF_GROUP_ORDERED, 2), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_wait(group), SHEAF_E_STATE);                 /* not started */
    CHECK_INT(sheaf_group_add(group, list, "five", NULL), SHEAF_OK);    /* the group has it now */
    CHECK_INT(sheaf_list_start(sheaf_group_list(group, 0), NULL, NULL, NULL), SHEAF_E_STATE);
    CHECK_INT(sheaf_group_start(group, NULL, NULL, NULL), SHEAF_OK);
    CHECK_INT(sheaf_group_start(group, NULL, NULL, NULL), SHEAF_E_STATE);
    CHECK_INT(sheaf_group_set_option(group, SHEAF_GROUP_ORDERED, 1), SHEAF_E_STATE);
    sheaf_list *late = NULL;
    CHECK_INT(sheaf_list_new(&late, client, "/anchor?n=5"), SHEAF_OK);
    CHECK_INT(sheaf_group_add(group, late, NULL, NULL), SHEAF_E_STATE);
    CHECK_INT(sheaf_group_wait(group), SHEAF_OK);
    CHECK_INT(status_of(sheaf_group_list(group, 0)).items, 5);
    sheaf_group_free(group);
    sheaf_list_free(late);
    sheaf_list_free(foreign);
    /* A group of no lists ends at once; a freed running group cancels its lists. */
    CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK);
    CHECK_INT(sheaf_group_start(group, NULL, NULL, NULL), SHEAF_OK);
    CHECK_INT(sheaf_group_wait(group), SHEAF_OK);
    sheaf_group_free(group);
    group_record_init(&r);
    CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK);
    CHECK_INT(sheaf_list_new(&list, client, "/anchor?n=2000&latency_ms=50"), SHEAF_OK);
    CHECK_INT(sheaf_group_add(group, list, NULL, NULL), SHEAF_OK);
    CHECK_INT(sheaf_group_start(group, on_group_delta, &r, NULL), SHEAF_OK);
    sheaf_group_free(group);
    group_record_free(&r);
    CHECK_INT(sheaf_group_count(NULL), 0);
    CHECK(sheaf_group_list(NULL, 0) == NULL);
    sheaf_group_free(NULL);
    sheaf_client_free(other);
    sheaf_client_free(client);
}

/* The group's own callback frees it (the header allows it): nothing traps, and no delta comes
   after (issue 47). */
typedef struct {
    atomic_int deltas;
    atomic_int destroyed;
} freeing_record;

static int free_from_inside(sheaf_group *group, const sheaf_group_delta *delta, void *user_data) {
    (void)delta;
    freeing_record *r = user_data;
    if (atomic_fetch_add(&r->deltas, 1) + 1 == 2) sheaf_group_free(group);
    return 0;
}

static int count_deltas(sheaf_group *group, const sheaf_group_delta *delta, void *user_data) {
    (void)group, (void)delta;
    atomic_fetch_add(&((freeing_record *)user_data)->deltas, 1);
    return 0;
}

static void note_destroyed(void *user_data) { atomic_fetch_add(&((freeing_record *)user_data)->destroyed, 1); }

void a_group_freed_from_its_callback_or_while_running_destroys_its_user_data_once(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    if (client == NULL) return;
    sheaf_group *group = NULL;
    freeing_record inside = {0, 0};
    CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK);
    for (int k = 0; k < 3; k++) {
        sheaf_list *list = NULL;
        CHECK_INT(sheaf_list_new(&list, client, "/anchor?n=200&per_page=10&latency_ms=5"), SHEAF_OK);
        CHECK_INT(sheaf_group_add(group, list, NULL, NULL), SHEAF_OK);
    }
    CHECK_INT(sheaf_group_start(group, free_from_inside, &inside, note_destroyed), SHEAF_OK);
    for (int waited = 0; atomic_load(&inside.destroyed) == 0 && waited < 10000; waited += 10) sleep_ms(10);
    CHECK_INT(atomic_load(&inside.destroyed), 1);
    CHECK_INT(atomic_load(&inside.deltas), 2);

    /* Freed from outside while its lists run: destroy(user_data) has run when free returns. */
    freeing_record outside = {0, 0};
    CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK);
    sheaf_list *slow = NULL;
    CHECK_INT(sheaf_list_new(&slow, client, "/anchor?n=2000&per_page=10&latency_ms=50"), SHEAF_OK);
    CHECK_INT(sheaf_group_add(group, slow, NULL, NULL), SHEAF_OK);
    CHECK_INT(sheaf_group_start(group, count_deltas, &outside, note_destroyed), SHEAF_OK);
    sleep_ms(30);
    sheaf_group_free(group);
    CHECK_INT(atomic_load(&outside.destroyed), 1);
    sleep_ms(200);
    CHECK_INT(atomic_load(&outside.destroyed), 1);

    /* One list as both the parent and the child of a fan-out is refused; it stays the caller's. */
    CHECK_INT(sheaf_group_new(&group, client), SHEAF_OK);
    sheaf_list *both = NULL;
    CHECK_INT(sheaf_list_new(&both, client, "/orgs/acme/repos"), SHEAF_OK);
    const char *templates[] = {"/repos/{/full_name}/issues"};
    CHECK_INT(sheaf_group_add_each(group, both, templates, 1, both, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_INT(sheaf_group_count(group), 0);
    sheaf_group_free(group);
    sheaf_list_free(both);
    sheaf_client_free(client);
}
