//! The project's loopback test API server (Tests/server/api_server.py), started once per test
//! binary on 127.0.0.1 with a free port (`--port 0`, which it prints as "PORT n").
//!
//! It runs with `--exit-on-stdin-eof` and its stdin is a pipe held by this process: when the
//! test binary ends (however it ends), the pipe closes and the server exits, so no server is
//! left behind. `SHEAF_TEST_PYTHON` chooses the Python (default `python3`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

pub struct Server {
    pub port: u16,
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
}

impl Server {
    /// The server's base URL, "http://127.0.0.1:PORT/".
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shared server of this test binary.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let python = std::env::var("SHEAF_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string());
        let mut child = Command::new(&python)
            .arg(repo().join("Tests/server/api_server.py"))
            .args(["--host", "127.0.0.1", "--port", "0", "--quiet", "--exit-on-stdin-eof"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start the test server with {python}: {error}"));
        let stdin = child.stdin.take().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("the server's PORT line");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the test server said {line:?}, not PORT n"));
        Server { port, _child: Mutex::new(child), _stdin: Mutex::new(stdin) }
    })
}

/// A counter of the server's /_stats ("requests", "not_modified", ...), read over a plain socket.
#[allow(dead_code)] // not every test binary reads one
pub fn stat(name: &str) -> i64 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server().port)).expect("the test server");
    stream.write_all(b"GET /_stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let key = format!("\"{name}\":");
    let at = answer.find(&key).unwrap_or_else(|| panic!("no {name} in {answer}")) + key.len();
    answer[at..].chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().unwrap()
}

/// A client of the shared server.
pub fn client() -> sheaf::Client {
    sheaf::Client::new(&server().url()).expect("a client")
}

/// The whole number after `"key":` in a JSON text.
pub fn number(item: &str, key: &str) -> i64 {
    let key = format!("\"{key}\"");
    let start = item.find(&key).unwrap_or_else(|| panic!("no {key} in {item}")) + key.len();
    let digits: String = item[start..]
        .chars()
        .skip_while(|c| *c == ':' || c.is_whitespace())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().unwrap()
}

/// The ids of items as the server writes them ({"id":i,"name":"item-i"}).
pub fn ids(items: &[String]) -> Vec<i64> {
    items.iter().map(|item| number(item, "id")).collect()
}

pub fn expected_items(n: i64) -> Vec<String> {
    (0..n).map(|i| format!("{{\"id\":{i},\"name\":\"item-{i}\"}}")).collect()
}
