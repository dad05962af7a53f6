//! examples/merged.rs against the test server: its GET /items is the upstream's whole list.

mod common;

use common::{client, expected_items, server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The example's binary: `cargo test` builds the examples beside the test binaries.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples").join("merged");
    assert!(path.exists(), "{} is missing: cargo build --examples builds it", path.display());
    path
}

fn get(address: &str, target: &str) -> (String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(stream, "GET {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    (head.lines().next().unwrap().to_string(), body.to_string())
}

#[test]
fn merged_serves_the_whole_upstream_list() {
    let path = "anchor?n=437&per_page=30";
    let mut child =
        Command::new(example()).args([server().url().as_str(), path]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let address = line.trim().strip_prefix("LISTENING http://").and_then(|a| a.strip_suffix('/')).map(str::to_string);
    let result = std::panic::catch_unwind(|| {
        let address = address.expect("LISTENING http://ADDRESS/");
        let (status, body) = get(&address, "/items");
        assert_eq!(status, "HTTP/1.1 200 OK");
        let upstream = client().list(path).unwrap().fetch_all().unwrap();
        assert_eq!(upstream.items, expected_items(437));
        assert_eq!(body, upstream.json, "the service's list is the upstream's");
        let compact: String = body.split_whitespace().collect();
        assert_eq!(compact, format!("[{}]", expected_items(437).join(",")));
        assert_eq!(get(&address, "/other").0, "HTTP/1.1 404 Not Found");
    });
    child.kill().unwrap();
    child.wait().unwrap();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
