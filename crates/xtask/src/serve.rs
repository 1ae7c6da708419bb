//! A small static file server for `dist/`, for `serve` and the browser
//! tests. It can mount the site under a sub-path (`--base /kafkascope/`) to
//! prove the build works on a static host that is not at the root.
//!
//! Like GitHub Pages, it sends `Access-Control-Allow-Origin: *` with every
//! file: a page embedded in an iframe sandboxed with `allow-scripts` only
//! has an opaque origin, so even its own module script and wasm are CORS
//! requests (`Origin: null`) that fail without that header.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::{setup, site, Options, Outcome};

/// `cargo xtask serve`: install, build, print the URL, serve until stopped.
pub fn serve_command(options: &Options) -> Outcome {
    let toolchain = setup::ensure_web_build_tools()?;
    let dist = site::build_release(&toolchain)?;
    let listener = bind(options.port)?;
    let port = listener.local_addr().map_err(|error| error.to_string())?.port();
    println!(
        "\nkafkascope is being served at http://127.0.0.1:{port}{}",
        options.base
    );
    println!("(press Ctrl+C to stop)");
    serve_forever(listener, dist, options.base.clone());
    Ok(())
}

/// Binds 127.0.0.1 on `port`, or on the first free port from 8080.
pub fn bind(port: Option<u16>) -> Outcome<TcpListener> {
    match port {
        Some(port) => TcpListener::bind(("127.0.0.1", port))
            .map_err(|error| format!("cannot listen on 127.0.0.1:{port}: {error}")),
        None => (8080..8180)
            .find_map(|port| TcpListener::bind(("127.0.0.1", port)).ok())
            .ok_or_else(|| "no free port between 8080 and 8179 on 127.0.0.1".to_string()),
    }
}

/// Serves `root` under `base` on `listener`, one thread per connection.
pub fn serve_forever(listener: TcpListener, root: PathBuf, base: String) {
    let root = Arc::new(root);
    let base = Arc::new(base);
    for stream in listener.incoming().flatten() {
        let root = Arc::clone(&root);
        let base = Arc::clone(&base);
        std::thread::spawn(move || {
            let _ = handle(stream, &root, &base);
        });
    }
}

fn handle(mut stream: TcpStream, root: &Path, base: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        // Skip the headers; we need none of them.
        let mut keep_alive = true;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
                break;
            }
            if header.to_ascii_lowercase().starts_with("connection: close") {
                keep_alive = false;
            }
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("");
        let target = parts.next().unwrap_or("/");
        let response = respond(method, target, root, base);
        stream.write_all(&response)?;
        if !keep_alive {
            return Ok(());
        }
    }
}

fn respond(method: &str, target: &str, root: &Path, base: &str) -> Vec<u8> {
    if method != "GET" && method != "HEAD" {
        return plain(405, "Method Not Allowed", "only GET and HEAD");
    }
    let path = target.split(['?', '#']).next().unwrap_or("/");
    if format!("{path}/") == base {
        return redirect(base);
    }
    let Some(relative) = path.strip_prefix(base) else {
        return plain(404, "Not Found", "not under the site's base path");
    };
    let Some(file) = resolve(root, relative) else {
        return plain(404, "Not Found", "no such file");
    };
    match std::fs::read(&file) {
        Ok(body) => {
            let mut response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\n{ALLOW_ANY_ORIGIN}\r\n",
                content_type(&file),
                body.len()
            )
            .into_bytes();
            if method == "GET" {
                response.extend(body);
            }
            response
        }
        Err(_) => plain(404, "Not Found", "no such file"),
    }
}

/// The CORS header every file is served with (see the module comment).
const ALLOW_ANY_ORIGIN: &str = "Access-Control-Allow-Origin: *\r\n";

/// Maps a URL path below the base to a file under `root`, refusing `..`.
fn resolve(root: &Path, relative: &str) -> Option<PathBuf> {
    let decoded = percent_decode(relative)?;
    let mut path = root.to_path_buf();
    for component in Path::new(&decoded).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if path.is_dir() {
        path.push("index.html");
    }
    path.is_file().then_some(path)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|extension| extension.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("txt" | "md") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn plain(status: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn redirect(location: &str) -> Vec<u8> {
    format!("HTTP/1.1 301 Moved Permanently\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_that_climb_out_of_the_root() {
        let root = std::env::temp_dir();
        assert!(resolve(&root, "../etc/passwd").is_none());
        assert!(resolve(&root, "%2e%2e/etc/passwd").is_none());
    }

    #[test]
    fn serves_only_under_the_base() {
        let root = std::env::temp_dir();
        let response = String::from_utf8(respond("GET", "/elsewhere/x", &root, "/kafkascope/")).unwrap();
        assert!(response.starts_with("HTTP/1.1 404"));
        let response = String::from_utf8(respond("GET", "/kafkascope", &root, "/kafkascope/")).unwrap();
        assert!(response.starts_with("HTTP/1.1 301"));
    }

    #[test]
    fn lets_an_opaque_origin_load_the_files() {
        let root = std::env::temp_dir().join(format!("kafkascope-serve-test-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("index.html"), "<!doctype html>").unwrap();
        let response = String::from_utf8(respond("GET", "/kafkascope/", &root, "/kafkascope/")).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        let head = response.split("\r\n\r\n").next().unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("\r\nAccess-Control-Allow-Origin: *"), "{head}");
    }
}
