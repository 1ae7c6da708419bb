//! `cargo xtask`: the one entry point for building, serving and testing
//! kafkascope.
//!
//! It turns a fresh machine into one that can build the web app: it finds a
//! way to compile for `wasm32-unknown-unknown` (rustup's target, or Debian's
//! `rustc-web` with `-Zbuild-std` where rustup cannot download it), installs
//! the pinned tools from `tools.toml`, and then runs them. Every step checks
//! before it installs, so a second run installs nothing.

mod bench;
mod course;
mod package;
mod pins;
mod process;
mod serve;
mod setup;
mod site;
mod test;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  serve [--port N] [--base /PATH/]   build the app (installing what is missing) and serve it on 127.0.0.1
  test                               run every test: native, wasm in headless Chromium, the JS package in Node, end-to-end
  bench                              run the benchmarks natively and as wasm in headless Chromium; print figures
  fuzz [--seeds N] [--from S] [--mix M] [--out DIR] [--brokers N] [--partitions P]
                                     the fault fuzzer, optimised: N random fault schedules (default 10000) checked
                                     for safety and recovery, with a progress line; each failure prints its seed and
                                     writes a minimised scenario (default target/fuzz-failures/) for `kafkascope run`;
                                     --brokers and --partitions run them on a larger cluster
  build                              build the static site into dist/ and print artifact sizes
  course [--part lesson|exercise:ID|story:ID|sandbox] [--scorm 1.2|2004] [--title T] [--mastery PERCENT]
         [--out FILE.zip] [--dist DIR]
                                     build the site and write it as a SCORM package (default: the lesson, SCORM
                                     2004, mastery 80) into target/course/, for a learning platform to import
  package                            build the JavaScript API (ES module + Node) into target/pkg/
  setup [--browser]                  only install what is missing (--browser: Chromium and Playwright too)
  help                               print this text";

/// The outcome of a command: `Err` carries one sentence for the user.
pub type Outcome<T = ()> = Result<T, String>;

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match run(&arguments) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(arguments: &[String]) -> Outcome {
    let command = arguments.first().map(String::as_str).unwrap_or("help");
    if command == "fuzz" {
        return fuzz_command(&arguments[1..]);
    }
    if command == "course" {
        return course::course_command(&arguments[1..]);
    }
    let options = Options::parse(&arguments[arguments.len().min(1)..])?;
    match command {
        "serve" => serve::serve_command(&options),
        "test" => test::test_command(&options),
        "bench" => bench::bench_command(),
        "build" => {
            let toolchain = setup::ensure_web_build_tools()?;
            site::build_release(&toolchain).map(|_| ())
        }
        "package" => {
            let toolchain = setup::ensure_web_build_tools()?;
            package::build_package(&toolchain).map(|_| ())
        }
        "setup" => {
            setup::ensure_web_build_tools()?;
            if options.browser {
                setup::ensure_browser()?;
            }
            println!("xtask: everything is installed");
            Ok(())
        }
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command {other:?}; run `cargo xtask help`")),
    }
}

/// `cargo xtask fuzz`: the CLI's fuzzer built with the `fuzz` profile
/// (optimised, quick to build), 10,000 seeds unless told otherwise.
fn fuzz_command(arguments: &[String]) -> Outcome {
    let mut command = std::process::Command::new("cargo");
    command
        .args([
            "run",
            "--quiet",
            "--profile",
            "fuzz",
            "--package",
            "kafkascope-cli",
            "--",
            "fuzz",
        ])
        .current_dir(repo_root());
    if !arguments.iter().any(|argument| argument == "--seeds") {
        command.args(["--seeds", "10000"]);
    }
    if !arguments.iter().any(|argument| argument == "--out") {
        command.arg("--out").arg(target_dir().join("fuzz-failures"));
    }
    command.args(arguments);
    process::run(&mut command)
}

/// Options shared by the commands.
#[derive(Debug, Default)]
pub struct Options {
    /// Port for `serve`; the first free port from 8080 when not given.
    pub port: Option<u16>,
    /// The sub-path the site is served under, such as `/kafkascope/`.
    pub base: String,
    /// `setup --browser`: also install Chromium and Playwright.
    pub browser: bool,
}

impl Options {
    fn parse(arguments: &[String]) -> Outcome<Options> {
        let mut options = Options {
            base: "/".into(),
            ..Options::default()
        };
        let mut rest = arguments.iter();
        while let Some(argument) = rest.next() {
            match argument.as_str() {
                "--port" => {
                    let value = rest.next().ok_or("--port needs a number")?;
                    options.port = Some(
                        value
                            .parse()
                            .map_err(|_| format!("--port must be a port number, got {value:?}"))?,
                    );
                }
                "--base" => {
                    let value = rest.next().ok_or("--base needs a path such as /kafkascope/")?;
                    options.base = normalize_base(value);
                }
                "--browser" => options.browser = true,
                other => return Err(format!("unknown option {other:?}; run `cargo xtask help`")),
            }
        }
        Ok(options)
    }
}

/// `kafkascope` or `/kafkascope` become `/kafkascope/`.
fn normalize_base(value: &str) -> String {
    let trimmed = value.trim_matches('/');
    if trimmed.is_empty() {
        "/".into()
    } else {
        format!("/{trimmed}/")
    }
}

/// The repository root (the xtask lives in `crates/xtask`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the xtask crate sits inside the repository")
}

/// The cargo target directory, shared by every build of the workspace.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}
