/*
 * cache.c - the response cache (sheaf_client_set_cache, issue 44): a re-sync that pays only for
 * the pages that changed, against the test server's GitHub-shaped etag= and quota=; a folder that
 * holds no credential; folders and arguments it refuses.
 */
#include "harness.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* Removes the cache folder the tests made (flat: a key and entries). */
static void remove_folder(const char *folder) {
    DIR *directory = opendir(folder);
    if (directory != NULL) {
        struct dirent *entry;
        char path[512];
        while ((entry = readdir(directory)) != NULL) {   /* bounded by the folder */
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
            snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
            unlink(path);
        }
        closedir(directory);
    }
    rmdir(folder);
}

/* A client of the test server with the cache in `folder` and `token`. */
static sheaf_client *cached_client(const char *folder, const char *token) {
    sheaf_client *client = client_for(&g_server, token);
    if (client != NULL) CHECK_RESULT(sheaf_client_set_cache(client, folder, 0), SHEAF_OK);
    return client;
}

/* Runs the list at `path` once with the cache in `folder`; returns its items (caller frees) and
   fills *revalidated from its status. */
static json_t *run_cached(const char *folder, const char *path, int64_t *revalidated, int64_t *quota_left) {
    sheaf_client *client = cached_client(folder, "cache-token");
    json_t *items = NULL;
    if (client == NULL) return NULL;
    sheaf_list *list = anchor_list(client, path, 10, ANCHOR_ALL);
    if (list != NULL) {
        CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
        sheaf_list_status status = status_of(list);
        CHECK_INT(status.version, 2);
        *revalidated = status.requests_revalidated;
        *quota_left = status.quota_remaining;
        CHECK(status.quota_remaining < 0 || status.quota_reset_ms > 0);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
    return items;
}

static long stat_of(const char *name) {
    json_t *stats = test_server_stats(&g_server);
    long value = (long)json_integer_value(json_object_get(stats, name));
    json_decref(stats);
    return value;
}

/* The second run of a list answers every page 304 from the cache (no point of the quota spent,
   the same items); after items on two pages change, exactly those two pages are paid for. */
void a_resync_with_the_cache_pays_only_for_the_pages_that_changed(void) {
    char folder[] = "/tmp/sheaf-harness-cache-XXXXXX";
    if (!CHECK(mkdtemp(folder) != NULL)) return;
    const int count = list_size(), pages = (count + 9) / 10;
    char path[160];
    /* Points for one full run and a few: without the cache, the second run would be refused. */
    snprintf(path, sizeof path, "/anchor?n=%d&etag=1&quota=%d:3600", count, pages + 4);
    fresh_server(&g_server);
    int64_t revalidated = -1, left = -1;
    json_t *first = run_cached(folder, path, &revalidated, &left);
    CHECK_ITEMS(first, 0, count);
    CHECK_INT(revalidated, 0);
    CHECK_INT(stat_of("not_modified"), 0);
    CHECK_INT(left, 4);

    json_t *again = run_cached(folder, path, &revalidated, &left);
    CHECK(json_equal(first, again));
    CHECK_INT(revalidated, pages);
    CHECK_INT(stat_of("not_modified"), pages);
    CHECK_INT(stat_of("refused"), 0);
    CHECK_INT(left, 4);   /* a 304 costs nothing */

    /* Items 3 and 25 (pages 1 and 3) change. */
    json_t *edit = test_server_get_json(&g_server, "/_edit?ids=3,25");
    json_decref(edit);
    json_t *changed = run_cached(folder, path, &revalidated, &left);
    CHECK_INT(json_array_size(changed), count);
    CHECK_INT(revalidated, pages - 2);
    CHECK_INT(left, 2);
    CHECK_INT(stat_of("refused"), 0);
    const char *name = json_string_value(json_object_get(json_array_get(changed, 25), "name"));
    CHECK(name != NULL && strcmp(name, "item-25-edited") == 0);
    name = json_string_value(json_object_get(json_array_get(changed, 24), "name"));
    CHECK(name != NULL && strcmp(name, "item-24") == 0);
    json_decref(first);
    json_decref(again);
    json_decref(changed);
    fresh_server(&g_server);
    remove_folder(folder);
}

/* No file of the folder holds the token; the folder is 0700 and its files 0600. A symbolic link,
   a file, a negative size and a size too small are refused; NULL turns the cache off. */
void the_cache_holds_no_credential_and_refuses_a_folder_it_cannot_trust(void) {
    char folder[] = "/tmp/sheaf-harness-cache-XXXXXX";
    if (!CHECK(mkdtemp(folder) != NULL)) return;
    const char *token = "sekrit-harness-token-0451";
    sheaf_client *client = cached_client(folder, token);
    if (client == NULL) return;
    fresh_server(&g_server);
    sheaf_list *list = anchor_list(client, "/anchor?n=30&etag=1", 10, ANCHOR_ALL);
    json_t *items = NULL;
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    json_decref(items);
    sheaf_list_free(list);

    struct stat status;
    CHECK(stat(folder, &status) == 0 && (status.st_mode & 0777) == 0700);
    DIR *directory = opendir(folder);
    int files = 0;
    if (CHECK(directory != NULL)) {
        struct dirent *entry;
        char path[512], bytes[65536];
        while ((entry = readdir(directory)) != NULL) {   /* bounded by the folder */
            if (entry->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
            CHECK(stat(path, &status) == 0 && (status.st_mode & 0777) == 0600);
            FILE *file = fopen(path, "rb");
            if (!CHECK(file != NULL)) continue;
            size_t length = fread(bytes, 1, sizeof bytes - 1, file);
            fclose(file);
            CHECK(memmem(bytes, length, token, strlen(token)) == NULL);
            CHECK(memmem(bytes, length, "Bearer", 6) == NULL);
            files++;
        }
        closedir(directory);
    }
    CHECK(files >= 4);   /* the key and three pages (and pages asked for ahead past the end, when answered in time) */

    char link_path[600];
    snprintf(link_path, sizeof link_path, "%s-link", folder);
    CHECK(symlink(folder, link_path) == 0);
    CHECK_RESULT(sheaf_client_set_cache(client, link_path, 0), SHEAF_E_INVALID_ARGUMENT);
    unlink(link_path);
    char file_path[600];
    snprintf(file_path, sizeof file_path, "%s/key", folder);
    CHECK_RESULT(sheaf_client_set_cache(client, file_path, 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_cache(client, folder, -1), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_cache(client, folder, 1000), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_cache(client, "", 0), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_client_set_cache(NULL, folder, 0), SHEAF_E_INVALID_ARGUMENT);
    /* Off: nothing more is asked conditionally. */
    CHECK_RESULT(sheaf_client_set_cache(client, NULL, 0), SHEAF_OK);
    fresh_server(&g_server);
    list = anchor_list(client, "/anchor?n=30&etag=1", 10, ANCHOR_ALL);
    CHECK_LIST_RESULT(list, fetch_all(list, &items), SHEAF_OK);
    json_decref(items);
    CHECK_INT(status_of(list).requests_revalidated, 0);
    CHECK_INT(stat_of("not_modified"), 0);
    sheaf_list_free(list);
    sheaf_client_free(client);
    remove_folder(folder);
}
