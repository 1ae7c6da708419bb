//! The static file server for `dist/`, for `serve` and the browser tests:
//! tower-http's `ServeDir` on axum, serving each file's precompressed `.br`
//! or `.gz` neighbour (written by `cargo xtask build`) with the matching
//! `Content-Encoding` when the browser accepts it. It can mount the site
//! under a sub-path (`--base /kafkascope/`) to prove the build works on a
//! static host that is not at the root.
//!
//! Headers, as a static host such as GitHub Pages or a CDN would send them:
//! - `Access-Control-Allow-Origin: *` with every file: a page embedded in an
//!   iframe sandboxed with `allow-scripts` only has an opaque origin, so even
//!   its own module script and wasm are CORS requests (`Origin: null`) that
//!   fail without that header;
//! - `Cache-Control: public, max-age=31536000, immutable` for files whose
//!   names carry a content hash (trunk's, and the simulator's module under
//!   `sim/`: a new build has new names), and `no-cache` (revalidate every
//!   time) for the rest: `index.html`, the service worker, the snippets.

use std::net::TcpListener;
use std::path::PathBuf;

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::services::ServeDir;

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

/// Serves `root` under `base` (`/` or `/name/`) on `listener` until the
/// process ends.
pub fn serve_forever(listener: TcpListener, root: PathBuf, base: String) {
    if let Err(error) = serve(listener, root, base) {
        eprintln!("xtask: the file server stopped: {error}");
    }
}

fn serve(listener: TcpListener, root: PathBuf, base: String) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    runtime.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        axum::serve(listener, site_router(root, base)).await
    })
}

/// The whole site: `dist/` under `base`, with the headers of the module
/// comment.
fn site_router(root: PathBuf, base: String) -> Router {
    let files = ServeDir::new(root)
        .precompressed_br()
        .precompressed_gzip()
        .append_index_html_on_directories(true);
    Router::new()
        .fallback_service(files)
        .layer(middleware::from_fn(move |request, next| {
            let base = base.clone();
            async move { under_base(&base, request, next).await }
        }))
}

/// Maps `base` to the folder's root, redirects the base without its slash,
/// refuses everything else, and adds the CORS, cache and `Vary` headers.
async fn under_base(base: &str, mut request: Request<Body>, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let query = request
        .uri()
        .query()
        .map(|query| format!("?{query}"))
        .unwrap_or_default();
    if format!("{path}/") == base {
        // The page's state is in its query: keep it.
        return (
            StatusCode::MOVED_PERMANENTLY,
            [(header::LOCATION, format!("{base}{query}"))],
        )
            .into_response();
    }
    let Some(relative) = path.strip_prefix(base) else {
        return (StatusCode::NOT_FOUND, "not under the site's base path").into_response();
    };
    let Ok(uri) = format!("/{relative}{query}").parse() else {
        return (StatusCode::BAD_REQUEST, "not a path").into_response();
    };
    *request.uri_mut() = uri;
    let mut response = next.run(request).await;
    let status = response.status();
    let headers = response.headers_mut();
    // ServeDir redirects a folder to its slash form from the path it saw,
    // which no longer has the base.
    if status.is_redirection() {
        let moved = headers
            .get(header::LOCATION)
            .and_then(|location| location.to_str().ok())
            .filter(|location| location.starts_with('/') && !location.starts_with(base))
            .and_then(|location| HeaderValue::from_str(&format!("{}{location}", base.trim_end_matches('/'))).ok());
        if let Some(location) = moved {
            headers.insert(header::LOCATION, location);
        }
    }
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    // Only a file found may be kept for a year: a missing one may appear.
    let found = status.is_success() || status == StatusCode::NOT_MODIFIED;
    let cache = if found && has_content_hash(&path) {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

/// Whether a file name carries trunk's content hash, such as
/// `styles-a67b8fc232b2103b.css` or `kafkascope-web-ee7e4fe63b824edc_bg.wasm`:
/// lowercase hex digits after a dash, then `.` or `_bg.`. Trunk writes the
/// hash, a 64-bit number, in hex without leading zeros, so it is up to
/// sixteen digits and sometimes fewer (`kafkascope-web-c941b002064ca4c_bg.wasm`);
/// ten or more count, which no hand-named file here has.
pub fn has_content_hash(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.match_indices('-').any(|(dash, _)| {
        let rest = &name[dash + 1..];
        let digits = rest
            .bytes()
            .take_while(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
            .count();
        (10..=16).contains(&digits) && (rest[digits..].starts_with('.') || rest[digits..].starts_with("_bg."))
    })
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// A site folder (`name` keeps the tests apart) with one hashed file and its precompressed copies, served
    /// under `/kafkascope/`; returns the address.
    fn serve_test_site(name: &str) -> (std::net::SocketAddr, PathBuf) {
        let root = std::env::temp_dir().join(format!("kafkascope-serve-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("index.html"), "<!doctype html>").unwrap();
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(root.join("pkg/index.html"), "<!doctype html>").unwrap();
        std::fs::write(root.join("app-0123456789abcdef_bg.wasm"), b"\0asm raw").unwrap();
        std::fs::write(root.join("app-0123456789abcdef_bg.wasm.gz"), b"gzipped").unwrap();
        std::fs::write(root.join("app-0123456789abcdef_bg.wasm.br"), b"brotli").unwrap();
        let listener = bind(Some(0)).unwrap();
        let address = listener.local_addr().unwrap();
        let served = root.clone();
        std::thread::spawn(move || serve_forever(listener, served, "/kafkascope/".into()));
        (address, root)
    }

    /// One HTTP/1.1 request; returns the head (lower-cased) and the body.
    fn get(address: std::net::SocketAddr, path: &str, accept_encoding: &str) -> (String, Vec<u8>) {
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: {accept_encoding}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let split = response.windows(4).position(|window| window == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
        (head, response[split + 4..].to_vec())
    }

    #[test]
    fn serves_the_precompressed_file_the_browser_accepts_with_long_caching_for_hashed_names() {
        let (address, root) = serve_test_site("encoding");
        let wasm = "/kafkascope/app-0123456789abcdef_bg.wasm";
        let (head, body) = get(address, wasm, "gzip, deflate, br");
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(head.contains("\r\ncontent-encoding: br"), "{head}");
        assert!(head.contains("\r\ncontent-type: application/wasm"), "{head}");
        assert!(
            head.contains("\r\ncache-control: public, max-age=31536000, immutable"),
            "{head}"
        );
        assert!(head.contains("\r\nvary: accept-encoding"), "{head}");
        assert_eq!(body, b"brotli");
        let (head, body) = get(address, wasm, "gzip");
        assert!(head.contains("\r\ncontent-encoding: gzip"), "{head}");
        assert_eq!(body, b"gzipped");
        let (head, body) = get(address, wasm, "identity");
        assert!(!head.contains("content-encoding"), "{head}");
        assert_eq!(body, b"\0asm raw");
        // The page itself is revalidated every time, and an opaque origin may
        // load it (see the module comment).
        let (head, _) = get(address, "/kafkascope/", "gzip");
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(head.contains("\r\ncache-control: no-cache"), "{head}");
        assert!(head.contains("\r\naccess-control-allow-origin: *"), "{head}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn serves_only_under_the_base_and_never_above_the_folder() {
        let (address, root) = serve_test_site("base");
        assert!(get(address, "/elsewhere/x", "").0.starts_with("http/1.1 404"));
        let (head, _) = get(address, "/kafkascope?story=happy-path&step=3", "");
        assert!(head.starts_with("http/1.1 301"), "{head}");
        assert!(
            head.contains("\r\nlocation: /kafkascope/?story=happy-path&step=3\r\n"),
            "{head}"
        );
        // A folder without its slash is sent to its slash form under the base.
        let (head, _) = get(address, "/kafkascope/pkg", "");
        assert!(head.contains("\r\nlocation: /kafkascope/pkg/"), "{head}");
        // A missing hashed name is not cached for a year.
        let (head, _) = get(address, "/kafkascope/app-fedcba9876543210.js", "");
        assert!(head.starts_with("http/1.1 404"), "{head}");
        assert!(head.contains("\r\ncache-control: no-cache"), "{head}");
        for climb in ["/kafkascope/../Cargo.toml", "/kafkascope/%2e%2e/Cargo.toml"] {
            let (head, _) = get(address, climb, "");
            assert!(!head.starts_with("http/1.1 200"), "{climb}: {head}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn knows_which_names_carry_a_content_hash() {
        assert!(has_content_hash("/kafkascope/styles-a67b8fc232b2103b.css"));
        assert!(has_content_hash("kafkascope-web-ee7e4fe63b824edc_bg.wasm"));
        assert!(has_content_hash("kafkascope-web-ee7e4fe63b824edc.js"));
        assert!(!has_content_hash("/kafkascope/index.html"));
        assert!(!has_content_hash("/kafkascope/sw.js"));
        assert!(!has_content_hash("/kafkascope/pkg/kafkascope_js_bg.wasm"));
        assert!(!has_content_hash("app-0123456789ABCDEF.js"));
        // Trunk drops a hash's leading zeros.
        assert!(has_content_hash("kafkascope-web-c941b002064ca4c_bg.wasm"));
        assert!(has_content_hash("/kafkascope/kafkascope-web-c941b002064ca4c.js"));
        assert!(!has_content_hash("kafkascope-element.js"));
        assert!(!has_content_hash("app-abc.js"));
        // wasm-bindgen's snippet folders are named after the crate, not the
        // content: their files are revalidated.
        assert!(!has_content_hash(
            "snippets/kafkascope-web-42bda7d74a9816d8/js/sandbox.js"
        ));
    }
}
