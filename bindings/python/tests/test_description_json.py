"""The description JSON as the one vocabulary: what sheaf_list_description and
sheaf_preset_description print validates against include/sheaf/description.schema.json, is taken
back by sheaf_list_set_description as it is (describe(set(x)) == x), and a bad one is refused with
the same words from C, from Python's Description and from the command line."""

from __future__ import annotations

import ctypes
import json
import random
from typing import Any, Dict, Optional

import jsonschema
import pytest
from conftest import REPO, expected_items

import sheaf
from sheaf import Description, _ffi

SCHEMA = json.loads((REPO / "include" / "sheaf" / "description.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
lib = _ffi.lib

#: Endpoints of the test server that detection resolves, with the query each needs.
DETECTED = {"/anchor": "", "/drf": "", "/array": "&per_page=25", "/conv/github": "", "/conv/gitlab": "",
            "/conv/json-server": "&_page=1", "/conv/hand-written": "", "/conv/drf-cursor": "", "/conv/odata": "&$count=true",
            "/conv/hal": "", "/conv/stripe": "", "/conv/slack": "&limit=40", "/conv/google": "&pageSize=40",
            "/conv/content-range": "&offset=0", "/conv/jira": "", "/conv/elastic": "&from=0"}
SIGNALS = ("items", "next", "cursor", "total", "page_count", "has_more", "is_last", "identity")
#: Where each signal can be read from, besides detection (the header's enum comments).
SOURCES = {"items": ("body",), "next": ("body", "header", "link"), "cursor": ("body", "header", "last_item"),
           "total": ("body", "header"), "page_count": ("body", "header", "link"), "has_more": ("body", "header"),
           "is_last": ("body", "header"), "identity": ("item",)}


@pytest.fixture(scope="module")
def client_handle():
    handle = _ffi.ClientHandle()
    lib.sheaf_client_new(ctypes.byref(handle), b"http://127.0.0.1:9")
    yield handle
    lib.sheaf_client_free(handle)


def described(client_handle, text: str) -> Dict[str, Any]:
    """sheaf_list_description after sheaf_list_set_description(text), through C."""
    handle = _ffi.ListHandle()
    lib.sheaf_list_new(ctypes.byref(handle), client_handle, b"/things")
    try:
        lib.sheaf_list_set_description(handle, text.encode())
        pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
        lib.sheaf_list_description(handle, ctypes.byref(pointer), ctypes.byref(length))
        return json.loads(_ffi.take_string(pointer, length.value))
    finally:
        lib.sheaf_list_free(handle)


def refusal_from_c(client_handle, text: str) -> str:
    handle = _ffi.ListHandle()
    lib.sheaf_list_new(ctypes.byref(handle), client_handle, b"/things")
    try:
        with pytest.raises(sheaf.UsageError) as refused:
            lib.sheaf_list_set_description(handle, text.encode())
        assert refused.value.code == sheaf.Result.INVALID_ARGUMENT
        return refused.value.message
    finally:
        lib.sheaf_list_free(handle)


def preset_texts() -> Dict[str, str]:
    texts = {}
    for index in range(lib.sheaf_preset_count()):
        name = _ffi.decode(lib.sheaf_preset_name(index))
        pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
        lib.sheaf_preset_description(name.encode(), ctypes.byref(pointer), ctypes.byref(length))
        texts[name] = _ffi.take_string(pointer, length.value).decode()
    return texts


# ---- Generated descriptions -------------------------------------------------------------------

def _pointer(rng: random.Random) -> str:
    return rng.choice(["", "/items", "/a/b/0", "/a~1b", "/~0tilde", "/data/ünïcode", "/links/next/href", "/\"q\""])


def _source(rng: random.Random, signal: str) -> Optional[Dict[str, Any]]:
    choices = ["null", "detect", *SOURCES[signal]] if signal != "identity" else ["null", "item"]
    kind = rng.choice(choices)
    if kind == "null":
        return None
    where: Optional[str]
    if kind in ("body", "item", "last_item"):
        where = _pointer(rng)
    elif kind == "header":
        where = rng.choice(["X-Total", "X-Next-Page", "Content-Range", "x!#$%&'*+.^_`|~1"])
    elif kind == "link":
        where = rng.choice(["next", "last", "https://example.com/rel/more"])
    else:
        where = None
    return {"source": kind, "where": where, "detected": False}


def _number(rng: random.Random, low: int) -> int:
    return rng.choice([low, low + 1, rng.randint(low, 1000), 2 ** 53, rng.randint(low, 2 ** 53)])


def generated(rng: random.Random, summaries: Dict[str, str]) -> Dict[str, Any]:
    """A whole description as the library prints it for a list not yet run."""
    kind = rng.choice(["detect", "single", "next", "page_number", "offset", "cursor"])
    param = rng.choice(["page", "offset", "page[number]", "$skip", "pageToken", "ä"]) \
        if kind in ("page_number", "offset", "cursor") else None
    first = _number(rng, 0) if kind in ("page_number", "offset") else 0
    size_param = rng.choice([None, "per_page", "limit", "page[size]"]) if kind in ("page_number", "offset", "cursor") else None
    size = (None if rng.random() < 0.3 else _number(rng, 1)) if size_param else None
    signals = {name: _source(rng, name) for name in SIGNALS}
    if kind == "cursor" and signals["cursor"] is None:
        signals["cursor"] = {"source": "detect", "where": None, "detected": False}
    if kind not in ("cursor", "detect") and signals["cursor"] is not None:
        signals["cursor"] = rng.choice([None, {"source": "detect", "where": None, "detected": False}])
    description = {"paging": {"kind": kind, "param": param, "first": first, "size_param": size_param, "size": size,
                              "detected": False},
                   "signals": signals, "plan": None, "preset": None}
    if rng.random() < 0.25:   # a preset, every part of it overridden
        description["preset"] = rng.choice(sorted(summaries))
        description["summary"] = summaries[description["preset"]]
        # A preset's range filter is the description's unless it says otherwise.
        split = json.loads(preset_texts()[description["preset"]]).get("split")
        if split:
            description["split"] = split
    return description


# ---- Schema -----------------------------------------------------------------------------------

def test_the_schema_is_a_versioned_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"].endswith("/description/1.0.json")


@pytest.mark.parametrize("name", sorted(preset_texts()))
def test_every_presets_description_validates_against_the_schema(name):
    VALIDATOR.validate(json.loads(preset_texts()[name]))


@pytest.mark.parametrize("endpoint", sorted(DETECTED))
def test_a_detected_runs_description_validates_against_the_schema_and_sets_again(api, client_handle, endpoint):
    path = f"{endpoint}?n=120{DETECTED[endpoint]}"
    handle = _ffi.ListHandle()
    with sheaf.Client(api.base_url) as client:
        run = client._new_run(path, None, {}, None)
        try:
            run.start()
            run.next_items()
            pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
            lib.sheaf_list_description(run.handle, ctypes.byref(pointer), ctypes.byref(length))
            printed = json.loads(_ffi.take_string(pointer, length.value))
        finally:
            run.close()
    del handle
    VALIDATOR.validate(printed)
    assert printed["plan"] in ("parallel", "speculative", "sequential", "single", "split")
    assert printed["paging"]["detected"] or any(value and value["detected"] for value in printed["signals"].values())
    # Taken back as it is: what was detected is pinned; the output-only fields are what a list
    # that has not run prints.
    again = described(client_handle, json.dumps(printed))
    pinned = json.loads(json.dumps(printed))
    pinned["plan"] = None
    pinned["paging"]["detected"] = False
    for value in pinned["signals"].values():
        if value:
            value["detected"] = False
    assert again == pinned


def test_generated_descriptions_validate_against_the_schema():
    rng = random.Random(20261126)
    summaries = {name: json.loads(text)["summary"] for name, text in preset_texts().items()}
    for _ in range(300):
        VALIDATOR.validate(generated(rng, summaries))


# ---- Round trip through C ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(preset_texts()))
def test_a_presets_description_set_and_described_is_itself(client_handle, name):
    text = preset_texts()[name]
    assert described(client_handle, text) == json.loads(text)
    assert described(client_handle, json.dumps({"preset": name})) == json.loads(text), "a preset is a description"


def test_generated_descriptions_set_and_described_are_themselves(client_handle):
    rng = random.Random(7)
    summaries = {name: json.loads(text)["summary"] for name, text in preset_texts().items()}
    for _ in range(500):
        description = generated(rng, summaries)
        assert described(client_handle, json.dumps(description)) == description, description


def test_a_partial_description_leaves_the_rest_to_detection_or_the_preset(client_handle):
    undescribed = described(client_handle, "{}")
    assert undescribed["paging"]["kind"] == "detect" and undescribed["preset"] is None
    assert all(undescribed["signals"][name]["source"] == "detect" for name in SIGNALS if name != "identity")
    assert undescribed["signals"]["identity"] is None
    github = described(client_handle, '{"preset": "github", "paging": {"size": 100}}')
    assert github["paging"] == {"kind": "page_number", "param": "page", "first": 1, "size_param": "per_page",
                                "size": 100, "detected": False}
    assert github["signals"]["next"] == {"source": "link", "where": "next", "detected": False}


# ---- Refusals ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ('{"pagin": {}}', "the description's /pagin: unknown field"),
    ('{"paging": {"kind": "page_number", "param": "p", "frist": 1}}', "the description's /paging/frist: unknown field"),
    ('{"signals": {"totl": null}}', "the description's /signals/totl: unknown field"),
    ('{"signals": {"total": {"source": "body", "wher": "/t"}}}', "the description's /signals/total/wher: unknown field"),
    ('{"paging": {"kind": "page_number", "param": "p", "first": -1}}', "the description's /paging/first: must be a whole number of 0 or more"),
    ('{"paging": {"kind": "offset", "param": "o", "first": 1e400}}', "the description's /paging/first: must be a whole number (no fraction"),
    ('{"paging": {"kind": "offset", "param": "o", "first": 18446744073709551616}}', "the description's /paging/first: is out of range"),
    ('{"paging": {"kind": "offset", "param": "o", "size_param": "l", "size": 9007199254740993}}', "the description's /paging/size: is out of range"),
    ('{"paging": {"kind": "offset", "param": "o", "size_param": "l", "size": 0}}', "the description's /paging/size: a page size parameter needs"),
    ('{"paging": {"kind": "pages"}}', "the description's /paging/kind: the paging kind must be one of detect, single"),
    ('{"paging": {"kind": "cursor"}}', "the description's /paging/param: cursor paging needs"),
    ('{"signals": {"total": {"source": "link", "where": "last"}}}', "the description's /signals/total/source: the total signal cannot be read from link"),
    ('{"signals": {"items": {"source": "body", "where": "items"}}}', "the description's /signals/items/where: \"items\" is not a JSON pointer"),
    ('{"signals": {"total": {"source": "header", "where": "X Total"}}}', "the description's /signals/total/where: \"X Total\" is not a header name"),
    ('{"preset": "githb"}', "the description's /preset: unknown preset \"githb\"; known presets: anchor, github"),
    ('{"plan": "fast"}', "the description's /plan: is printed, not read"),
    ('{"summary": "mine"}', "the description's /summary: is printed, not read"),
    ('{"paging": {"detected": "yes"}}', "the description's /paging/detected: is printed, not read"),
    ('{"paging": {}, "paging": {}}', "the description's /paging: given twice"),
    ('[]', "the description: must be a JSON object, not an array"),
    ('{"paging": ', "the description is not JSON"),
])
def test_a_bad_description_is_refused_naming_its_field(client_handle, text, message):
    assert refusal_from_c(client_handle, text).startswith(message)


def test_a_bad_description_says_the_same_from_c_and_from_python(api, client_handle):
    bad = '{"paging": {"kind": "page_number", "param": "page", "first": -3}}'
    from_c = refusal_from_c(client_handle, bad)
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError) as from_json:
            client.fetch_all("/anchor?n=10", Description(json=bad))
        with pytest.raises(sheaf.UsageError) as from_fields:
            client.fetch_all("/anchor?n=10", Description(paging="page:page", first=-3))
    assert from_json.value.message == from_c == from_fields.value.message
    assert from_c == "the description's /paging/first: must be a whole number of 0 or more, not -3"


def test_a_description_is_refused_once_the_list_has_started(api):
    with sheaf.Client(api.base_url) as client:
        run = client._new_run("/anchor?n=10", None, {}, None)
        try:
            run.start()
            with pytest.raises(sheaf.UsageError) as refused:
                lib.sheaf_list_set_description(run.handle, b"{}")
            assert refused.value.code == sheaf.Result.STATE
        finally:
            run.close()


def test_a_python_description_with_json_is_overridden_by_its_fields(api):
    with sheaf.Client(api.base_url) as client:
        base = preset_texts()["anchor"]
        assert client.fetch_all("/anchor?n=95", Description(json=base, page_size=10)) == expected_items(95)


# ---- The command line -------------------------------------------------------------------------

@pytest.mark.parametrize("endpoint", ["/drf", "/conv/github", "/conv/stripe", "/conv/slack", "/conv/odata",
                                      "/conv/hand-written"])
def test_cli_explain_as_json_saved_and_passed_back_gives_the_same_list(api, tmp_path, endpoint):
    from test_cli import lines, run_cli

    url = f"{api.base_url}{endpoint}?n=230{DETECTED.get(endpoint, '')}"
    explained = run_cli(url, "--explain", "--format", "json")
    assert explained.returncode == 0, explained.stderr
    printed = json.loads(explained.stdout)
    VALIDATOR.validate(printed)
    saved = tmp_path / "description.json"
    saved.write_bytes(explained.stdout)
    detected = run_cli(url)
    pinned = run_cli(url, "--description", str(saved))
    inline = run_cli(url, "--description", explained.stdout.decode().strip())
    assert detected.returncode == pinned.returncode == inline.returncode == 0, (pinned.stderr, inline.stderr)
    assert lines(pinned.stdout) == lines(detected.stdout) == lines(inline.stdout)
    assert len(lines(pinned.stdout)) == 230
    # Set again, it is what the run uses: the same parts and plan, now pinned rather than detected.
    again = json.loads(run_cli(url, "--description", str(saved), "--explain", "--format", "json").stdout)
    assert again["plan"] == printed["plan"]
    assert {**again["paging"], "detected": True} == {**printed["paging"], "detected": True}
    assert not again["paging"]["detected"]


def test_cli_flags_override_the_parts_of_a_description(api):
    from test_cli import lines, run_cli

    r = run_cli(f"{api.base_url}/anchor?n=95", "--description", '{"preset": "anchor"}', "--page-size", "10")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected_items(95)
    assert all("per_page=10" in entry["path"] for entry in api.state.snapshot()["log"])


def test_cli_a_bad_description_says_what_c_says(api, client_handle, tmp_path):
    from test_cli import run_cli

    bad = '{"paging": {"kind": "page_number", "param": "page", "first": -3}}'
    r = run_cli(f"{api.base_url}/anchor?n=10", "--description", bad)
    assert r.returncode == 2
    assert r.stderr.decode().splitlines()[0] == "sheaf: " + refusal_from_c(client_handle, bad)
    missing = run_cli(f"{api.base_url}/anchor?n=10", "--description", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and b"--description: cannot read" in missing.stderr
