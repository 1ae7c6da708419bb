//! `cargo xtask test`: every test, in four stages, stopping at the first
//! failing stage:
//!
//! 1. native unit and integration tests of every crate (`cargo test --workspace`);
//! 2. `#[wasm_bindgen_test]`s compiled to wasm32 and run in headless Chromium
//!    by `wasm-bindgen-test-runner` through ChromeDriver;
//! 3. the JavaScript package (`cargo xtask package`) tested from Node
//!    (`tests/node/*.test.mjs`) against the shared Kafka vectors;
//! 4. Playwright end-to-end tests (`tests/e2e/*.test.cjs`, Node's test
//!    runner) against the release build served on 127.0.0.1 under a
//!    sub-path, writing screenshots to `target/e2e-artifacts/`.

use std::path::PathBuf;
use std::process::Command;

use crate::process::run;
use crate::serve::{bind, serve_forever};
use crate::setup::{ensure_browser, ensure_web_build_tools, Browser, WebToolchain};
use crate::{repo_root, site, target_dir, Options, Outcome};

/// The sub-path the e2e tests load the site from, so that a build which only
/// works at `/` fails the tests.
const E2E_BASE: &str = "/kafkascope/";

pub fn test_command(_options: &Options) -> Outcome {
    let toolchain = ensure_web_build_tools()?;
    let browser = ensure_browser()?;
    native_tests()?;
    wasm_tests(&toolchain, &browser)?;
    package_tests(&toolchain)?;
    end_to_end_tests(&toolchain, &browser)
}

fn native_tests() -> Outcome {
    println!("\nxtask: [1/4] native tests");
    run(Command::new("cargo")
        .args(["test", "--workspace"])
        .current_dir(repo_root()))
}

fn wasm_tests(toolchain: &WebToolchain, browser: &Browser) -> Outcome {
    println!("\nxtask: [2/4] wasm tests in headless Chromium");
    run(toolchain
        .command("cargo")
        .args([
            "test",
            "--target",
            "wasm32-unknown-unknown",
            "--package",
            "kafkascope-js",
        ])
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", "wasm-bindgen-test-runner")
        .env("CHROMEDRIVER", &browser.chromedriver)
        .env("WASM_BINDGEN_TEST_TIMEOUT", "120")
        .current_dir(repo_root()))
}

fn package_tests(toolchain: &WebToolchain) -> Outcome {
    println!("\nxtask: [3/4] the JavaScript package, from Node");
    let package = crate::package::build_package(toolchain)?;
    let root = repo_root();
    let test_files = list_tests(&root.join("tests/node"), ".test.mjs")?;
    run(toolchain
        .command("node")
        .arg("--test")
        .args(&test_files)
        .env("KAFKASCOPE_PKG", &package)
        .env("KAFKASCOPE_VECTORS", kafka_vectors_dir())
        .current_dir(&root))
}

/// The same folder the engine's vector tests read: `KAFKASCOPE_VECTORS`,
/// else the shared `../shared/kafka-vectors` when present, else the copy in
/// `tests/kafka-vectors`.
fn kafka_vectors_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KAFKASCOPE_VECTORS") {
        return PathBuf::from(dir);
    }
    let shared = repo_root().join("../shared/kafka-vectors");
    if shared.join("SEMANTICS.md").is_file() {
        shared
    } else {
        repo_root().join("tests/kafka-vectors")
    }
}

fn list_tests(folder: &std::path::Path, suffix: &str) -> Outcome<Vec<PathBuf>> {
    let mut test_files: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|error| format!("cannot list {}: {error}", folder.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    test_files.sort();
    Ok(test_files)
}

/// The SCORM packages the course test imports, as `cargo xtask course`
/// writes them: one exercise in SCORM 1.2 and in SCORM 2004, a story, the
/// whole lesson and the sandbox.
fn course_packages(dist: &std::path::Path) -> Outcome<PathBuf> {
    use crate::course::{write_package, Course, Part, Scorm};
    let folder = target_dir().join("e2e-course");
    let exercise = |scorm| Course {
        part: Part::Exercise("pitfalls".into()),
        scorm,
        title: "Kafka's pitfalls".into(),
        mastery: Some(75),
    };
    write_package(dist, &exercise(Scorm::V12), &folder.join("exercise-scorm1.2.zip"))?;
    write_package(dist, &exercise(Scorm::V2004), &folder.join("exercise-scorm2004.zip"))?;
    let story = Course {
        part: Part::Story("happy-path".into()),
        scorm: Scorm::V2004,
        title: "The happy path".into(),
        mastery: None,
    };
    write_package(dist, &story, &folder.join("story-scorm2004.zip"))?;
    let whole = |part, scorm| Course {
        part,
        scorm,
        title: "kafkascope".into(),
        mastery: None,
    };
    write_package(
        dist,
        &whole(Part::Lesson, Scorm::V12),
        &folder.join("lesson-scorm1.2.zip"),
    )?;
    write_package(
        dist,
        &whole(Part::Sandbox, Scorm::V2004),
        &folder.join("sandbox-scorm2004.zip"),
    )?;
    Ok(folder)
}

fn end_to_end_tests(toolchain: &WebToolchain, browser: &Browser) -> Outcome {
    println!("\nxtask: [4/4] end-to-end tests in Chromium (Playwright)");
    let dist = site::build_release(toolchain)?;
    let courses = course_packages(&dist)?;
    let listener = bind(Some(0))?;
    let port = listener.local_addr().map_err(|error| error.to_string())?.port();
    std::thread::spawn(move || serve_forever(listener, dist, E2E_BASE.to_string()));

    let root = repo_root();
    let test_files = list_tests(&root.join("tests/e2e"), ".test.cjs")?;
    let artifacts = target_dir().join("e2e-artifacts");
    std::fs::create_dir_all(&artifacts).map_err(|error| format!("cannot create {}: {error}", artifacts.display()))?;

    run(toolchain
        .command("node")
        .arg("--test")
        .args(&test_files)
        .env("NODE_PATH", &toolchain.node_modules)
        .env("KAFKASCOPE_URL", format!("http://127.0.0.1:{port}{E2E_BASE}"))
        .env("KAFKASCOPE_ARTIFACTS", &artifacts)
        .env("KAFKASCOPE_COURSES", &courses)
        .env("KAFKASCOPE_CLI", target_dir().join("debug/kafkascope"))
        .env("CHROMIUM", &browser.chromium)
        .current_dir(&root))?;
    println!("xtask: screenshots are in {}", artifacts.display());
    Ok(())
}
