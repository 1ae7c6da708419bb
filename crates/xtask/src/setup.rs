//! Makes a machine able to build and test kafkascope, installing only what
//! is missing.
//!
//! The web app needs the `wasm32-unknown-unknown` standard library. Two ways
//! to get it are supported, tried in this order:
//!
//! 1. rustup's `wasm32-unknown-unknown` target (a normal laptop);
//! 2. Debian's `rustc-web`, `cargo-web`, `rust-web-src` and `lld-22`, linked
//!    as the rustup toolchain `kafkascope-debian`, building the standard
//!    library from source (`-Zbuild-std`) — for machines where rustup cannot
//!    download the target but Debian's archive is reachable.
//!
//! `KAFKASCOPE_WASM_TOOLCHAIN=rustup|debian` forces one of them.
//! Native builds and tests always use the default toolchain.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::pins::{self, Pins};
use crate::process::{on_path, probe, run, run_with_deadline};
use crate::{target_dir, Outcome};

/// The rustup toolchain name under which Debian's rustc-web is linked.
const DEBIAN_TOOLCHAIN: &str = "kafkascope-debian";
const DEBIAN_RUST_PACKAGES: [&str; 4] = ["rustc-web", "cargo-web", "rust-web-src", "lld-22"];
const BROWSER_PACKAGES: [&str; 2] = ["chromium", "chromium-driver"];

/// How this machine compiles for wasm32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WasmToolchain {
    /// rustup's prebuilt `wasm32-unknown-unknown` standard library.
    Rustup,
    /// Debian's rustc-web with the standard library built from source.
    Debian,
}

/// Everything needed to build the web app, found or installed.
#[derive(Debug, Clone)]
pub struct WebToolchain {
    pub wasm: WasmToolchain,
    /// `node_modules` holding binaryen (wasm-opt) and playwright-core.
    pub node_modules: PathBuf,
}

impl WebToolchain {
    /// A command whose cargo builds for wasm32 the way this machine can,
    /// with wasm-opt and the cargo-installed tools on PATH.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command.env("PATH", self.path());
        if self.wasm == WasmToolchain::Debian {
            command
                .env("RUSTUP_TOOLCHAIN", DEBIAN_TOOLCHAIN)
                .env("RUSTC_BOOTSTRAP", "1")
                .env("CARGO_UNSTABLE_BUILD_STD", "std,panic_abort");
        }
        command
    }

    /// PATH with `node_modules/.bin` (wasm-opt) and cargo's bin folder first.
    pub fn path(&self) -> OsString {
        let mut dirs = vec![self.node_modules.join(".bin"), cargo_bin_dir()];
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        std::env::join_paths(dirs).expect("PATH entries have no separators")
    }
}

/// Finds or installs the wasm toolchain, wasm-bindgen-cli, trunk, wasm-opt
/// and playwright-core.
pub fn ensure_web_build_tools() -> Outcome<WebToolchain> {
    let pins = pins::load()?;
    let wasm = ensure_wasm_toolchain()?;
    ensure_cargo_tool("wasm-bindgen", "wasm-bindgen-cli", &pins.wasm_bindgen, false)?;
    ensure_cargo_tool("trunk", "trunk", &pins.trunk, true)?;
    let node_modules = ensure_npm_tools(&pins)?;
    let toolchain = WebToolchain { wasm, node_modules };
    // trunk runs cargo with --offline, so every crate the wasm build needs
    // (with -Zbuild-std, the standard library's own dependencies too) must be
    // downloaded first. Quick when they already are.
    run(toolchain
        .command("cargo")
        .args(["fetch", "--quiet", "--target", "wasm32-unknown-unknown"])
        .current_dir(crate::repo_root()))?;
    Ok(toolchain)
}

fn ensure_wasm_toolchain() -> Outcome<WasmToolchain> {
    match std::env::var("KAFKASCOPE_WASM_TOOLCHAIN").ok().as_deref() {
        Some("rustup") => {
            if !rustup_has_wasm_target() {
                add_rustup_wasm_target();
            }
            return if rustup_has_wasm_target() {
                Ok(WasmToolchain::Rustup)
            } else {
                Err("KAFKASCOPE_WASM_TOOLCHAIN=rustup, but rustup could not add wasm32-unknown-unknown".into())
            };
        }
        Some("debian") => {
            ensure_debian_toolchain()?;
            return Ok(WasmToolchain::Debian);
        }
        Some(other) if !other.is_empty() => {
            return Err(format!(
                "KAFKASCOPE_WASM_TOOLCHAIN must be rustup or debian, not {other:?}"
            ))
        }
        _ => {}
    }
    if rustup_has_wasm_target() {
        return Ok(WasmToolchain::Rustup);
    }
    if debian_toolchain_ready() {
        return Ok(WasmToolchain::Debian);
    }
    if add_rustup_wasm_target() && rustup_has_wasm_target() {
        return Ok(WasmToolchain::Rustup);
    }
    println!("xtask: rustup cannot provide wasm32-unknown-unknown here; using Debian's rustc-web with -Zbuild-std");
    ensure_debian_toolchain()?;
    Ok(WasmToolchain::Debian)
}

/// Whether the default toolchain's sysroot holds the wasm32 standard library.
fn rustup_has_wasm_target() -> bool {
    probe(Command::new("rustc").args(["--print", "sysroot"]))
        .map(|sysroot| {
            Path::new(sysroot.trim())
                .join("lib/rustlib/wasm32-unknown-unknown/lib")
                .is_dir()
        })
        .unwrap_or(false)
}

fn add_rustup_wasm_target() -> bool {
    on_path("rustup")
        && run_with_deadline(
            Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]),
            Duration::from_secs(300),
        )
}

fn debian_toolchain_ready() -> bool {
    Path::new("/usr/lib/rustlib/src/rust/library").is_dir()
        && on_path("rust-lld")
        && probe(
            Command::new("rustc")
                .env("RUSTUP_TOOLCHAIN", DEBIAN_TOOLCHAIN)
                .arg("--version"),
        )
        .is_some()
}

fn ensure_debian_toolchain() -> Outcome {
    apt_install(&DEBIAN_RUST_PACKAGES, "to build for wasm32 without rustup's target")?;
    if !on_path("rustup") {
        return Err("the Debian wasm path needs rustup (to link /usr as a toolchain); install rustup".into());
    }
    let linked = probe(Command::new("rustup").args(["toolchain", "list"]))
        .map(|list| {
            list.lines()
                .any(|line| line.split_whitespace().next() == Some(DEBIAN_TOOLCHAIN))
        })
        .unwrap_or(false);
    if !linked {
        run(Command::new("rustup").args(["toolchain", "link", DEBIAN_TOOLCHAIN, "/usr"]))?;
    }
    if debian_toolchain_ready() {
        Ok(())
    } else {
        Err(
            "Debian's rustc-web is installed but not usable (need /usr/lib/rustlib/src/rust/library and rust-lld)"
                .into(),
        )
    }
}

/// Installs `cargo install <crate_name> --version <version>` unless
/// `<program> --version` already reports that version.
fn ensure_cargo_tool(program: &str, crate_name: &str, version: &str, locked: bool) -> Outcome {
    let installed = probe(Command::new(cargo_bin_dir().join(program)).arg("--version"))
        .or_else(|| probe(Command::new(program).arg("--version")))
        .unwrap_or_default();
    if installed.split_whitespace().nth(1) == Some(version) {
        return Ok(());
    }
    let mut command = Command::new("cargo");
    command.args(["install", crate_name, "--version", version]);
    if locked {
        command.arg("--locked");
    }
    // Always build tools with the default toolchain and the default target dir.
    command.env_remove("RUSTUP_TOOLCHAIN").env_remove("CARGO_TARGET_DIR");
    run(&mut command).map_err(|error| format!("could not install {crate_name} {version}: {error}"))
}

/// Installs binaryen, playwright-core, axe-core, scorm-again and
/// xmllint-wasm with npm into `target/tools/node`.
fn ensure_npm_tools(pins: &Pins) -> Outcome<PathBuf> {
    let prefix = target_dir().join("tools/node");
    let node_modules = prefix.join("node_modules");
    let wanted = [
        ("binaryen", &pins.binaryen),
        ("playwright-core", &pins.playwright_core),
        ("axe-core", &pins.axe_core),
        ("scorm-again", &pins.scorm_again),
        ("xmllint-wasm", &pins.xmllint_wasm),
    ];
    let missing: Vec<String> = wanted
        .iter()
        .filter(|(name, version)| npm_package_version(&node_modules, name).as_deref() != Some(version.as_str()))
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    if missing.is_empty() {
        return Ok(node_modules);
    }
    if !on_path("npm") || !on_path("node") {
        apt_install(&["nodejs", "npm"], "for wasm-opt and the browser tests")?;
    }
    std::fs::create_dir_all(&prefix).map_err(|error| format!("cannot create {}: {error}", prefix.display()))?;
    let specs: Vec<String> = wanted
        .iter()
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    run(Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&prefix)
        .args(&specs))
    .map_err(|error| format!("could not install {}: {error}", missing.join(", ")))?;
    Ok(node_modules)
}

fn npm_package_version(node_modules: &Path, name: &str) -> Option<String> {
    let manifest = std::fs::read_to_string(node_modules.join(name).join("package.json")).ok()?;
    let after = manifest.split("\"version\"").nth(1)?;
    let value = after.split('"').nth(1)?;
    Some(value.to_string())
}

/// Paths to a Chromium and its ChromeDriver.
#[derive(Debug, Clone)]
pub struct Browser {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

/// Finds Chromium and ChromeDriver (`CHROMIUM`/`CHROMEDRIVER` override),
/// installing Debian's packages where they are missing.
pub fn ensure_browser() -> Outcome<Browser> {
    if let Some(browser) = find_browser() {
        return Ok(browser);
    }
    apt_install(&BROWSER_PACKAGES, "for the browser tests")?;
    find_browser().ok_or_else(|| {
        "Chromium and ChromeDriver are still missing; set CHROMIUM and CHROMEDRIVER to their paths".into()
    })
}

fn find_browser() -> Option<Browser> {
    let find = |variable: &str, candidates: &[&str]| -> Option<PathBuf> {
        if let Some(path) = std::env::var_os(variable) {
            return Some(PathBuf::from(path)).filter(|path| path.is_file());
        }
        candidates.iter().find_map(|name| which(name))
    };
    Some(Browser {
        chromium: find("CHROMIUM", &["chromium", "chromium-browser", "google-chrome"])?,
        chromedriver: find("CHROMEDRIVER", &["chromedriver"])?,
    })
}

fn which(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Installs Debian packages that are not installed yet.
fn apt_install(packages: &[&str], purpose: &str) -> Outcome {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|package| !dpkg_installed(package))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(" ");
    if !on_path("apt-get") {
        return Err(format!(
            "this machine needs {list} {purpose}, and has no apt-get to install them; install them by hand"
        ));
    }
    let as_root = probe(Command::new("id").arg("-u"))
        .map(|id| id.trim() == "0")
        .unwrap_or(false);
    let elevate = |command: &[&str]| -> Command {
        if as_root {
            let mut plain = Command::new(command[0]);
            plain.args(&command[1..]);
            plain
        } else {
            let mut sudo = Command::new("sudo");
            sudo.arg("-n").args(command);
            sudo
        }
    };
    if !as_root && !on_path("sudo") {
        return Err(format!(
            "installing {list} ({purpose}) needs root: run `apt-get install -y {list}` as root once"
        ));
    }
    let failure = |error: String| format!("could not install {list} ({purpose}): {error}");
    run(elevate(&["apt-get", "update", "-qq"]).env("DEBIAN_FRONTEND", "noninteractive")).map_err(failure)?;
    let mut install = elevate(&["apt-get", "install", "-y", "-qq"]);
    install.args(&missing).env("DEBIAN_FRONTEND", "noninteractive");
    run(&mut install).map_err(failure)
}

fn dpkg_installed(package: &str) -> bool {
    probe(Command::new("dpkg-query").args(["-W", "-f=${Status}", package]))
        .map(|status| status.contains("install ok installed"))
        .unwrap_or(false)
}

/// Where `cargo install` puts binaries.
fn cargo_bin_dir() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
        .join("bin")
}
