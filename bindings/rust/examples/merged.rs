//! A small HTTP/1.1 service on `std::net` that answers `GET /items` with the whole merged
//! upstream paginated list as one JSON array (every page fetched by Sheaf, in order).
//!
//!     cargo run --example merged -- UPSTREAM_BASE_URL LIST_PATH [ADDRESS]
//!     cargo run --example merged -- https://api.github.com/ repos/rust-lang/rust/tags 127.0.0.1:8080
//!
//! It prints one line, "LISTENING http://ADDRESS/", once it accepts connections (ADDRESS
//! defaults to 127.0.0.1:0, a free port). Each connection gets a thread; the one
//! `sheaf::Client` is shared by them all (it is `Send + Sync`). `SHEAF_TOKEN`, when set, is
//! sent upstream as a bearer token. An upstream failure is answered 502 with the error's text.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: merged UPSTREAM_BASE_URL LIST_PATH [ADDRESS]");
        std::process::exit(2);
    }
    let mut client = sheaf::Client::new(&args[1]).unwrap_or_else(|error| fail(&error));
    if let Ok(token) = std::env::var("SHEAF_TOKEN") {
        client.set_bearer(&token).unwrap_or_else(|error| fail(&error));
    }
    let client = Arc::new(client);
    let path = Arc::new(args[2].clone());
    let listener =
        TcpListener::bind(args.get(3).map_or("127.0.0.1:0", String::as_str)).unwrap_or_else(|error| fail(&error));
    println!("LISTENING http://{}/", listener.local_addr().unwrap());
    std::io::stdout().flush().unwrap();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let (client, path) = (Arc::clone(&client), Arc::clone(&path));
        std::thread::spawn(move || {
            if let Err(error) = serve(stream, &client, &path) {
                eprintln!("merged: {error}");
            }
        });
    }
}

fn fail(error: &dyn std::fmt::Display) -> ! {
    eprintln!("merged: {error}");
    std::process::exit(1);
}

/// One request on one connection (then the connection closes).
fn serve(stream: TcpStream, client: &sheaf::Client, path: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        // The headers: nothing in them matters here.
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut words = request_line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = match (method, target) {
        ("GET", "/items") => match client.list(path).and_then(|list| list.fetch_all()) {
            Ok(items) => ("200 OK", items.json),
            Err(error) => ("502 Bad Gateway", format!("{{\"error\":{}}}", json_string(&error.to_string()))),
        },
        ("GET", _) => ("404 Not Found", "{\"error\":\"only /items is here\"}".to_string()),
        _ => ("405 Method Not Allowed", "{\"error\":\"only GET\"}".to_string()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
