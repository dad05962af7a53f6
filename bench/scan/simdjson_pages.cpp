// simdjson (libsimdjson-dev) parsing the pages bench/scan/main.swift (scan_pages) scans: the anchor of
// bench/run.py's P5 scan row.
//
//     simdjson_pages PAGES_FILE [REPS]
//
// Each pass parses every page with simdjson's DOM parser (full validation, UTF-8 included, and
// its tape of every value), then reads the size of /items and the values of /total and
// /next_page: what Sheaf's scanner finds in the same pass. The parser is reused across pages, as
// simdjson recommends. Same file format and output as scan_pages.
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static void fail(const std::string &message) {
    std::fprintf(stderr, "simdjson_pages: %s\n", message.c_str());
    std::exit(3);
}

int main(int argc, char **argv) {
    if (argc < 2) fail("usage: simdjson_pages PAGES_FILE [REPS]");
    int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
    std::FILE *file = std::fopen(argv[1], "rb");
    if (file == nullptr) fail(std::string("cannot open ") + argv[1]);
    std::vector<simdjson::padded_string> pages;
    size_t bytes = 0, length = 0;
    while (std::fscanf(file, "%zu\n", &length) == 1) {
        std::string page(length, '\0');
        if (std::fread(page.data(), 1, length, file) != length) fail("the file ends inside a page");
        pages.emplace_back(page);
        bytes += length;
    }
    std::fclose(file);
    if (pages.empty()) fail("the file holds no page");

    simdjson::dom::parser parser;
    std::vector<double> passes;
    size_t items = 0;
    for (int rep = 0; rep < reps; rep++) {
        items = 0;
        auto start = std::chrono::steady_clock::now();
        for (const auto &page : pages) {
            simdjson::dom::element document;
            simdjson::dom::array array;
            if (parser.parse(page).get(document) != simdjson::SUCCESS) fail("a page is not JSON");
            if (document["items"].get(array) != simdjson::SUCCESS) fail("a page has no /items array");
            items += array.size();
            (void)document["total"];
            (void)document["next_page"];
        }
        passes.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(passes.begin(), passes.end());
    std::printf("{\"driver\":\"simdjson %d.%d.%d (%s)\",\"pages\":%zu,\"bytes\":%zu,\"items\":%zu,"
                "\"best_seconds\":%.9f,\"seconds\":%.9f,\"reps\":%zu}\n",
                int(simdjson::SIMDJSON_VERSION_MAJOR), int(simdjson::SIMDJSON_VERSION_MINOR),
                int(simdjson::SIMDJSON_VERSION_REVISION), simdjson::get_active_implementation()->name().c_str(), pages.size(), bytes, items,
                passes[0], passes[passes.size() / 2], passes.size());
    return 0;
}
