//! The safe API against the project's test server (Tests/server/api_server.py).

mod common;

use common::{client, expected_items, ids, server, stat};
use sheaf::{Auth, Budget, ClientOption, StopReason};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn a_link_header_list_arrives_whole_and_in_order() {
    let items = client().list("conv/github?n=95").unwrap().fetch_all().unwrap();
    assert_eq!(items.items, expected_items(95));
    assert_eq!(items.stop_reason, StopReason::Complete);
    assert_eq!(items.resume_token, None);
    assert!(items.json.starts_with('['));
}

#[test]
fn a_full_page_that_says_nothing_of_more_ends_unconfirmed() {
    let items = client().list("conv/github?n=95&link=none").unwrap().fetch_all().unwrap();
    assert_eq!(items.items, expected_items(30));
    assert_eq!(items.stop_reason, StopReason::Unconfirmed);
    let short = client().list("conv/github?n=27&link=none").unwrap().fetch_all().unwrap();
    assert_eq!(short.stop_reason, StopReason::Complete);
}

#[test]
fn a_body_next_list_arrives_whole_and_in_order() {
    let items = client().list("drf?n=237&page_size=20").unwrap().fetch_all().unwrap();
    assert_eq!(ids(&items.items), (0..237).collect::<Vec<_>>());
    assert_eq!(items.stop_reason, StopReason::Complete);
}

#[test]
fn page_numbers_with_totals_iterate_in_order() {
    let mut list = client().list("conv/fastapi-page?n=173&size=10").unwrap();
    list.query("latency_ms", "2").unwrap();
    let mut iter = list.items().unwrap();
    let items: Vec<String> = iter.by_ref().map(|item| item.unwrap()).collect();
    assert_eq!(items, expected_items(173));
    assert_eq!(iter.stop_reason(), StopReason::Complete);
    assert_eq!(iter.resume_token(), None);
    assert_eq!(iter.status().expected_items, Some(173));
}

#[test]
fn a_preset_and_a_description_pin_the_list() {
    assert!(sheaf::presets().iter().any(|p| p == "github"));
    let mut list = client().list("conv/github?n=61").unwrap();
    list.preset("github").unwrap();
    assert!(list.description().unwrap().contains("\"github\""));
    assert_eq!(list.fetch_all().unwrap().items, expected_items(61));

    let mut list = client().list("anchor?n=130").unwrap();
    list.set_description(
        r#"{"paging": {"kind": "page_number", "param": "page", "first": 1, "size_param": "per_page", "size": 25},
            "signals": {"items": {"source": "body", "where": "/items"}, "total": {"source": "body", "where": "/total"}}}"#,
    )
    .unwrap();
    assert_eq!(list.fetch_all().unwrap().items, expected_items(130));

    let mut list = client().list("anchor").unwrap();
    let error = list.set_description(r#"{"paging": {"kind": "sideways"}}"#).unwrap_err();
    assert_eq!(error.code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    assert!(error.message.contains("/paging/kind"), "{error}");
}

#[test]
fn an_item_limit_stops_with_a_resume_token_that_goes_on() {
    let path = "anchor?n=300&per_page=50";
    let mut list = client().list(path).unwrap();
    list.max_items(120).unwrap();
    let first = list.fetch_all().unwrap();
    assert_eq!(first.stop_reason, StopReason::ItemLimit);
    assert_eq!(first.items, expected_items(120));
    let token = first.resume_token.expect("a resume token after an item limit");
    assert!(token.starts_with("sheaf-resume-1."), "{token}");

    let mut rest = client().list(path).unwrap();
    rest.resume(&token).unwrap();
    let rest = rest.fetch_all().unwrap();
    assert_eq!(rest.stop_reason, StopReason::Complete);
    assert_eq!([first.items, rest.items].concat(), expected_items(300));
}

#[test]
fn a_spent_quota_is_rate_limited_with_the_items_paid_for() {
    let mut client = client();
    client.set_option(ClientOption::MaxWaitMs, 0).unwrap();
    let partial = client.list("anchor?n=500&per_page=10&quota=12:3600").unwrap().fetch_all_partial().unwrap_err();
    assert_eq!(partial.error.code, sheaf::sys::SHEAF_E_RATE_LIMITED);
    assert!(partial.error.to_string().contains("the server's core limit of 12 requests is spent"), "{}", partial.error);
    let count = partial.items.items.len() as i64;
    assert!(count > 0 && count <= 120, "{count}");
    assert_eq!(partial.items.items, expected_items(count));
    assert!(partial.error.resume_token.is_some());
}

#[test]
fn a_cached_resync_is_answered_not_modified() {
    // Only this test asks for etag= pages: the server's count of 304s is its own.
    let folder = std::env::temp_dir().join(format!("sheaf-rust-cache-{}", std::process::id()));
    let path = "anchor?n=95&per_page=10&etag=1&x=rust";
    let mut runs = Vec::new();
    for _ in 0..2 {
        let before = stat("not_modified");
        let mut client = client();
        client.set_cache(Some(&folder), 0).unwrap();
        let items = client.list(path).unwrap().fetch_all().unwrap();
        runs.push((items.items, stat("not_modified") - before));
    }
    assert_eq!(runs[0].0, expected_items(95));
    assert_eq!(runs[1].0, runs[0].0);
    assert_eq!((runs[0].1, runs[1].1), (0, 10), "the second run's ten pages were 304s");
    let mut bad = client();
    assert!(bad.set_cache(Some(&folder.join("key")), 0).is_err(), "a file is no cache folder");
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn a_page_budget_stops_with_its_reason() {
    let mut list = client().list("anchor?n=300&per_page=50").unwrap();
    list.budget(Budget::Pages, 2).unwrap();
    let items = list.fetch_all().unwrap();
    assert_eq!(items.stop_reason, StopReason::PageBudget);
    assert_eq!(items.items, expected_items(100));
    assert!(items.resume_token.is_some());
}

#[test]
fn cancel_from_another_thread_ends_the_iterator() {
    let mut client = client();
    client.set_window(1, false).unwrap();
    let list = client.list("anchor?n=5000&per_page=10&latency_ms=100").unwrap();
    let mut iter = list.items().unwrap();
    let canceller = iter.canceller();
    let first = iter.next().unwrap().unwrap();
    assert_eq!(first, expected_items(1)[0]);
    let started = Instant::now();
    let thread = std::thread::spawn(move || canceller.cancel());
    let rest: Vec<_> = iter.by_ref().collect();
    thread.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "the iterator did not end soon after the cancel");
    let last = rest.last().expect("the cancel ends the iterator with an error");
    let error = last.as_ref().unwrap_err();
    assert!(error.is_cancelled(), "{error:?}");
    assert!(rest.len() < 4999, "{} items came after the cancel", rest.len());
    assert!(rest[..rest.len() - 1].iter().all(|item| item.is_ok()));
    assert_eq!(iter.stop_reason(), StopReason::Failed);
    assert!(iter.resume_token().is_some());
    assert!(iter.next().is_none());
}

#[test]
fn an_http_error_is_an_error_with_its_status() {
    let error = client().list("status?code=404").unwrap().fetch_all().unwrap_err();
    assert_eq!(error.code, sheaf::sys::SHEAF_E_HTTP);
    assert_eq!(error.http_status, 404);
    assert!(error.url.contains("/status?code=404"), "{}", error.url);
    assert!(!error.to_string().is_empty());

    let error = client().get("req/error/drf").unwrap().send().unwrap_err();
    assert_eq!((error.code, error.http_status), (sheaf::sys::SHEAF_E_HTTP, 403));
    assert!(error.server_message.contains("permission"), "{error:?}");
    assert!(error.body.contains("detail"), "{error:?}");
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error);
    assert!(boxed.to_string().contains("403") || boxed.to_string().contains("permission"), "{boxed}");

    let response = client().get("req/echo?status=418").unwrap().send_any_status().unwrap();
    assert_eq!(response.status, 418);
}

#[test]
fn a_request_sends_its_segments_query_headers_and_body() {
    let response = client()
        .request("POST", "req/echo")
        .unwrap()
        .segment("a/b c")
        .unwrap()
        .query("q", "x y")
        .unwrap()
        .header("X-Rust", "yes")
        .unwrap()
        .json(r#"{"hello": "world"}"#)
        .unwrap()
        .send()
        .unwrap();
    assert_eq!(response.status, 200);
    assert!(response.header("content-type").unwrap().starts_with("application/json"));
    let echo = response.text();
    assert!(echo.contains(r#""method": "POST""#) || echo.contains(r#""method":"POST""#), "{echo}");
    assert!(echo.contains("a%2Fb%20c"), "{echo}");
    assert!(echo.contains("x y") || echo.contains("x+y"), "{echo}");
    assert!(echo.contains("x-rust"), "{echo}");
    assert!(echo.contains("hello"), "{echo}");
    assert!(response.url.contains("/req/echo/a%2Fb%20c"), "{}", response.url);
}

#[test]
fn a_download_writes_the_file() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("download-{}", std::process::id()));
    let path = dir.join("sub/file.bin");
    let response = client().get("req/download?size=300000").unwrap().output_file(&path).unwrap().send().unwrap();
    assert_eq!(response.status, 200);
    assert!(response.body.is_empty());
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 300000);
    assert!(bytes.iter().enumerate().all(|(i, b)| *b as usize == i % 251));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn credentials_never_appear_in_errors() {
    let secret = "sheaf-rust-secret-7f3a";
    let mut c = client();
    c.set_bearer(secret).unwrap();
    let error = c.list("anchor?n=10&bearer=another-token").unwrap().fetch_all().unwrap_err();
    assert_eq!(error.http_status, 401);
    let all = format!("{error} {error:?}");
    assert!(!all.contains(secret), "{all}");

    let mut c = client();
    c.set_option(ClientOption::MaxAttempts, 1).unwrap();
    c.set_auth(&Auth::Basic { user: "rusty".into(), password: secret.into() }).unwrap();
    let error = c.get("status?code=401").unwrap().send().unwrap_err();
    let all = format!("{error} {error:?}");
    assert!(!all.contains(secret) && !all.contains("cnVzdHk6"), "{all}"); // nor base64("rusty:")

    c.set_auth(&Auth::ApiKeyQuery { name: "api_key".into(), value: secret.into() }).unwrap();
    let error = c.get("status?code=500").unwrap().send().unwrap_err();
    assert_eq!(error.http_status, 500);
    let all = format!("{error} {error:?}");
    assert!(!all.contains(secret), "{all}");
    assert!(!format!("{:?}", Auth::Bearer(secret.into())).contains(secret));
}

#[test]
fn a_client_is_shared_by_threads() {
    let client = Arc::new(client());
    let threads: Vec<_> = (0..4)
        .map(|k| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || {
                client.list(&format!("anchor?n={}&per_page=20", 50 + k)).unwrap().fetch_all().unwrap()
            })
        })
        .collect();
    for (k, thread) in threads.into_iter().enumerate() {
        assert_eq!(thread.join().unwrap().items, expected_items(50 + k as i64));
    }
}

#[test]
fn the_log_hook_gets_records_and_a_panic_in_it_stays_in_rust() {
    let records = Arc::new(Mutex::new(Vec::new()));
    let mut c = client();
    let seen = Arc::clone(&records);
    c.set_log(sheaf::sys::SHEAF_LOG_INFO, move |record| seen.lock().unwrap().push(record.message.clone())).unwrap();
    c.list("anchor?n=60&per_page=20").unwrap().fetch_all().unwrap();
    c.flush_hooks().unwrap();
    assert!(records.lock().unwrap().iter().any(|m| m.contains("/anchor")), "{:?}", records.lock().unwrap());
    drop(c);

    // The panics below are expected: keep them out of the test's output (any other still shows).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&"a hook that panics") {
            default_hook(info)
        }
    }));
    let mut c = client();
    c.set_log(sheaf::sys::SHEAF_LOG_DEBUG, |_| panic!("a hook that panics")).unwrap();
    assert_eq!(c.list("anchor?n=30").unwrap().fetch_all().unwrap().items, expected_items(30));
    c.flush_hooks().unwrap();
}

#[test]
fn a_bad_argument_is_an_error_not_a_panic() {
    assert_eq!(sheaf::Client::new("not a url").unwrap_err().code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    assert_eq!(sheaf::Client::new("http://h/\0").unwrap_err().code, sheaf::sys::SHEAF_E_INVALID_ARGUMENT);
    let mut c = client();
    assert!(c.set_option(ClientOption::Window, 1000).is_err());
    assert!(c.add_header("Content-Length", "3").is_err());
    assert_eq!(sheaf::version(), sheaf::sys::SHEAF_VERSION_STRING);
    let _ = server();
}

#[test]
fn a_failure_mid_list_ends_the_iterator_after_the_items_before_it() {
    let mut c = client();
    c.set_window(1, false).unwrap();
    let mut list = c.list("anchor?n=100&per_page=10&garbage=4").unwrap();
    list.paging(&sheaf::Paging::Next).unwrap();
    let mut iter = list.items().unwrap();
    let results: Vec<_> = iter.by_ref().collect();
    let (last, items) = results.split_last().unwrap();
    let items: Vec<String> = items.iter().map(|item| item.clone().unwrap()).collect();
    assert_eq!(items, expected_items(30), "the three pages before the garbage one");
    let error = last.as_ref().unwrap_err();
    assert_eq!(error.code, sheaf::sys::SHEAF_E_BAD_PAGE, "{error:?}");
    assert!(error.resume_token.is_some());
    assert_eq!(iter.stop_reason(), StopReason::Failed);
}

#[test]
fn a_canceller_outlives_its_list_and_a_dropped_iterator_stops_the_list() {
    let list = client().list("anchor?n=5000&per_page=10&latency_ms=50").unwrap();
    let mut iter = list.items().unwrap();
    let canceller = iter.canceller();
    assert!(iter.next().unwrap().is_ok());
    let started = Instant::now();
    drop(iter); // cancels the list; the canceller keeps its memory
    canceller.cancel();
    let again = canceller.clone();
    std::thread::spawn(move || again.cancel()).join().unwrap();
    drop(canceller); // the C list is freed here
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The `"id":"ch_..."` of each of Stripe's items, in the order given.
fn charge_ids(items: &[String]) -> Vec<String> {
    items
        .iter()
        .map(|item| {
            let start = item.find("\"id\":\"").expect("an id") + 6;
            item[start..start + item[start..].find('"').unwrap()].to_string()
        })
        .collect()
}

#[test]
fn a_cursor_list_with_a_range_filter_is_read_in_pieces_each_item_once_in_order() {
    let path = "range/stripe?n=3000&limit=100&burst=200:3&latency_ms=5";
    let mut walked = client().list(path).unwrap();
    walked.set_description(r#"{"preset": "stripe", "split": null}"#).unwrap();
    let want = charge_ids(&walked.fetch_all().unwrap().items);
    assert_eq!(want.len(), 3000);

    let mut split = client().list(path).unwrap();
    split.preset("stripe").unwrap();
    let items = split.fetch_all().unwrap();
    assert_eq!(charge_ids(&items.items), want);
    assert_eq!(items.stop_reason, StopReason::Complete);

    // A page budget stops it; its token goes on exactly.
    let mut got = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..40 {
        let mut list = client().list(path).unwrap();
        list.preset("stripe").unwrap();
        list.budget(Budget::Pages, 5).unwrap();
        if let Some(token) = &token {
            list.resume(token).unwrap();
        }
        let items = list.fetch_all().unwrap();
        got.extend(charge_ids(&items.items));
        token = items.resume_token;
        if items.stop_reason == StopReason::Complete {
            break;
        }
        assert_eq!(items.stop_reason, StopReason::PageBudget);
    }
    assert_eq!(got, want);
}

#[test]
fn fetch_all_partial_hands_over_the_items_that_arrived_with_the_error() {
    // Page 3 answers 404 once: the run fails after pages 1 and 2, and a resumed run gets page 3.
    let path = "anchor?n=50&per_page=10&fail=3:1:404";
    let partial = client().list(path).unwrap().fetch_all_partial().unwrap_err();
    assert_eq!(partial.error.code, sheaf::sys::SHEAF_E_HTTP, "{:?}", partial.error);
    assert_eq!(partial.error.http_status, 404);
    assert_eq!(partial.items.items, expected_items(20), "the two pages before the failing one");
    assert!(partial.items.json.starts_with('['), "{}", partial.items.json);
    assert_eq!(partial.items.stop_reason, StopReason::Failed);
    let token = partial.items.resume_token.clone().expect("a resume token after a failure");
    assert_eq!(partial.error.resume_token.as_deref(), Some(token.as_str()));
    assert!(partial.to_string().contains("404"), "{partial}");
    assert!(std::error::Error::source(&partial).is_some());

    let mut rest = client().list(path).unwrap();
    rest.resume(&token).unwrap();
    let rest = rest.fetch_all_partial().unwrap();
    assert_eq!([partial.items.items.clone(), rest.items].concat(), expected_items(50));

    // `?` in a function returning sheaf::Error keeps the error (and drops the items).
    fn whole(path: &str) -> sheaf::Result<sheaf::Items> {
        Ok(client().list(path)?.fetch_all_partial()?)
    }
    let error = whole("anchor?n=50&per_page=10&fail=2:1:404").unwrap_err();
    assert_eq!((error.code, error.http_status), (sheaf::sys::SHEAF_E_HTTP, 404));

    // fetch_all is as it was: the error alone, with the token after the items that arrived.
    let error = client().list("anchor?n=50&per_page=10&fail=4:1:404").unwrap().fetch_all().unwrap_err();
    assert_eq!(error.http_status, 404);
    assert!(error.resume_token.is_some());
}

/// A token provider that gives `stale` first and `fresh` when asked to refresh, recording how it
/// was asked; `fail_on` (from 1) is a call that fails instead, by an error or a panic.
fn token_provider(
    stale: &'static str,
    fresh: &'static str,
    fail_on: Option<(usize, bool)>,
) -> (Arc<Mutex<Vec<bool>>>, impl FnMut(bool) -> Result<String, String> + Send + 'static) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&asked);
    let provider = move |refresh: bool| {
        let call = {
            let mut asked = record.lock().unwrap();
            asked.push(refresh);
            asked.len()
        };
        match fail_on {
            Some((n, true)) if n == call => panic!("the provider broke"),
            Some((n, false)) if n == call => Err("the token service is down".to_string()),
            _ => Ok(if refresh { fresh } else { stale }.to_string()),
        }
    };
    (asked, provider)
}

#[test]
fn a_token_provider_refreshes_after_a_401() {
    // bearer=: the server answers 401 unless "Bearer fresh-token" comes.
    let (asked, provider) = token_provider("stale-token", "fresh-token", None);
    let mut c = client();
    c.set_token_provider(provider).unwrap();
    let items = c.list("anchor?n=30&per_page=10&bearer=fresh-token").unwrap().fetch_all().unwrap();
    assert_eq!(items.items, expected_items(30));
    assert_eq!(*asked.lock().unwrap(), vec![false, true]);

    // A single request uses the token kept: the provider is not asked again.
    let response = c.get("anchor?n=3&bearer=fresh-token").unwrap().send().unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(*asked.lock().unwrap(), vec![false, true]);

    // A token that expires mid-list (pages 3 on need the fresh one) is refreshed once for the
    // window of pages refused together.
    let (asked, provider) = token_provider("stale-token", "fresh-token", None);
    let mut c = client();
    c.set_window(4, false).unwrap().set_token_provider(provider).unwrap();
    let items = c.list("anchor?n=100&per_page=10&bearer=fresh-token&bearer_from=3").unwrap().fetch_all().unwrap();
    assert_eq!(items.items, expected_items(100));
    assert_eq!(*asked.lock().unwrap(), vec![false, true]);
}

#[test]
fn a_token_provider_that_fails_is_an_error_and_a_panic_stays_in_rust() {
    let path = "anchor?n=30&per_page=10&bearer=fresh-token";
    let (_, provider) = token_provider("stale-token", "fresh-token", Some((1, false)));
    let mut c = client();
    c.set_token_provider(provider).unwrap();
    let error = c.list(path).unwrap().fetch_all().unwrap_err();
    assert_eq!(error.code, sheaf::sys::SHEAF_E_CREDENTIAL, "{error:?}");
    assert!(error.message.contains("the token service is down"), "{error}");

    let (asked, provider) = token_provider("stale-token", "fresh-token", Some((2, true)));
    let mut c = client();
    c.set_token_provider(provider).unwrap();
    let error = c.list(path).unwrap().fetch_all().unwrap_err();
    assert_eq!(error.code, sheaf::sys::SHEAF_E_CREDENTIAL, "{error:?}");
    assert!(error.message.contains("panicked"), "{error}");
    assert_eq!(*asked.lock().unwrap(), vec![false, true]);

    let mut c = client();
    c.set_token_provider(|_| Ok(String::new())).unwrap();
    assert_eq!(c.list(path).unwrap().fetch_all().unwrap_err().code, sheaf::sys::SHEAF_E_CREDENTIAL);

    // Refused again after the refresh: the second 401 is the answer, with no token in it.
    let (asked, provider) = token_provider("stale-token", "still-wrong", None);
    let mut c = client();
    c.set_token_provider(provider).unwrap();
    let error = c.list(path).unwrap().fetch_all().unwrap_err();
    assert_eq!((error.code, error.http_status), (sheaf::sys::SHEAF_E_HTTP, 401), "{error:?}");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("still-wrong") && !shown.contains("stale-token"), "{shown}");
    assert_eq!(*asked.lock().unwrap(), vec![false, true]);
}
