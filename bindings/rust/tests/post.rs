//! Lists behind a POST (Tests/server/post_api.py): a Notion query, a GraphQL connection.

mod common;

use common::{client, number, server};
use sheaf::StopReason;
use std::io::{Read, Write};
use std::sync::Mutex;

/// The tests of this binary read the server's log of bodies: one at a time.
static LOG: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    let guard = LOG.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    control("POST", "/_reset");
    guard
}

/// The body of the server's answer to a control request, over a plain socket.
fn control(method: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server().port)).expect("the test server");
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"), "{method} {path}: {answer}");
    answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}

const FILTER: &str = r#"{"filter":{"number":{"greater_than_or_equal_to":1}}}"#;

#[test]
fn a_notion_query_is_posted_page_by_page() {
    let _one = one_at_a_time();
    let mut list = client().list("post/notion/query?n=250").unwrap();
    list.preset("notion").unwrap().body("POST", None, FILTER.as_bytes()).unwrap();
    let items = list.fetch_all().unwrap();
    assert_eq!(items.len(), 250);
    for (i, item) in items.items.iter().enumerate() {
        assert!(item.contains(&format!("-{:012}\"", i + 1)), "item {i} is {item}");
    }
    assert_eq!(items.stop_reason, StopReason::Complete);
    assert_eq!(items.resume_token, None);
    // Three pages, each with the caller's filter; the cursor set in the second and third.
    let log = control("GET", "/_post/log");
    assert_eq!(log.matches("greater_than_or_equal_to").count(), 3, "{log}");
    assert_eq!(log.matches("start_cursor").count(), 2, "{log}");
}

#[test]
fn post_json_is_a_post_of_a_json_body() {
    let _one = one_at_a_time();
    let mut list = client().list("post/notion/query?n=30").unwrap();
    list.preset("notion").unwrap().post_json(FILTER).unwrap();
    assert!(!list.description().unwrap().contains("greater_than_or_equal_to"), "the body is never in a description");
    assert_eq!(list.fetch_all().unwrap().len(), 30);
    assert_eq!(control("GET", "/_post/log").matches("greater_than_or_equal_to").count(), 1);
}

const QUERY: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { number title } }
  }
}";

fn variables() -> String {
    format!(r#"{{"owner": {}, "name": {}}}"#, sheaf::json_string("octo"), sheaf::json_string("repo"))
}

#[test]
fn a_graphql_connection_is_walked_by_its_cursor() {
    let _one = one_at_a_time();
    let edges = QUERY.replace("nodes { number title }", "edges { cursor node { number title } }");
    for query in [QUERY, edges.as_str()] {
        control("POST", "/_reset");
        let mut list = client().list("post/graphql?n=230").unwrap();
        list.graphql(query, &variables(), "/data/repository/issues").unwrap();
        assert!(list.description().unwrap().contains(r#""graphql":{"connection":"/data/repository/issues""#));
        let mut iter = list.items().unwrap();
        let items: Vec<String> = iter.by_ref().map(|item| item.unwrap()).collect();
        assert_eq!(items.iter().map(|item| number(item, "number")).collect::<Vec<_>>(), (1..=230).collect::<Vec<_>>());
        assert!(items[0].contains("\"Issue 1\""), "{}", items[0]);
        assert_eq!(iter.stop_reason(), StopReason::Complete);
        assert_eq!(iter.status().expected_items, Some(230));
        assert_eq!(iter.status().pages, 3);
        // The caller's query and variables, with first and after set in the variables.
        let log = control("GET", "/_post/log");
        assert_eq!(log.matches(r#"\"first\": 100"#).count() + log.matches(r#"\"first\":100"#).count(), 3, "{log}");
        assert_eq!(log.matches(r#"\"owner\""#).count(), 3, "{log}");
        assert_eq!(log.matches(r#"\"after\""#).count(), 2, "{log}");
    }
}

#[test]
fn graphql_keeps_what_the_description_said_of_the_connection() {
    let _one = one_at_a_time();
    let mut list = client().list("post/graphql?n=230").unwrap();
    list.set_description(r#"{"graphql": {"connection": "/data/other", "page_size": 40}}"#).unwrap();
    list.graphql(QUERY, &variables(), "/data/repository/issues").unwrap();
    let mut iter = list.items().unwrap();
    let numbers: Vec<i64> = iter.by_ref().map(|item| number(&item.unwrap(), "number")).collect();
    assert_eq!(numbers, (1..=230).collect::<Vec<_>>());
    assert_eq!(iter.status().pages, 6, "40 a page");
}

#[test]
fn a_graphql_error_fails_with_the_items_before_it() {
    let _one = one_at_a_time();
    let mut list = client().list("post/graphql?n=230&error_at=150").unwrap();
    list.graphql(QUERY, &variables(), "/data/repository/issues").unwrap();
    let partial = list.fetch_all_partial().unwrap_err();
    assert_eq!(partial.error.code, sheaf::sys::SHEAF_E_API);
    assert_eq!(partial.error.code, 28);
    assert!(partial.error.message.contains("Something went wrong"), "{}", partial.error);
    assert_eq!(
        partial.items.items.iter().map(|item| number(item, "number")).collect::<Vec<_>>(),
        (1..=100).collect::<Vec<_>>()
    );
    assert_eq!(partial.items.stop_reason, StopReason::Failed);
    assert!(partial.error.resume_token.is_some());

    // With "allow_partial", the page's data is read and the list goes on.
    let mut list = client().list("post/graphql?n=230&error_at=150").unwrap();
    list.set_description(r#"{"graphql": {"connection": "/data/x", "allow_partial": true}}"#).unwrap();
    list.graphql(QUERY, &variables(), "/data/repository/issues").unwrap();
    assert_eq!(list.fetch_all().unwrap().len(), 230);
}

#[test]
fn what_the_library_refuses_of_a_body_is_an_error() {
    let _one = one_at_a_time();
    let mut list = client().list("post/notion/query").unwrap();
    assert_eq!(list.body("HEAD", None, b"").unwrap_err().code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    assert_eq!(
        list.graphql("{ viewer { login } }", "[1]", "/data/x").unwrap_err().code,
        sheaf::sys::SHEAF_E_INVALID_ARGUMENT
    );
    assert_eq!(list.graphql("{ viewer { login } }", "", "").unwrap_err().code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    let error = list.graphql("{ viewer { login } }", "", "/nodata").unwrap_err();
    assert_eq!(error.code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    assert!(error.message.contains("/graphql/connection"), "{error}");
    list.preset("notion").unwrap().body("POST", None, b"[1, 2]").unwrap();
    assert_eq!(list.fetch_all().unwrap_err().code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
}

const COMMENTED: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after) {
      totalCount pageInfo { hasNextPage endCursor }
      nodes { id number comments(first: 5) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } }
    }
  }
}";

const COMMENTS: &str = "query($id: ID!, $first: Int!, $after: String) {
  node(id: $id) { ... on Issue { comments(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } }
}";

/// Each issue's comments, cut short at 5 by the list's query, are completed by the nested query:
/// every issue in order, with all (number * 7) % 23 of its comments.
#[test]
fn nested_connections_are_completed() {
    let _one = one_at_a_time();
    for page_size in [None, Some(4)] {
        control("POST", "/_reset");
        let mut list = client().list("post/graphql?n=120").unwrap();
        list.graphql(COMMENTED, &variables(), "/data/repository/issues").unwrap();
        match page_size {
            None => list.nested("/comments", COMMENTS).unwrap(),
            Some(size) => list
                .nested_with(&sheaf::NestedConnection {
                    connection: Some("/data/node/comments"),
                    page_size: Some(size),
                    ..sheaf::NestedConnection::new("/comments", COMMENTS)
                })
                .unwrap(),
        };
        assert!(list.description().unwrap().contains(r#""nested":[{"field":"/comments""#));
        let items = list.fetch_all().unwrap();
        assert_eq!(
            items.items.iter().map(|item| number(item, "number")).collect::<Vec<_>>(),
            (1..=120).collect::<Vec<_>>()
        );
        let mut completed = 0;
        for item in &items.items {
            let issue = number(item, "number");
            let count = (issue * 7) % 23;
            assert!(item.contains(&format!(r#""id":"I_kwDO{issue:08}""#)), "{item}");
            let comments = &item[item.find("\"comments\"").unwrap()..];
            assert_eq!(number(comments, "totalCount"), count, "{item}");
            assert_eq!(comments.matches("\"IC_").count() as i64, count, "{item}");
            assert!(comments.contains(r#""hasNextPage":false"#), "{item}");
            if count > 0 {
                let last = format!("\"IC_{issue}_{count}\"");
                assert!(
                    comments.contains(&last) && !comments.contains(&format!("\"IC_{issue}_{}\"", count + 1)),
                    "{item}"
                );
                let last_at = comments.rfind("\"IC_").unwrap();
                assert!(comments[last_at..].starts_with(&last), "the last comment of {item}");
            }
            if count > 5 {
                completed += 1;
            }
        }
        assert_eq!(items.stop_reason, StopReason::Complete);
        // One nested query per issue with more than 5 comments (more with 4 a page), the node's id
        // and the page size in its variables.
        let log = control("GET", "/_post/log");
        let nested = log.matches("node(id: $id)").count();
        match page_size {
            None => assert_eq!(nested, completed, "{log}"),
            Some(_) => assert!(nested > completed, "{nested} nested queries for {completed} issues: {log}"),
        }
        let first = format!("{}", page_size.unwrap_or(100));
        assert_eq!(
            log.matches(&format!(r#"\"first\": {first}"#)).count()
                + log.matches(&format!(r#"\"first\":{first}"#)).count(),
            nested + if first == "100" { 2 } else { 0 },
            "{log}"
        );
    }
}

/// A nested query answered with an error fails the list with SHEAF_E_API, naming the node. Issue
/// 50 has 5 comments: the list's comments(first: 5) has them all, and no nested query is sent for
/// it; comments(first: 2) leaves 3 to the nested query, which fails.
#[test]
fn a_nested_connection_that_fails_fails_the_list() {
    let _one = one_at_a_time();
    let mut list = client().list("post/graphql?n=120&nested_fail=50").unwrap();
    list.graphql(COMMENTED, &variables(), "/data/repository/issues").unwrap().nested("/comments", COMMENTS).unwrap();
    assert_eq!(list.fetch_all().unwrap().len(), 120);

    let first_two = COMMENTED.replace("comments(first: 5)", "comments(first: 2)");
    let mut list = client().list("post/graphql?n=120&nested_fail=50").unwrap();
    list.graphql(&first_two, &variables(), "/data/repository/issues").unwrap().nested("/comments", COMMENTS).unwrap();
    let partial = list.fetch_all_partial().unwrap_err();
    assert_eq!(partial.error.code, sheaf::sys::SHEAF_E_API);
    assert!(partial.error.message.contains(r#"of the node with id "I_kwDO00000050""#), "{}", partial.error);
    assert!(partial.error.message.contains("Resource not accessible by integration"), "{}", partial.error);
    assert_eq!(partial.items.stop_reason, StopReason::Failed);
}

/// A nested connection goes with a GraphQL list, and has its field and query; one of the same
/// field replaces the description's; graphql() called again keeps them.
#[test]
fn nested_needs_a_graphql_list() {
    let _one = one_at_a_time();
    let mut list = client().list("post/graphql").unwrap();
    let error = list.nested("/comments", COMMENTS).unwrap_err();
    assert_eq!(error.code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    assert!(error.message.contains("List::graphql"), "{error}");
    assert_eq!(list.nested("", COMMENTS).unwrap_err().code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    list.set_description(
        r#"{"graphql": {"connection": "/data/x", "nested": [{"field": "/comments", "query": "old"}, {"field": "/labels", "query": "labels"}]}}"#,
    )
    .unwrap();
    list.nested("/comments", COMMENTS).unwrap().graphql(COMMENTED, &variables(), "/data/repository/issues").unwrap();
    let description = list.description().unwrap();
    assert!(!description.contains(r#""query":"old""#), "{description}");
    assert!(description.contains(r#""field":"/labels""#), "{description}");
    assert_eq!(description.matches(r#""field":"/comments""#).count(), 1, "{description}");
    assert!(description.contains(r#""connection":"/data/repository/issues""#), "{description}");
}
