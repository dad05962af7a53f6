"""The Swift sources' layers, read from their text by scripts/type_graph.py (no compiler, no
library): no file of Sources/ uses a name a higher layer declares (the order is its LAYERS: the
stage folders of Sources/Sheaf, then the other targets), and no folders need each other.

Today's tree breaks that in known places, each listed with its reason in layers_allowed.txt. A use
of a higher layer that the list does not name fails, and so does a line of the list whose use is
gone: the list only shrinks (delete the line once the code moved; `python3
scripts/type_graph.py --draft bindings/python/tests/layers_allowed.txt` prints the list as the
tree has it, keeping the reasons already written)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Dict

import pytest

REPO = Path(__file__).resolve().parents[3]
SOURCES = REPO / "Sources"
ALLOWED = Path(__file__).resolve().parent / "layers_allowed.txt"


def _load_checker():
    spec = importlib.util.spec_from_file_location("type_graph", REPO / "scripts" / "type_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("type_graph", module)   # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


tg = _load_checker()


@pytest.fixture(scope="module")
def tree():
    return tg.load(SOURCES)


@pytest.fixture(scope="module")
def result(tree):
    return tg.check(tree, tg.read_allowed(ALLOWED))


def test_the_walk_reads_the_sources(tree):
    # Every Swift file of every target, and the stage folders' plain downward uses: a fetch's
    # answer is a Transport value, a run plans with Plan's planner.
    assert {f.module for f in tree.files.values()} >= {"Sheaf", "SheafCurl", "SheafCABI"}
    assert len(tree.files) == len(list(SOURCES.rglob("*.swift")))
    folders = tree.folder_graph()
    assert "Transport" in folders["Fetch"] and "Plan" in folders["Run"] and "Sheaf" not in folders
    assert "CCurl" in folders["SheafCurl"]   # a C module, reached by import


def test_no_file_uses_a_higher_layer_but_for_the_listed_uses(result):
    assert not result.new, tg.report(result._replace(stale=[], cycles=[], unlayered=[]), ALLOWED.name)


def test_every_listed_use_is_still_there(result):
    assert not result.stale, tg.report(result._replace(new=[], cycles=[], unlayered=[]), ALLOWED.name)


def test_the_folders_form_no_cycle_beside_the_listed_uses(result):
    assert not result.cycles, tg.report(result._replace(new=[], stale=[], unlayered=[]), ALLOWED.name)


def test_every_folder_has_a_layer(result):
    assert not result.unlayered, tg.report(result._replace(new=[], stale=[], cycles=[]), ALLOWED.name)


# The checker itself, on trees made here: it must be able to fail.

LAYERS = ("Support", "Read", "Client")


def make_tree(root: Path, files: Dict[str, str]) -> Path:
    sources = root / "Sources"
    for rel, text in files.items():
        path = sources / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return sources


def uses(sources: Path) -> Dict[str, Dict[str, list]]:
    return tg.load(sources).file_graph()


def test_an_upward_use_fails_naming_the_file_the_name_and_both_layers(tmp_path):
    sources = make_tree(tmp_path, {
        "Sheaf/Support/Lock.swift": "final class Lock {\n    func run(_ error: SheafError) {}\n}\n",
        "Sheaf/Client/SheafError.swift": "public struct SheafError: Error {}\n",
        "Sheaf/Read/Page.swift": "struct Page { let lock: Lock }\n",
    })
    result = tg.check(tg.load(sources), [], layers=LAYERS)
    assert [(u.file, u.name, u.from_layer, u.to_layer) for u in result.new] == [
        ("Sheaf/Support/Lock.swift", "SheafError", "Support", "Client")]
    assert not result.ok and not result.cycles
    message = tg.report(result)
    assert "Sheaf/Support/Lock.swift:2 uses SheafError" in message and "Support -> Client" in message


def test_the_allow_list_admits_a_listed_use_and_fails_once_it_is_gone(tmp_path):
    files = {
        "Sheaf/Support/Lock.swift": "final class Lock {\n    func run(_ error: SheafError) {}\n}\n",
        "Sheaf/Client/SheafError.swift": "public struct SheafError: Error {}\n",
    }
    listed = tmp_path / "allowed.txt"
    listed.write_text("# a comment\nSheaf/Support/Lock.swift  SheafError  Support -> Client  -- Lock reports errors\n")
    allowed = tg.read_allowed(listed)
    assert tg.check(tg.load(make_tree(tmp_path / "a", files)), allowed, layers=LAYERS).ok
    files["Sheaf/Support/Lock.swift"] = "final class Lock {}\n"   # the move was made: the line must go
    result = tg.check(tg.load(make_tree(tmp_path / "b", files)), allowed, layers=LAYERS)
    assert [a.name for a in result.stale] == ["SheafError"] and not result.new
    assert "no longer there" in tg.report(result)


def test_an_allow_list_line_wants_its_reason(tmp_path):
    listed = tmp_path / "allowed.txt"
    listed.write_text("Sheaf/Support/Lock.swift  SheafError  Support -> Client\n")
    with pytest.raises(ValueError):
        tg.read_allowed(listed)
    listed.write_text("Sheaf/Support/Lock.swift  SheafError  Support -> Client  -- TODO: why\n")
    with pytest.raises(ValueError):
        tg.read_allowed(listed)


def test_folders_that_need_each_other_are_a_cycle_and_a_new_folder_wants_a_layer(tmp_path):
    sources = make_tree(tmp_path, {
        "Sheaf/Read/Page.swift": "struct Page { let reader: PageReader }\n",
        "Sheaf/Client/PageReader.swift": "struct PageReader { func read() -> Page? { nil } }\n",
        "Sheaf/Extra/Thing.swift": "struct Thing {}\n",
    })
    tree = tg.load(sources)
    assert tg.folder_cycles(tree) == [["Client", "Read"]]
    result = tg.check(tree, [], layers=LAYERS)
    assert result.cycles == [["Client", "Read"]] and [u.name for u in result.new] == ["PageReader"]
    assert result.unlayered == ["Extra"] and "folders in a cycle: Client Read" in tg.report(result)
    # the upward use listed, the cycle is the list's to explain: no cycle is left
    listed = tmp_path / "allowed.txt"
    listed.write_text("Sheaf/Read/Page.swift PageReader Read -> Client -- a page holds its reader\n")
    assert tg.check(tree, tg.read_allowed(listed), layers=LAYERS).cycles == []
    assert tg.cycles(tree.file_graph()) == [["Sheaf/Client/PageReader.swift", "Sheaf/Read/Page.swift"]]


def test_comments_strings_and_common_member_names_make_no_edge_an_interpolation_does(tmp_path):
    sources = make_tree(tmp_path, {
        "Sheaf/Read/Page.swift": "struct Page {\n    var count = 0\n    var url = \"\"\n}\n",
        "Sheaf/Client/Client.swift": "public final class Client {\n    var url = \"\"\n}\n",
        "Sheaf/Support/Lock.swift": (
            "/// Not a `Client`, nor a Page /* nested /* comment */ Client */\n"
            "final class Lock {\n"
            "    func f(_ x: [Int], _ y: (url: String, n: Int)) -> String {\n"
            "        let s = \"a Client in a string, \\\"Client\\\"\" + #\"raw \"Client\"\"#\n"
            "        return s + \"\\(x.count) \\(y.url)\"   // Page\n"
            "    }\n"
            "    let doc = \"\"\"\n        a Page, \"a Client\"\n        \\(Client.self)\n        \"\"\"\n"
            "}\n"),
    })
    # the one use is in the multi-line string's interpolation
    assert uses(sources)["Sheaf/Support/Lock.swift"] == {"Sheaf/Client/Client.swift": ["Client"]}


def test_interpolations_types_functions_and_distinctive_members_make_edges(tmp_path):
    sources = make_tree(tmp_path, {
        "Sheaf/Client/Client.swift": (
            "public final class Client {\n"
            "    func makeRunner() -> Int { 1 }\n"
            "    public enum Mode { case quick, thorough }\n"
            "}\n"
            "func startEverything() {}\n"),
        "Sheaf/Read/Page.swift": (
            "struct Page {\n"
            "    func f(c: AnyObject) -> String { \"\\(Client.Mode.quick)\" }\n"   # in an interpolation
            "    func g(x: Holder) { _ = x.client.makeRunner(); startEverything() }\n"
            "    var mode = Mode.thorough\n"   # a nested type, bare, outside its scope: nothing
            "}\n"),
    })
    graph = uses(sources)
    assert graph["Sheaf/Read/Page.swift"] == {
        "Sheaf/Client/Client.swift": ["Client", "Client.Mode", "Client.Mode.quick", "Client.makeRunner", "startEverything"]}


def test_extensions_carry_their_members_to_their_own_file(tmp_path):
    sources = make_tree(tmp_path, {
        "Sheaf/Describe/Paging.swift": "enum Paging { case single }\n",
        "Sheaf/Read/Reading.swift": (
            "extension Paging {\n"
            "    var queryParameterName: String? { nil }\n"
            "    static func parsed(_ text: String) -> Paging { .single }\n"
            "}\n"
            "extension String {\n    var trimmedOfSpaces: String { self }\n}\n"),
        "Sheaf/Plan/Planner.swift": (
            "struct Planner {\n"
            "    func f(p: Paging) -> String? { Paging.parsed(\"x\").queryParameterName?.trimmedOfSpaces }\n"
            "}\n"),
    })
    graph = uses(sources)
    assert graph["Sheaf/Read/Reading.swift"] == {"Sheaf/Describe/Paging.swift": ["Paging", "Paging.single"]}
    assert graph["Sheaf/Plan/Planner.swift"] == {
        "Sheaf/Describe/Paging.swift": ["Paging"],
        "Sheaf/Read/Reading.swift": ["Paging.parsed", "Paging.queryParameterName", "String.trimmedOfSpaces"]}


def test_private_declarations_locals_generics_and_other_modules_internals_stay_home(tmp_path):
    sources = make_tree(tmp_path, {
        "Sheaf/Support/Helpers.swift": (
            "private struct Hidden {}\n"
            "fileprivate func hiddenHelper() {}\n"
            "func report(_ x: Int) {}\n"
            "struct Item {}\n"
            "package struct Shared {}\n"),
        "Sheaf/Read/User.swift": (
            "private struct Hidden {}\n"
            "struct Box<Item> {\n"            # a generic parameter, not the type Item
            "    func f(report: Int) -> Hidden {\n"
            "        let hiddenHelper = 1\n"
            "        g(report: hiddenHelper)\n"   # a label and a local, not the functions
            "        return Hidden()\n"
            "    }\n"
            "    func g(report: Int) { let x: Item? = nil; _ = x }\n"
            "}\n"),
        "SheafCABI/Bridge.swift": "import Sheaf\nstruct Bridge { let a: Item; let b: Shared }\n",
    })
    graph = uses(sources)
    assert graph["Sheaf/Read/User.swift"] == {}
    # another module sees package and public declarations only
    assert graph["SheafCABI/Bridge.swift"] == {"Sheaf/Support/Helpers.swift": ["Shared"]}
