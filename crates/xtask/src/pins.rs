//! Reads the pinned tool versions from `tools.toml` and checks that the
//! files other tools read (Cargo.lock, Trunk.toml) agree with them.

use std::collections::BTreeMap;

use crate::{repo_root, Outcome};

/// The versions from `tools.toml`.
#[derive(Debug, Clone)]
pub struct Pins {
    pub wasm_bindgen: String,
    pub trunk: String,
    pub binaryen: String,
    pub playwright_core: String,
    /// axe-core, for the accessibility checks in the browser tests.
    pub axe_core: String,
    /// scorm-again, the SCORM 1.2 and 2004 run-time that stands in for a
    /// learning platform in the course package's browser tests.
    pub scorm_again: String,
    /// xmllint-wasm, libxml2's schema validation, for the course package's
    /// manifest in the browser tests.
    pub xmllint_wasm: String,
}

/// Loads `tools.toml` and checks its mirrors.
pub fn load() -> Outcome<Pins> {
    let root = repo_root();
    let text = read(&root.join("tools.toml"))?;
    let values = parse_flat_toml(&text);
    let get = |name: &str| {
        values
            .get(name)
            .cloned()
            .ok_or_else(|| format!("tools.toml has no pin for {name}"))
    };
    let pins = Pins {
        wasm_bindgen: get("wasm-bindgen")?,
        trunk: get("trunk")?,
        binaryen: get("binaryen")?,
        playwright_core: get("playwright-core")?,
        axe_core: get("axe-core")?,
        scorm_again: get("scorm-again")?,
        xmllint_wasm: get("xmllint-wasm")?,
    };

    let lock = read(&root.join("Cargo.lock"))?;
    match locked_version(&lock, "wasm-bindgen") {
        Some(locked) if locked == pins.wasm_bindgen => {}
        Some(locked) => {
            return Err(format!(
                "Cargo.lock has wasm-bindgen {locked} but tools.toml pins {}; make them equal",
                pins.wasm_bindgen
            ))
        }
        None => return Err("Cargo.lock does not list wasm-bindgen".into()),
    }
    let trunk_toml = parse_flat_toml(&read(&root.join("Trunk.toml"))?);
    if trunk_toml.get("wasm_bindgen") != Some(&pins.wasm_bindgen) {
        return Err(format!(
            "Trunk.toml's [tools] wasm_bindgen must be {:?} as in tools.toml",
            pins.wasm_bindgen
        ));
    }
    Ok(pins)
}

fn read(path: &std::path::Path) -> Outcome<String> {
    std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))
}

/// `key = "value"` lines, ignoring tables and comments: enough for our pin
/// files, without a TOML dependency.
fn parse_flat_toml(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next()?.trim();
            let (key, value) = line.split_once('=')?;
            let value = value.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((key.trim().to_string(), value.to_string()))
        })
        .collect()
}

/// The version of `package` in a Cargo.lock.
fn locked_version(lock: &str, package: &str) -> Option<String> {
    let wanted = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == wanted {
            let version_line = lines.next()?;
            return parse_flat_toml(version_line).remove("version");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flat_pins_and_lock_versions() {
        let pins = parse_flat_toml("# c\n[tools]\nwasm_bindgen = \"0.2.1\" # note\n");
        assert_eq!(pins.get("wasm_bindgen").map(String::as_str), Some("0.2.1"));
        let lock = "[[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.9\"\n";
        assert_eq!(locked_version(lock, "wasm-bindgen").as_deref(), Some("0.2.9"));
    }

    #[test]
    fn the_repository_pins_agree() {
        load().expect("tools.toml, Cargo.lock and Trunk.toml agree");
    }
}
