/*
 * arrow.c - sheaf_arrow_from_json: a delta's items as an Arrow struct array (the Arrow C data
 * interface), read here field by field from the buffers, as any Arrow consumer reads them.
 */
#include "harness.h"

/* The child of `schema` named `name` (its index in *out_index), or NULL. */
static struct ArrowSchema *child_named(const struct ArrowSchema *schema, const char *name, int64_t *out_index) {
    for (int64_t index = 0; index < schema->n_children; index++) {
        if (strcmp(schema->children[index]->name, name) == 0) {
            *out_index = index;
            return schema->children[index];
        }
    }
    return NULL;
}

static int is_valid(const struct ArrowArray *array, int64_t row) {
    const uint8_t *validity = array->buffers[0];
    return validity == NULL || (validity[row >> 3] >> (row & 7)) & 1;
}

static int64_t int64_at(const struct ArrowArray *array, int64_t row) { return ((const int64_t *)array->buffers[1])[row]; }
static double double_at(const struct ArrowArray *array, int64_t row) { return ((const double *)array->buffers[1])[row]; }
static int bool_at(const struct ArrowArray *array, int64_t row) { return (((const uint8_t *)array->buffers[1])[row >> 3] >> (row & 7)) & 1; }

/* The utf8 value at `row`, copied into `out` (NUL-terminated). */
static const char *string_at(const struct ArrowArray *array, int64_t row, char *out, size_t size) {
    const int32_t *offsets = array->buffers[1];
    size_t length = (size_t)(offsets[row + 1] - offsets[row]);
    if (length >= size) length = size - 1;
    memcpy(out, (const char *)array->buffers[2] + offsets[row], length);
    out[length] = 0;
    return out;
}

static const char *last_message(char *out, size_t size) {
    sheaf_error *error = sheaf_last_error();
    snprintf(out, size, "%s", error ? error->message : "(no error)");
    sheaf_error_free(error);
    return out;
}

void items_become_an_arrow_struct_array_with_a_column_per_field(void) {
    const char *json =
        "[{\"id\": 1, \"name\": \"caf\\u00e9 \\\"x\\\"\", \"score\": 2, \"ok\": true, \"tags\": [\"a\", \"b\"],"
        "  \"owner\": {\"login\": \"ada\"}, \"none\": null},\n"
        " {\"id\": -9223372036854775808, \"score\": 2.5, \"ok\": false, \"tags\": [], \"owner\": null},\n"
        " {\"name\": \"\", \"tags\": null, \"extra\": 1e3}]";
    struct ArrowSchema schema;
    struct ArrowArray array;
    CHECK_RESULT(sheaf_arrow_from_json(json, strlen(json), NULL, &schema, &array), SHEAF_OK);
    if (!CHECK(schema.release != NULL && array.release != NULL)) return;
    CHECK_STR(schema.format, "+s");
    CHECK_INT(array.length, 3);
    CHECK_INT(array.null_count, 0);
    CHECK_INT(schema.n_children, 8);
    CHECK_INT(array.n_children, 8);
    /* Fields in the order they first appear. */
    const char *names[] = {"id", "name", "score", "ok", "tags", "owner", "none", "extra"};
    const char *formats[] = {"l", "u", "g", "b", "+l", "+s", "n", "g"};
    for (int index = 0; index < 8 && index < schema.n_children; index++) {
        CHECK_STR(schema.children[index]->name, names[index]);
        CHECK_STR(schema.children[index]->format, formats[index]);
        CHECK(schema.children[index]->flags & ARROW_FLAG_NULLABLE);
        CHECK_INT(array.children[index]->length, 3);
    }
    char text[64];
    int64_t at = 0;
    if (child_named(&schema, "id", &at)) {
        struct ArrowArray *ids = array.children[at];
        CHECK_INT(int64_at(ids, 0), 1);
        CHECK(int64_at(ids, 1) == INT64_MIN);
        CHECK(!is_valid(ids, 2));
        CHECK_INT(ids->null_count, 1);
    }
    if (child_named(&schema, "name", &at)) {
        struct ArrowArray *name = array.children[at];
        CHECK_STR(string_at(name, 0, text, sizeof text), "caf\xc3\xa9 \"x\"");
        CHECK(!is_valid(name, 1));
        CHECK(is_valid(name, 2));
        CHECK_STR(string_at(name, 2, text, sizeof text), "");
    }
    if (child_named(&schema, "score", &at)) {   /* 2 then 2.5: an int64 column become double */
        CHECK(double_at(array.children[at], 0) == 2.0);
        CHECK(double_at(array.children[at], 1) == 2.5);
        CHECK(!is_valid(array.children[at], 2));
    }
    if (child_named(&schema, "ok", &at)) {
        CHECK(bool_at(array.children[at], 0) == 1 && bool_at(array.children[at], 1) == 0);
    }
    struct ArrowSchema *tags_schema = child_named(&schema, "tags", &at);
    if (tags_schema && CHECK_INT(tags_schema->n_children, 1)) {
        struct ArrowArray *tags = array.children[at];
        const int32_t *offsets = tags->buffers[1];
        CHECK_STR(tags_schema->children[0]->name, "item");
        CHECK_STR(tags_schema->children[0]->format, "u");
        CHECK(offsets[0] == 0 && offsets[1] == 2 && offsets[2] == 2 && offsets[3] == 2);
        CHECK(is_valid(tags, 1) && !is_valid(tags, 2));   /* [] is a list; null is not */
        CHECK_STR(string_at(tags->children[0], 1, text, sizeof text), "b");
    }
    struct ArrowSchema *owner_schema = child_named(&schema, "owner", &at);
    if (owner_schema && CHECK_INT(owner_schema->n_children, 1)) {
        struct ArrowArray *owner = array.children[at];
        CHECK_STR(owner_schema->children[0]->name, "login");
        CHECK(is_valid(owner, 0) && !is_valid(owner, 1) && !is_valid(owner, 2));
        CHECK_STR(string_at(owner->children[0], 0, text, sizeof text), "ada");
    }
    if (child_named(&schema, "none", &at)) {
        CHECK_INT(array.children[at]->null_count, 3);
        CHECK_INT(array.children[at]->n_buffers, 0);
    }
    if (child_named(&schema, "extra", &at)) CHECK(double_at(array.children[at], 2) == 1000.0);
    /* A consumer may move a child out first (its release then NULL): the parent frees the rest. */
    struct ArrowArray moved = *array.children[0];
    array.children[0]->release = NULL;
    array.release(&array);
    CHECK(array.release == NULL);
    moved.release(&moved);
    CHECK(moved.release == NULL);
    schema.release(&schema);
    CHECK(schema.release == NULL);
}

/* A caller's schema, written by hand as a consumer would hand it over (nothing to release). */
static void no_release(struct ArrowSchema *schema) { schema->release = NULL; }

static struct ArrowSchema field_of(const char *format, const char *name, int64_t n_children, struct ArrowSchema **children) {
    struct ArrowSchema field = {format, name, NULL, ARROW_FLAG_NULLABLE, n_children, children, NULL, no_release, NULL};
    return field;
}

void a_known_schema_keeps_its_types_and_its_fields_come_first(void) {
    struct ArrowSchema score = field_of("g", "score", 0, NULL);
    struct ArrowSchema element = field_of("l", "item", 0, NULL);
    struct ArrowSchema *element_list[] = {&element};
    struct ArrowSchema ids = field_of("+l", "ids", 1, element_list);
    struct ArrowSchema *fields[] = {&score, &ids};
    struct ArrowSchema known = field_of("+s", "", 2, fields);
    known.flags = 0;
    const char *json = "[{\"name\": \"a\", \"score\": 3, \"ids\": [1, 2]}, {\"ids\": null}]";
    struct ArrowSchema schema;
    struct ArrowArray array;
    CHECK_RESULT(sheaf_arrow_from_json(json, strlen(json), &known, &schema, &array), SHEAF_OK);
    if (!CHECK(schema.release != NULL) || !CHECK_INT(schema.n_children, 3)) return;
    CHECK_STR(schema.children[0]->name, "score");
    CHECK_STR(schema.children[0]->format, "g");   /* 3 read as a double: the schema says so */
    CHECK(double_at(array.children[0], 0) == 3.0);
    CHECK(!is_valid(array.children[0], 1));
    CHECK_STR(schema.children[1]->name, "ids");
    CHECK_STR(schema.children[1]->children[0]->format, "l");
    CHECK_STR(schema.children[2]->name, "name");
    array.release(&array);
    schema.release(&schema);

    /* A value of another kind than the known type is refused, naming the item and the field. */
    char message[512];
    const char *floats = "[{\"ids\": [1]}, {\"ids\": [1, 2.5]}]";
    CHECK_RESULT(sheaf_arrow_from_json(floats, strlen(floats), &known, &schema, &array), SHEAF_E_BAD_PAGE);
    CHECK(schema.release == NULL && array.release == NULL);
    CHECK(strstr(last_message(message, sizeof message), "item 1, field ids[]") != NULL);

    /* A type the library does not build is named, with its field. */
    struct ArrowSchema when = field_of("tsu:UTC", "when", 0, NULL);
    struct ArrowSchema *owner_children[] = {&when};
    struct ArrowSchema owner = field_of("+s", "owner", 1, owner_children);
    struct ArrowSchema *with_owner[] = {&owner};
    struct ArrowSchema timestamps = field_of("+s", "", 1, with_owner);
    CHECK_RESULT(sheaf_arrow_from_json(json, strlen(json), &timestamps, &schema, &array), SHEAF_E_UNSUPPORTED);
    CHECK(strstr(last_message(message, sizeof message), "owner.when") != NULL);
    CHECK(strstr(message, "tsu:UTC") != NULL);
    CHECK(known.release == no_release);   /* borrowed: never released by the library */
}

/* A hostile known schema (a careless or forged caller): a negative child count, a struct that is
   its own child, 100,000 levels, children that point at one another (2^40 paths) are each
   SHEAF_E_INVALID_ARGUMENT, never a trap or a blown stack (issue 47). */
void a_known_schema_that_lies_about_its_children_is_refused_not_followed(void) {
    const char *json = "[{\"a\": 1}]";
    struct ArrowSchema out;
    struct ArrowArray array;
    struct ArrowSchema negative = field_of("+s", "", -1, NULL);
    CHECK_RESULT(sheaf_arrow_from_json(json, strlen(json), &negative, &out, &array), SHEAF_E_INVALID_ARGUMENT);
    struct ArrowSchema *self_list[1];
    struct ArrowSchema self = field_of("+s", "", 1, self_list);
    self_list[0] = &self;
    CHECK_RESULT(sheaf_arrow_from_json(json, strlen(json), &self, &out, &array), SHEAF_E_INVALID_ARGUMENT);
    enum { LEVELS = 100000 };
    struct ArrowSchema *levels = calloc(LEVELS, sizeof *levels);
    struct ArrowSchema **pointers = calloc(LEVELS, sizeof *pointers);
    if (CHECK(levels != NULL && pointers != NULL)) {
        for (int k = 0; k < LEVELS; k++) {
            pointers[k] = k + 1 < LEVELS ? &levels[k + 1] : NULL;
            levels[k] = field_of("+s", "a", k + 1 < LEVELS ? 1 : 0, k + 1 < LEVELS ? &pointers[k] : NULL);
        }
        levels[0].flags = 0;
        CHECK_RESULT(sheaf_arrow_from_json(json, strlen(json), &levels[0], &out, &array), SHEAF_E_INVALID_ARGUMENT);
    }
    free(levels);
    free(pointers);
    /* 40 levels of two children each, both the next level: a small schema with 2^40 paths. */
    struct ArrowSchema wide[41];
    struct ArrowSchema *next[40][2];
    for (int k = 0; k <= 40; k++) {
        if (k < 40) next[k][0] = next[k][1] = &wide[k + 1];
        wide[k] = field_of(k < 40 ? "+s" : "l", k % 2 ? "b" : "a", k < 40 ? 2 : 0, k < 40 ? next[k] : NULL);
    }
    CHECK_RESULT(sheaf_arrow_from_json(json, strlen(json), &wide[0], &out, &array), SHEAF_E_INVALID_ARGUMENT);
    CHECK(out.release == NULL && array.release == NULL);
}

void items_that_do_not_fit_arrow_are_refused_with_the_item_and_field_named(void) {
    static const struct { const char *json; sheaf_result result; const char *named; } cases[] = {
        {"[{\"a\": 1}, {\"a\": \"x\"}]", SHEAF_E_BAD_PAGE, "item 1, field a"},
        {"[{\"a\": {\"b\": [true, 1]}}]", SHEAF_E_BAD_PAGE, "field a.b[]"},
        {"[{\"a\": 1, \"a\": 2}]", SHEAF_E_BAD_PAGE, "given twice"},
        {"[{\"a\\u0000b\": 1}]", SHEAF_E_BAD_PAGE, "field a\\u0000b: the name holds a NUL"},   /* never cut to "a" */
        {"[{\"a\": 1}, 2]", SHEAF_E_BAD_PAGE, "item 1: the item is not a JSON object"},
        {"[{\"a\": 18446744073709551616}]", SHEAF_E_BAD_PAGE, "beyond 64 bits"},
        {"[{\"a\": 1e999}]", SHEAF_E_BAD_PAGE, "beyond a double"},
        {"[{\"a\": \"\\ud800\"}]", SHEAF_E_BAD_PAGE, "lone surrogate"},
        {"[{\"a\": 1}", SHEAF_E_BAD_PAGE, "not JSON"},
        {"[{\"a\": 1}] x", SHEAF_E_BAD_PAGE, "not JSON"},
        {"{\"a\": 1}", SHEAF_E_BAD_PAGE, "not JSON"},
        {"[{\"a\": \"\xff\"}]", SHEAF_E_BAD_PAGE, "not JSON"},
        {"", SHEAF_E_BAD_PAGE, "not JSON"},
    };
    char message[512];
    for (size_t index = 0; index < sizeof cases / sizeof cases[0]; index++) {
        struct ArrowSchema schema = {0};
        struct ArrowArray array = {0};
        schema.release = no_release;   /* left released on failure, whatever was there */
        if (!CHECK_RESULT(sheaf_arrow_from_json(cases[index].json, strlen(cases[index].json), NULL, &schema, &array),
                          cases[index].result)) {
            fprintf(stderr, "    case %zu: %s\n", index, cases[index].json);
            continue;
        }
        CHECK(schema.release == NULL && array.release == NULL);
        if (!CHECK(strstr(last_message(message, sizeof message), cases[index].named) != NULL)) {
            fprintf(stderr, "    case %zu: %s\n", index, message);
        }
    }
    /* Nesting deeper than the library reads is refused, not a stack overflow. */
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 16);
    if (CHECK(deep != NULL)) {
        size_t length = 0;
        length += (size_t)sprintf(deep, "[{\"a\":");
        for (size_t level = 0; level < depth; level++) deep[length++] = '[';
        for (size_t level = 0; level < depth; level++) deep[length++] = ']';
        length += (size_t)sprintf(deep + length, "}]");
        struct ArrowSchema schema;
        struct ArrowArray array;
        CHECK_RESULT(sheaf_arrow_from_json(deep, length, NULL, &schema, &array), SHEAF_E_BAD_PAGE);
        CHECK(strstr(last_message(message, sizeof message), "nested too deep") != NULL);
        free(deep);
    }
    struct ArrowSchema schema;
    struct ArrowArray array;
    struct ArrowSchema not_a_struct = field_of("l", "", 0, NULL);
    CHECK_RESULT(sheaf_arrow_from_json(NULL, 0, NULL, &schema, &array), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_arrow_from_json("[]", 2, NULL, NULL, &array), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_arrow_from_json("[]", 2, NULL, &schema, NULL), SHEAF_E_INVALID_ARGUMENT);
    CHECK_RESULT(sheaf_arrow_from_json("[]", 2, &not_a_struct, &schema, &array), SHEAF_E_INVALID_ARGUMENT);
    /* No item is no row, and a struct of no field. */
    CHECK_RESULT(sheaf_arrow_from_json(" [ ] ", 5, NULL, &schema, &array), SHEAF_OK);
    CHECK_INT(array.length, 0);
    CHECK_INT(schema.n_children, 0);
    array.release(&array);
    schema.release(&schema);
}

void a_pulled_lists_deltas_read_as_arrow_give_every_item_in_order(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    sheaf_list *list = anchor_list(client, "/anchor?n=250", 30, ANCHOR_ALL);
    CHECK_LIST_RESULT(list, sheaf_list_start_pull(list), SHEAF_OK);
    int64_t next_id = 0;
    const sheaf_snapshot *snapshot = NULL;
    while (sheaf_list_next(list, -1, &snapshot) == SHEAF_OK && snapshot != NULL) {
        struct ArrowSchema schema;
        struct ArrowArray array;
        if (!CHECK_RESULT(sheaf_arrow_from_json(snapshot->delta_json, snapshot->delta_length, NULL, &schema, &array), SHEAF_OK)) break;
        int64_t at = 0;
        CHECK_INT(array.length, (long long)snapshot->delta_items);
        if (CHECK(child_named(&schema, "id", &at) != NULL)) {
            for (int64_t row = 0; row < array.length; row++) {
                if (!CHECK_INT(int64_at(array.children[at], row), next_id)) break;
                next_id++;
            }
        }
        array.release(&array);
        schema.release(&schema);
    }
    CHECK_INT(next_id, 250);
    CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
    sheaf_list_free(list);
    sheaf_client_free(client);
}
