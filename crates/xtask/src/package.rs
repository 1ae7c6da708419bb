//! `cargo xtask package`: the engine's JavaScript API (`crates/js`) as a
//! package a page or Node can import, in `target/pkg/`:
//!
//! - `target/pkg/web/` — ES module for browsers and workers (`init()` first);
//! - `target/pkg/node/` — CommonJS for Node, loading the wasm synchronously;
//! - `target/pkg/package.json` — `exports` pointing `import` and `require`
//!   at the two, with the TypeScript declarations wasm-bindgen writes.

use std::path::PathBuf;

use crate::process::run;
use crate::setup::WebToolchain;
use crate::{repo_root, target_dir, Outcome};

/// The features rustc's wasm32 output uses; never `--all-features`, whose
/// output Chromium rejects. Keep in step with index.html's
/// `data-wasm-opt-params`.
pub(crate) const WASM_OPT_FEATURES: [&str; 7] = [
    "--enable-bulk-memory",
    "--enable-bulk-memory-opt",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-reference-types",
    "--enable-multivalue",
];

/// Builds `kafkascope-js` for wasm32 with the `web` profile (release, optimised
/// for size) and runs wasm-bindgen twice.
/// Returns the package folder.
pub fn build_package(toolchain: &WebToolchain) -> Outcome<PathBuf> {
    let root = repo_root();
    build_for_the_web(toolchain, &["--package", "kafkascope-js", "--lib"])?;
    let wasm = target_dir().join("wasm32-unknown-unknown/web/kafkascope_js.wasm");
    let package = target_dir().join("pkg");
    for (target, folder) in [("web", "web"), ("nodejs", "node")] {
        if is_newer(&package.join(folder).join("kafkascope_js_bg.wasm"), &wasm) {
            continue;
        }
        run(toolchain
            .command("wasm-bindgen")
            .arg("--target")
            .arg(target)
            .arg("--out-dir")
            .arg(package.join(folder))
            .arg(&wasm)
            .current_dir(&root))?;
        // The same size optimisation as the app (index.html's data-wasm-opt).
        let output = package.join(folder).join("kafkascope_js_bg.wasm");
        run(toolchain
            .command("wasm-opt")
            .arg("-Oz")
            .args(WASM_OPT_FEATURES)
            .arg(&output)
            .arg("-o")
            .arg(&output)
            .current_dir(&root))?;
    }
    let version = env!("CARGO_PKG_VERSION");
    let manifest = format!(
        r#"{{
  "name": "kafkascope",
  "version": "{version}",
  "description": "Apache Kafka's partitioner, group assignors and a deterministic cluster simulator, compiled to WebAssembly.",
  "license": "Apache-2.0",
  "main": "./node/kafkascope_js.js",
  "module": "./web/kafkascope_js.js",
  "types": "./web/kafkascope_js.d.ts",
  "exports": {{
    ".": {{
      "types": "./web/kafkascope_js.d.ts",
      "node": "./node/kafkascope_js.js",
      "import": "./web/kafkascope_js.js",
      "require": "./node/kafkascope_js.js"
    }},
    "./element": "./web/kafkascope-element.js"
  }},
  "files": ["web", "node"]
}}
"#
    );
    std::fs::write(package.join("package.json"), manifest)
        .map_err(|error| format!("cannot write {}: {error}", package.join("package.json").display()))?;
    // wasm-bindgen's nodejs output is CommonJS and its web output is an ES
    // module; say so, so that Node reads each file the right way.
    for (folder, kind) in [("node", "commonjs"), ("web", "module")] {
        std::fs::write(
            package.join(folder).join("package.json"),
            format!("{{ \"type\": \"{kind}\" }}\n"),
        )
        .map_err(|error| format!("cannot write the {folder} package marker: {error}"))?;
    }
    // The custom elements (`<kafkascope-map>`, `<kafkascope-steps>`) for
    // course pages; from the package they need a `src` naming the hosted site.
    std::fs::copy(
        root.join("web/kafkascope-element.js"),
        package.join("web").join("kafkascope-element.js"),
    )
    .map_err(|error| format!("cannot copy the custom elements into the package: {error}"))?;
    println!("xtask: the JavaScript package is in {}", package.display());
    Ok(package)
}

/// `cargo build` for wasm32 with the `web` profile (what trunk uses for the
/// page), of the package and target `which` names.
pub(crate) fn build_for_the_web(toolchain: &WebToolchain, which: &[&str]) -> Outcome {
    run(toolchain
        .command("cargo")
        .args(["build", "--profile", "web", "--target", "wasm32-unknown-unknown"])
        .args(which)
        .current_dir(repo_root()))
}

/// Whether `output` exists and was written after `input` (so regenerating it
/// would give the same file).
pub(crate) fn is_newer(output: &std::path::Path, input: &std::path::Path) -> bool {
    let modified = |path: &std::path::Path| std::fs::metadata(path).and_then(|metadata| metadata.modified()).ok();
    matches!((modified(output), modified(input)), (Some(output), Some(input)) if output > input)
}
