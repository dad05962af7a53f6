"""Lists behind a POST and GraphQL connections (issue 45) against the servers of
Tests/server/post_api.py, shaped as Notion's database query, Elasticsearch's search_after and
GitHub's GraphQL API document them: every item once and in order through each way of running a
list, a POST sent twice only where the endpoint reads, a GraphQL error never OK, and the body's
values never in a message."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request
from typing import Any, Dict, List

import pytest

import sheaf
from test_cli import lines, run_cli

NOTION_FILTER = {"filter": {"property": "n", "number": {"greater_than_or_equal_to": 1}}}
ISSUES = """query($owner: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: "sheaf") {
    issues(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } %s }
  }
}"""
NODES = ISSUES % "nodes { id number title }"
EDGES = ISSUES % "edges { cursor node { id number title } }"
CONNECTION = "/data/repository/issues"


def bodies(api) -> List[Dict[str, Any]]:
    """The bodies the server received, in order, parsed."""
    with urllib.request.urlopen(f"{api.base_url}/_post/log", timeout=10) as response:
        return [json.loads(entry["body"]) for entry in json.load(response)]


def notion_ids(n: int, low: int = 1) -> List[str]:
    return [f"59833787-2cf9-4fdf-8782-{i:012d}" for i in range(low, n + 1)]


def test_a_notion_query_is_walked_with_its_cursor_in_the_body(api) -> None:
    query = {"filter": {"property": "n", "number": {"greater_than_or_equal_to": 21}}}
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/post/notion/query?n=250", preset="notion", json=query)
    assert [item["id"] for item in items] == notion_ids(250, 21)
    sent = bodies(api)
    assert [body.get("start_cursor") for body in sent] == [None, notion_ids(250)[120], notion_ids(250)[220]]
    assert all(body["filter"] == query["filter"] for body in sent), "the caller's filter goes with every page"


def every_way(api, tmp_path, path: str, parts: Dict[str, Any], key) -> List[Any]:
    """The list at `path` run by each list call: the same items (by `key`) each time."""
    with sheaf.Client(api.base_url) as client:
        expected = [key(item) for item in client.fetch_all(path, **parts)]
        streamed = [key(item) for snapshot in client.stream(path, **parts) for item in snapshot.items]
        assert streamed == expected
        out = tmp_path / "out.jsonl"
        with open(out, "w") as file:
            client.fetch_to(path, file, format="jsonl", **parts)
        assert [key(json.loads(line)) for line in out.read_text().splitlines()] == expected
        paged: List[Any] = []
        with client.pager(path, **parts) as pager:
            for _ in range(40):   # bounded: at most a few pages
                page = pager.more()
                if page is None:
                    break
                paged += [key(item) for item in page]
        assert paged == expected
        many = client.fetch_many([path, path], **parts)
        assert [key(i) for i in many[0].items] == expected == [key(i) for i in many[1].items]

    async def run_async() -> List[Any]:
        async with sheaf.AsyncClient(api.base_url) as client:
            return [key(item) for item in await client.fetch_all(path, **parts)]
    assert asyncio.run(run_async()) == expected
    return expected


def test_every_way_of_running_a_post_list_gives_each_item_once_in_order(api, tmp_path) -> None:
    parts = {"preset": "notion", "json": NOTION_FILTER, "page_size": 40}
    assert every_way(api, tmp_path, "/post/notion/query?n=230", parts, lambda item: item["id"]) == notion_ids(230)
    assert all(body["page_size"] == 40 for body in bodies(api))


def test_every_way_of_running_a_nested_graphql_list_gives_each_node_whole(api, tmp_path) -> None:
    parts = {"graphql": COMMENTED, "connection": CONNECTION, "variables": {"owner": "octo"}, "page_size": 30,
             "nested": {"/comments": {"query": COMMENTS, "page_size": 4}}}
    got = every_way(api, tmp_path, "/post/graphql?n=100", parts,
                    lambda item: (item["number"], [c["id"] for c in item["comments"]["nodes"]]))
    assert got == [(i, [f"IC_{i}_{k}" for k in range(1, comment_count(i) + 1)]) for i in range(1, 101)]


def test_a_post_is_sent_again_only_where_the_endpoint_reads(api) -> None:
    described = {"paging": "cursor:body:/start_cursor", "items": "/results", "cursor": "/next_cursor",
                 "has_more": "/has_more", "next": "none", "total": "none", "page_count": "none", "is_last": "none"}
    with sheaf.Client(api.base_url, retry_base=0.001) as client:
        with pytest.raises(sheaf.HTTPError) as failed:
            client.fetch_all("/post/notion/query?n=30&fail=1&key=a", json={}, **described)
        assert failed.value.status == 503
        assert len(bodies(api)) == 1, "a POST that may have taken effect is not sent twice"
        items = client.fetch_all("/post/notion/query?n=30&fail=1&key=b", json={}, read_only=True, **described)
        assert len(items) == 30
        # The preset says the query reads.
        assert len(client.fetch_all("/post/notion/query?n=30&fail=1&key=c", preset="notion", json={})) == 30


def test_search_after_reads_every_hit_once_through_ties(api) -> None:
    # 500 hits, 25 sharing each second: only the id breaks the ties.
    with sheaf.Client(api.base_url) as client:
        hits = client.fetch_all("/post/es/_search?n=500&burst=25", preset="elasticsearch", page_size=30,
                                json={"sort": [{"ts": "asc"}, {"_id": "asc"}], "query": {"match_all": {}}})
    assert [hit["_id"] for hit in hits] == [f"d{i:06d}" for i in range(500)]
    after = [body.get("search_after") for body in bodies(api)]
    assert after[0] is None and after[1] == [1_700_000_001, "d000029"]


@pytest.mark.parametrize("query", [NODES, EDGES], ids=["nodes", "edges"])
def test_a_graphql_connection_gives_each_node_once_in_order(api, query: str) -> None:
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/post/graphql?n=230", graphql=query, connection=CONNECTION,
                                 variables={"owner": "octo"})
    assert [item["number"] for item in items] == list(range(1, 231))
    sent = bodies(api)
    assert [body["variables"].get("after") is None for body in sent] == [True, False, False]
    assert all(body["variables"]["owner"] == "octo" and body["variables"]["first"] == 100 and body["query"] == query
               for body in sent)


def test_a_graphql_error_is_never_an_ok_list(api) -> None:
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.APIError) as failed:
            client.fetch_all("/post/graphql?n=230&error_at=150", graphql=NODES, connection=CONNECTION,
                             variables={"owner": "octo"})
        message = str(failed.value)
        assert "Something went wrong while executing your query. (at repository.issues.nodes.0.author)" in message
        assert [item["number"] for item in failed.value.items] == list(range(1, 101))
        # Allowed, the partial page is read.
        items = client.fetch_all("/post/graphql?n=230&error_at=150", graphql=NODES, connection=CONNECTION,
                                 variables={"owner": "octo"}, allow_partial=True)
        assert len(items) == 230
        # The server's "first" refused: an error with data null, whatever allow_partial says.
        with pytest.raises(sheaf.APIError, match="You must provide a `first`"):
            client.fetch_all("/post/graphql?n=230", graphql=NODES, connection=CONNECTION, page_size=500,
                             allow_partial=True)


def test_graphql_rate_limits_are_waited_out(api) -> None:
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/post/graphql?n=120&throttled=2&key=t", graphql=NODES, connection=CONNECTION)
        assert len(items) == 120
        assert len(bodies(api)) == 4
        items = client.fetch_all("/post/graphql?n=50&rate_limited=1&key=r", graphql=NODES, connection=CONNECTION)
        assert len(items) == 50


def test_the_bodys_values_are_never_in_a_message(api) -> None:
    secret = "sk-body-secret-81c2"
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.Error) as failed:
            # The server refuses the page size; the message is the server's, never the body.
            client.fetch_all("/post/notion/query?n=10", preset="notion", page_size=500,
                             json={"filter": {"token": secret}})
        assert secret not in str(failed.value) and secret not in repr(failed.value)
        description = sheaf.Description(preset="notion").merged({"json": {"token": secret}})
        assert secret not in repr(description)
        with pytest.raises(sheaf.UsageError) as refused:
            client.fetch_all("/post/notion/query?n=10", preset="notion", json=[secret])
        assert "JSON object" in str(refused.value) and secret not in str(refused.value)


def test_the_cli_walks_a_post_list_and_a_graphql_query(api, tmp_path) -> None:
    body = tmp_path / "filter.json"
    body.write_text(json.dumps(NOTION_FILTER))
    result = run_cli(f"{api.base_url}/post/notion/query?n=120", "--preset", "notion", "-X", "POST",
                     "--data", f"@{body}", "--page-size", "50")
    assert result.returncode == 0, result.stderr
    assert [item["id"] for item in lines(result.stdout)] == notion_ids(120)
    query = tmp_path / "issues.graphql"
    query.write_text(EDGES)
    result = run_cli(f"{api.base_url}/post/graphql?n=130", "--graphql", str(query), "--connection", CONNECTION,
                     "--var", "owner=octo", "--page-size", "60")
    assert result.returncode == 0, result.stderr
    assert [item["number"] for item in lines(result.stdout)] == list(range(1, 131))
    result = run_cli(f"{api.base_url}/post/graphql?n=130&error_at=70", "--graphql", str(query),
                     "--connection", CONNECTION, "--var", "owner=octo", "--page-size", "60")
    assert result.returncode == 3
    assert b"the GraphQL answer has errors: Something went wrong" in result.stderr
    assert len(lines(result.stdout)) == 60
    result = run_cli(f"{api.base_url}/post/graphql?n=130", "--connection", CONNECTION)
    assert result.returncode == 2 and b"--graphql and --connection go together" in result.stderr


@pytest.mark.parametrize("path,parts", [
    ("/post/notion/query?n=250&ignore_cursor=1", {"preset": "notion", "json": {}}),
    ("/post/es/_search?n=50&ignore_cursor=1", {"preset": "elasticsearch", "json": {}}),
    ("/post/graphql?n=230&ignore_cursor=1", {"graphql": NODES, "connection": CONNECTION}),
], ids=["notion", "elasticsearch", "graphql"])
def test_a_server_that_ignores_the_cursor_in_the_body_never_ends_ok(api, path: str, parts: Dict[str, Any]) -> None:
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.PolicyError, match="repeats the items of page 1"):
            client.fetch_all(path, **parts)


def test_a_post_list_stopped_early_resumes_exactly_and_only_with_its_own_body(api) -> None:
    parts = {"graphql": NODES, "connection": CONNECTION, "variables": {"owner": "octo"}}
    with sheaf.Client(api.base_url) as client:
        first = client.fetch_all("/post/graphql?n=230", max_items=150, **parts)
        rest = client.fetch_all("/post/graphql?n=230", resume=first.resume_token, **parts)
        assert [item["number"] for item in list(first) + list(rest)] == list(range(1, 231))
        payload = first.resume_token.split(".", 1)[1]
        decoded = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
        assert "octo" not in decoded and "hasNextPage endCursor" not in decoded, decoded
        with pytest.raises(sheaf.UsageError, match="another list"):
            client.fetch_all("/post/graphql?n=230", resume=first.resume_token,
                             **{**parts, "variables": {"owner": "someone-else"}})


COMMENTED = ISSUES % "nodes { id number comments(first: 5) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } }"
COMMENTS = """query($id: ID!, $first: Int!, $after: String) {
  node(id: $id) { ... on Issue { comments(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } }
}"""


def comment_count(number: int, most: int = 22) -> int:
    return (number * 7) % (most + 1)


def test_nested_connections_are_completed_exactly(api) -> None:
    with sheaf.Client(api.base_url, concurrency=16) as client:
        items = client.fetch_all("/post/graphql?n=230", graphql=COMMENTED, connection=CONNECTION,
                                 variables={"owner": "octo"}, nested={"/comments": {"query": COMMENTS, "page_size": 7}})
    assert [item["number"] for item in items] == list(range(1, 231))
    for item in items:
        comments = item["comments"]
        assert [c["id"] for c in comments["nodes"]] == [f"IC_{item['number']}_{k}" for k in range(1, comment_count(item["number"]) + 1)]
        assert comments["totalCount"] == len(comments["nodes"]) and comments["pageInfo"]["hasNextPage"] is False
    # The fewest requests: 3 pages of issues, and for each issue with more than 5 comments,
    # one page of 7 per 7 comments past the fifth.
    nested = sum(-(-(comment_count(i) - 5) // 7) for i in range(1, 231) if comment_count(i) > 5)
    sent = bodies(api)
    assert len(sent) == 3 + nested
    assert all(body["variables"].keys() == {"id", "after", "first"} for body in sent if "node(" in body["query"])


def test_a_nested_connection_that_fails_fails_the_list_naming_the_node(api) -> None:
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.APIError) as failed:
            client.fetch_all("/post/graphql?n=230&nested_fail=150", graphql=COMMENTED, connection=CONNECTION,
                             nested={"/comments": COMMENTS})
    assert 'the nested connection /comments of the node with id "I_kwDO00000150"' in str(failed.value)
    assert "Resource not accessible by integration" in str(failed.value)
    assert [item["number"] for item in failed.value.items] == list(range(1, len(failed.value.items) + 1))
    assert len(failed.value.items) <= 100


def test_the_cli_completes_nested_connections(api, tmp_path) -> None:
    (tmp_path / "issues.graphql").write_text(COMMENTED)
    (tmp_path / "comments.graphql").write_text(COMMENTS)
    result = run_cli(f"{api.base_url}/post/graphql?n=120", "--graphql", str(tmp_path / "issues.graphql"),
                     "--connection", CONNECTION, "--var", "owner=octo",
                     "--nested", f"/comments={tmp_path / 'comments.graphql'}")
    assert result.returncode == 0, result.stderr
    written = lines(result.stdout)
    assert [item["number"] for item in written] == list(range(1, 121))
    assert all(len(item["comments"]["nodes"]) == comment_count(item["number"]) for item in written)


def test_a_server_that_ignores_the_nested_cursor_never_ends_ok(api) -> None:
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.PolicyError, match="repeats the node .* it held: the server ignores the cursor variable after"):
            client.fetch_all("/post/graphql?n=120&ignore_cursor=1", graphql=COMMENTED, connection=CONNECTION,
                             nested={"/comments": COMMENTS}, max_pages=1)
