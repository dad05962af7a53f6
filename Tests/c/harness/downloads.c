/*
 * downloads.c - downloads (sheaf_request_set_output_file): streamed to a file that appears
 * only when complete, resumed after a cut, and failures that leave the old file as it was.
 */
#include "harness.h"

#include <unistd.h>

/* Whether the file at `path` holds exactly `size` bytes of the server's pattern (byte i = i % 251). */
static int holds_pattern(const char *path, long size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return 0;
    long i = 0;
    int c, ok = 1;
    while ((c = fgetc(file)) != EOF) {   /* bounded by the file */
        if (c != (int)(i % 251)) ok = 0;
        i++;
    }
    fclose(file);
    return ok && i == size;
}

static int file_exists(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file) fclose(file);
    return file != NULL;
}

static void write_text(const char *path, const char *text) {
    FILE *file = fopen(path, "wb");
    if (CHECK(file != NULL)) {
        fputs(text, file);
        fclose(file);
    }
}

/* Downloads `path` of the server into `destination`; returns the result. */
static int download(sheaf_client *client, const char *path, const char *destination, int64_t *done, int64_t *expected) {
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", path), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_output_file(request, destination), SHEAF_OK);
    int result = sheaf_request_send(request);
    if (done) CHECK_RESULT(sheaf_request_progress(request, done, expected), SHEAF_OK);
    if (result == SHEAF_OK) {
        size_t length = 99;
        CHECK(sheaf_request_body(request, &length) != NULL && length == 0);   /* the body is in the file */
    }
    sheaf_request_free(request);
    return result;
}

void downloads_stream_to_a_file_that_appears_only_when_complete(void) {
    char folder[] = "/tmp/sheaf-download-XXXXXX";
    if (!CHECK(mkdtemp(folder) != NULL)) return;
    char destination[256], part[272], path[160];
    snprintf(destination, sizeof destination, "%s/a/b/file.bin", folder);   /* folders created */
    snprintf(part, sizeof part, "%s.part", destination);
    sheaf_client *client = client_for(&g_server, NULL);
    set_option(client, SHEAF_OPT_RETRY_BASE_MS, 1);

    int64_t done = -2, expected = -2;
    CHECK_RESULT(download(client, "/req/download?size=1000000", destination, &done, &expected), SHEAF_OK);
    CHECK(holds_pattern(destination, 1000000));
    CHECK_INT(done, 1000000);
    CHECK_INT(expected, 1000000);
    CHECK(!file_exists(part));

    /* A transfer cut after 300,000 bytes resumes with Range (the server sends an ETag), or
       starts again without a validator; either way the file is whole. */
    static const struct { const char *options; long long bytes_sent; } variants[] = {
        { "", 700000 },                  /* resumed: 300,000 + the other 400,000 */
        { "&etag=0", 1000000 },          /* no validator: 300,000 + 700,000 again */
        { "&ranges=0", 1000000 },        /* Range ignored: a 200 with the whole body */
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "cut-%zu-%lld", i, now_ms());
        snprintf(path, sizeof path, "/req/download?size=700000&cut=300000&key=%s%s", key, variants[i].options);
        CHECK_RESULT(download(client, path, destination, &done, NULL), SHEAF_OK);
        CHECK(holds_pattern(destination, 700000));
        CHECK_INT(done, 700000);
        snprintf(path, sizeof path, "/req/download-stats?key=%s", key);
        json_t *stats = test_server_get_json(&g_server, path);
        CHECK_INT(json_integer_value(json_object_get(stats, "requests")), 2);
        CHECK_INT(json_integer_value(json_object_get(stats, "bytes")), variants[i].bytes_sent);
        json_decref(stats);
    }

    /* Failures leave the old file as it was, and no part file. */
    write_text(destination, "old");
    CHECK_RESULT(download(client, "/req/error/drf", destination, NULL, NULL), SHEAF_E_HTTP);
    set_option(client, SHEAF_OPT_MAX_ATTEMPTS, 2);
    CHECK_RESULT(download(client, "/req/download?size=5000&lie=100", destination, NULL, NULL), SHEAF_E_TRANSPORT);
    FILE *file = fopen(destination, "rb");
    char text[8] = { 0 };
    if (CHECK(file != NULL)) {
        CHECK(fread(text, 1, sizeof text - 1, file) == 3);
        fclose(file);
    }
    CHECK_STR(text, "old");
    CHECK(!file_exists(part));

    /* A directory, or a folder that cannot exist, is refused with a clear code. */
    CHECK_RESULT(download(client, "/req/download?size=10", folder, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(download(client, "/req/download?size=10", "/proc/version/sub/file", NULL, NULL), SHEAF_E_IO);
    sheaf_request *request = NULL;
    CHECK_RESULT(sheaf_request_new(&request, client, "GET", "/req/download?size=10"), SHEAF_OK);
    CHECK_RESULT(sheaf_request_set_output_file(request, ""), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_request_progress(request, NULL, NULL), SHEAF_OK);
    sheaf_request_free(request);
    sheaf_client_free(client);

    unlink(destination);
    snprintf(path, sizeof path, "%s/a/b", folder);
    rmdir(path);
    snprintf(path, sizeof path, "%s/a", folder);
    rmdir(path);
    rmdir(folder);
}
