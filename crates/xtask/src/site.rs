//! The release build of the static site (`dist/`), and its size report.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::process::run;
use crate::setup::WebToolchain;
use crate::{repo_root, Outcome};

/// Builds the app with `trunk build --release` (wasm-opt -Oz through
/// index.html's `data-wasm-opt`) into `dist/`, then prints every artifact's
/// raw and gzipped size. Returns the `dist/` folder.
pub fn build_release(toolchain: &WebToolchain) -> Outcome<PathBuf> {
    let root = repo_root();
    let package = crate::package::build_package(toolchain)?;
    run(toolchain
        .command("trunk")
        .args(["build", "--release", "--offline"])
        .current_dir(&root))?;
    let dist = root.join("dist");
    // The sandbox's worker loads the JavaScript API from `pkg/`.
    let pkg = dist.join("pkg");
    std::fs::create_dir_all(&pkg).map_err(|error| format!("cannot create {}: {error}", pkg.display()))?;
    for file in ["kafkascope_js.js", "kafkascope_js_bg.wasm"] {
        std::fs::copy(package.join("web").join(file), pkg.join(file))
            .map_err(|error| format!("cannot copy {file} into {}: {error}", pkg.display()))?;
    }
    print_sizes(&dist)?;
    Ok(dist)
}

/// Every file under `folder`, sorted.
fn files_under(folder: &Path) -> Outcome<Vec<PathBuf>> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(folder).map_err(|error| format!("cannot list {}: {error}", folder.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path)?);
        } else {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn print_sizes(dist: &Path) -> Outcome {
    let artifacts: Vec<PathBuf> = files_under(dist)?
        .into_iter()
        .filter(|path| matches!(path.extension().and_then(|e| e.to_str()), Some("wasm" | "js" | "css")))
        .collect();
    println!("xtask: artifact sizes (raw, gzipped):");
    for path in artifacts {
        let bytes = std::fs::read(&path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        encoder
            .write_all(&bytes)
            .and_then(|_| encoder.flush())
            .map_err(|error| error.to_string())?;
        let gzipped = encoder.finish().map_err(|error| error.to_string())?;
        println!(
            "  {:<48} {:>10} {:>10}",
            path.strip_prefix(dist).unwrap_or(&path).to_string_lossy(),
            human_size(bytes.len()),
            human_size(gzipped.len())
        );
    }
    Ok(())
}

fn human_size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
    } else if bytes >= 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}
