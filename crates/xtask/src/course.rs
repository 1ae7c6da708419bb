//! `cargo xtask course`: the site as a SCORM package a learning platform
//! imports (Moodle, Canvas, Blackboard, Open edX, …): a zip of the built
//! site with an `imsmanifest.xml` whose one SCO launches the part the
//! author chose (the whole lesson, one exercise, one story or the
//! sandbox) with the SCORM version and mastery score in its address. The
//! page then reports to the platform (`crates/web/src/course_model.rs`).
//!
//! SCORM 1.2 (`imscp_rootv1p1p2`, `adlcp_rootv1p2`, `adlcp:masteryscore`)
//! and SCORM 2004 4th edition (`imscp_v1p1`, `adlcp_v1p3`, a primary
//! objective satisfied by measure at the mastery score), the two versions
//! platforms take most widely.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{repo_root, site, target_dir, Outcome};

/// The SCORM version a package speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scorm {
    V12,
    V2004,
}

impl Scorm {
    fn name(self) -> &'static str {
        match self {
            Scorm::V12 => "1.2",
            Scorm::V2004 => "2004",
        }
    }
}

/// The part of kafkascope a package is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lesson,
    Exercise(String),
    Story(String),
    Sandbox,
}

impl Part {
    fn parse(text: &str) -> Outcome<Part> {
        match text.split_once(':') {
            None if text == "lesson" => Ok(Part::Lesson),
            None if text == "sandbox" => Ok(Part::Sandbox),
            Some(("exercise", id)) if !id.is_empty() => Ok(Part::Exercise(id.to_string())),
            Some(("story", id)) if !id.is_empty() => Ok(Part::Story(id.to_string())),
            _ => Err(format!(
                "--part must be lesson, exercise:ID, story:ID or sandbox, got {text:?}"
            )),
        }
    }

    /// The launch file's address inside the package.
    fn launch(&self, scorm: Scorm, mastery: Option<u8>) -> String {
        let mastery = mastery.map(|mastery| format!("&mastery={mastery}")).unwrap_or_default();
        let version = scorm.name();
        match self {
            Part::Lesson => format!("index.html?embed=lesson&play=0&scorm={version}{mastery}#lesson"),
            Part::Exercise(id) => {
                format!("index.html?embed=lesson&play=0&scorm={version}{mastery}&exercise={id}#exercise-{id}")
            }
            Part::Story(id) => format!("index.html?embed=steps&play=0&story={id}&scorm={version}"),
            Part::Sandbox => format!("index.html?embed=sandbox&scorm={version}"),
        }
    }

    fn scored(&self) -> bool {
        matches!(self, Part::Lesson | Part::Exercise(_))
    }

    fn file_name(&self) -> String {
        match self {
            Part::Lesson => "lesson".into(),
            Part::Exercise(id) => format!("exercise-{id}"),
            Part::Story(id) => format!("story-{id}"),
            Part::Sandbox => "sandbox".into(),
        }
    }
}

/// What to write.
#[derive(Debug, Clone)]
pub struct Course {
    pub part: Part,
    pub scorm: Scorm,
    pub title: String,
    /// Percent of right answers that passes (scored parts only).
    pub mastery: Option<u8>,
}

const USAGE: &str = "cargo xtask course [--part lesson|exercise:ID|story:ID|sandbox] [--scorm 1.2|2004] \
[--title TEXT] [--mastery PERCENT] [--out FILE.zip] [--dist DIR]";

/// `cargo xtask course …`: builds the site (or takes `--dist`) and writes
/// the package.
pub fn course_command(arguments: &[String]) -> Outcome {
    let mut part = Part::Lesson;
    let mut scorm = Scorm::V2004;
    let mut title = None;
    let mut mastery = None;
    let mut out = None;
    let mut dist = None;
    let mut rest = arguments.iter();
    while let Some(argument) = rest.next() {
        let mut value = |what: &str| rest.next().cloned().ok_or(format!("{argument} needs {what}; {USAGE}"));
        match argument.as_str() {
            "--part" => part = Part::parse(&value("a part")?)?,
            "--scorm" => {
                scorm = match value("1.2 or 2004")?.as_str() {
                    "1.2" => Scorm::V12,
                    "2004" => Scorm::V2004,
                    other => return Err(format!("--scorm must be 1.2 or 2004, got {other:?}")),
                }
            }
            "--title" => title = Some(value("a title")?),
            "--mastery" => {
                let text = value("a percentage")?;
                mastery = Some(
                    text.parse::<u8>()
                        .ok()
                        .filter(|percent| *percent <= 100)
                        .ok_or(format!("--mastery must be a percentage from 0 to 100, got {text:?}"))?,
                );
            }
            "--out" => out = Some(PathBuf::from(value("a file")?)),
            "--dist" => dist = Some(PathBuf::from(value("a folder")?)),
            other => return Err(format!("unknown option {other:?}; {USAGE}")),
        }
    }
    check_part(&part)?;
    if mastery.is_some() && !part.scored() {
        return Err("--mastery applies to the lesson and its exercises, which are scored; a story or the sandbox is completed, not passed".into());
    }
    let course = Course {
        title: title.unwrap_or_else(|| default_title(&part)),
        mastery: if part.scored() { mastery.or(Some(80)) } else { None },
        part,
        scorm,
    };
    let dist = match dist {
        Some(dist) => dist,
        None => site::build_release(&crate::setup::ensure_web_build_tools()?)?,
    };
    let out = out.unwrap_or_else(|| {
        target_dir().join("course").join(format!(
            "kafkascope-{}-scorm{}.zip",
            course.part.file_name(),
            course.scorm.name()
        ))
    });
    write_package(&dist, &course, &out)?;
    println!(
        "xtask: wrote {} (SCORM {}, launches {})",
        out.display(),
        course.scorm.name(),
        course.part.launch(course.scorm, course.mastery)
    );
    Ok(())
}

/// The exercise or story the part names exists.
fn check_part(part: &Part) -> Outcome {
    let root = repo_root();
    match part {
        Part::Exercise(id) => {
            let text = std::fs::read_to_string(root.join("web/lesson.json"))
                .map_err(|error| format!("cannot read web/lesson.json: {error}"))?;
            let lesson: serde_json::Value =
                serde_json::from_str(&text).map_err(|error| format!("web/lesson.json: {error}"))?;
            let ids: Vec<&str> = lesson["exercises"]
                .as_array()
                .map(|all| all.iter().filter_map(|exercise| exercise["id"].as_str()).collect())
                .unwrap_or_default();
            if !ids.contains(&id.as_str()) {
                return Err(format!(
                    "the lesson has no exercise {id:?}; its exercises are {}",
                    ids.join(", ")
                ));
            }
        }
        Part::Story(id) => {
            let mut ids = Vec::new();
            let folder = root.join("scenarios");
            for entry in std::fs::read_dir(&folder).map_err(|error| format!("cannot list scenarios/: {error}"))? {
                let path = entry.map_err(|error| error.to_string())?.path();
                if path.extension().is_some_and(|extension| extension == "json") {
                    let text = std::fs::read_to_string(&path).map_err(|error| error.to_string())?;
                    let scenario: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                    if let Some(story) = scenario["story"]["id"].as_str() {
                        ids.push(story.to_string());
                    }
                }
            }
            ids.sort();
            if !ids.contains(id) {
                return Err(format!("there is no story {id:?}; the stories are {}", ids.join(", ")));
            }
        }
        Part::Lesson | Part::Sandbox => {}
    }
    Ok(())
}

fn default_title(part: &Part) -> String {
    match part {
        Part::Lesson => "kafkascope: Apache Kafka's internals".into(),
        Part::Exercise(id) => format!("kafkascope: the {id} exercise"),
        Part::Story(id) => format!("kafkascope: the {id} story"),
        Part::Sandbox => "kafkascope: the JavaScript sandbox".into(),
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The package's manifest, listing `files` (paths inside the package).
pub fn manifest(course: &Course, files: &[String]) -> String {
    let title = xml_escape(&course.title);
    let launch = xml_escape(&course.part.launch(course.scorm, course.mastery));
    let identifier = format!("kafkascope-{}", course.part.file_name());
    let listed: String = files
        .iter()
        .map(|file| format!("      <file href=\"{}\"/>\n", xml_escape(file)))
        .collect();
    // What differs between the versions: the namespaces, the version's
    // name, how the item carries the mastery score, and the spelling of
    // the resource's `scormType`.
    let (namespaces, version, item_attributes, mastery, scorm_type) = match course.scorm {
        Scorm::V12 => (
            r#"version="1.0"
  xmlns="http://www.imsproject.org/xsd/imscp_rootv1p1p2"
  xmlns:adlcp="http://www.adlnet.org/xsd/adlcp_rootv1p2"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.imsproject.org/xsd/imscp_rootv1p1p2 imscp_rootv1p1p2.xsd http://www.imsglobal.org/xsd/imsmd_rootv1p2p1 imsmd_rootv1p2p1.xsd http://www.adlnet.org/xsd/adlcp_rootv1p2 adlcp_rootv1p2.xsd""#,
            "1.2",
            r#" isvisible="true""#,
            course
                .mastery
                .map(|mastery| format!("        <adlcp:masteryscore>{mastery}</adlcp:masteryscore>\n"))
                .unwrap_or_default(),
            "scormtype",
        ),
        Scorm::V2004 => (
            r#"version="1"
  xmlns="http://www.imsglobal.org/xsd/imscp_v1p1"
  xmlns:adlcp="http://www.adlnet.org/xsd/adlcp_v1p3"
  xmlns:adlseq="http://www.adlnet.org/xsd/adlseq_v1p3"
  xmlns:adlnav="http://www.adlnet.org/xsd/adlnav_v1p3"
  xmlns:imsss="http://www.imsglobal.org/xsd/imsss"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.imsglobal.org/xsd/imscp_v1p1 imscp_v1p1.xsd http://www.adlnet.org/xsd/adlcp_v1p3 adlcp_v1p3.xsd http://www.adlnet.org/xsd/adlseq_v1p3 adlseq_v1p3.xsd http://www.adlnet.org/xsd/adlnav_v1p3 adlnav_v1p3.xsd http://www.imsglobal.org/xsd/imsss imsss_v1p0.xsd""#,
            "2004 4th Edition",
            "",
            course
                .mastery
                .map(|mastery| {
                    format!(
                        r#"        <imsss:sequencing>
          <imsss:objectives>
            <imsss:primaryObjective objectiveID="kafkascope-mastery" satisfiedByMeasure="true">
              <imsss:minNormalizedMeasure>{}</imsss:minNormalizedMeasure>
            </imsss:primaryObjective>
          </imsss:objectives>
        </imsss:sequencing>
"#,
                        f64::from(mastery) / 100.0
                    )
                })
                .unwrap_or_default(),
            "scormType",
        ),
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<manifest identifier="{identifier}" {namespaces}>
  <metadata>
    <schema>ADL SCORM</schema>
    <schemaversion>{version}</schemaversion>
  </metadata>
  <organizations default="kafkascope-organization">
    <organization identifier="kafkascope-organization">
      <title>{title}</title>
      <item identifier="kafkascope-item" identifierref="kafkascope-sco"{item_attributes}>
        <title>{title}</title>
{mastery}      </item>
    </organization>
  </organizations>
  <resources>
    <resource identifier="kafkascope-sco" type="webcontent" adlcp:{scorm_type}="sco" href="{launch}">
{listed}    </resource>
  </resources>
</manifest>
"#
    )
}

/// Every file of the built site, as paths inside the package: the raw
/// files (a platform serves the package's files itself, so the `.br` and
/// `.gz` copies stay out).
/// The SCORM version's schema files (`crates/xtask/scorm-schemas/`: ADL's
/// and IMS's XSDs as the specifications publish them), by name.
fn schemas(scorm: Scorm) -> Outcome<Vec<(String, Vec<u8>)>> {
    let folder = repo_root().join("crates/xtask/scorm-schemas").join(match scorm {
        Scorm::V12 => "1.2",
        Scorm::V2004 => "2004",
    });
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&folder).map_err(|error| format!("cannot list {}: {error}", folder.display()))? {
        let path = entry.map_err(|error| error.to_string())?.path();
        if path.extension().is_some_and(|extension| extension == "xsd") {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let bytes = std::fs::read(&path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            files.push((name, bytes));
        }
    }
    files.sort();
    Ok(files)
}

fn site_files(dist: &Path) -> Outcome<Vec<String>> {
    let mut files = Vec::new();
    let mut folders = vec![dist.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).map_err(|error| format!("cannot list {}: {error}", folder.display()))? {
            let path = entry.map_err(|error| error.to_string())?.path();
            if path.is_dir() {
                folders.push(path);
            } else if !path
                .extension()
                .is_some_and(|extension| extension == "br" || extension == "gz")
            {
                let inside = path.strip_prefix(dist).map_err(|error| error.to_string())?;
                files.push(inside.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    if !files.iter().any(|file| file == "index.html") {
        return Err(format!("{} holds no built site (no index.html)", dist.display()));
    }
    Ok(files)
}

/// Writes the package: the manifest first, then the site's files.
pub fn write_package(dist: &Path, course: &Course, out: &Path) -> Outcome {
    let files = site_files(dist)?;
    let mut zip = ZipWriter::default();
    zip.add("imsmanifest.xml", manifest(course, &files).as_bytes())?;
    // The schemas the manifest's `xsi:schemaLocation` names, at the
    // package's root beside it, as ADL's packaging guidance asks (they are
    // the package's control documents, not the resource's files).
    for (name, bytes) in schemas(course.scorm)? {
        zip.add(&name, &bytes)?;
    }
    for file in &files {
        let bytes = std::fs::read(dist.join(file)).map_err(|error| format!("cannot read {file}: {error}"))?;
        zip.add(file, &bytes)?;
    }
    if let Some(folder) = out.parent() {
        std::fs::create_dir_all(folder).map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
    }
    std::fs::write(out, zip.finish()).map_err(|error| format!("cannot write {}: {error}", out.display()))
}

/// A zip archive (deflated entries, no zip64: a package is a few MB).
#[derive(Default)]
struct ZipWriter {
    bytes: Vec<u8>,
    central: Vec<u8>,
    entries: u16,
}

impl ZipWriter {
    fn add(&mut self, name: &str, data: &[u8]) -> Outcome {
        let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).map_err(|error| error.to_string())?;
        let packed = encoder.finish().map_err(|error| error.to_string())?;
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let too_big = |size: usize| u32::try_from(size).map_err(|_| format!("{name} is too large for a zip"));
        let (crc, packed_size, size) = (crc.sum(), too_big(packed.len())?, too_big(data.len())?);
        let offset = too_big(self.bytes.len())?;
        let name_length = u16::try_from(name.len()).map_err(|_| format!("{name}: name too long"))?;
        // The same fixed time for every entry (1980-01-01): the same site
        // makes the same package.
        let (time, date) = (0u16, (1 << 5) | 1);
        let mut local = Vec::new();
        local.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        for value in [20u16, 1 << 11, 8, time, date] {
            local.extend_from_slice(&value.to_le_bytes());
        }
        for value in [crc, packed_size, size] {
            local.extend_from_slice(&value.to_le_bytes());
        }
        local.extend_from_slice(&name_length.to_le_bytes());
        local.extend_from_slice(&0u16.to_le_bytes());
        local.extend_from_slice(name.as_bytes());
        self.bytes.extend_from_slice(&local);
        self.bytes.extend_from_slice(&packed);
        self.central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        for value in [20u16, 20, 1 << 11, 8, time, date] {
            self.central.extend_from_slice(&value.to_le_bytes());
        }
        for value in [crc, packed_size, size] {
            self.central.extend_from_slice(&value.to_le_bytes());
        }
        for value in [name_length, 0, 0, 0, 0] {
            self.central.extend_from_slice(&value.to_le_bytes());
        }
        self.central.extend_from_slice(&0u32.to_le_bytes());
        self.central.extend_from_slice(&offset.to_le_bytes());
        self.central.extend_from_slice(name.as_bytes());
        self.entries = self.entries.checked_add(1).ok_or("too many files for a zip")?;
        Ok(())
    }

    fn finish(mut self) -> Vec<u8> {
        let offset = self.bytes.len() as u32;
        let size = self.central.len() as u32;
        self.bytes.extend_from_slice(&self.central);
        self.bytes.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        for value in [0u16, 0, self.entries, self.entries] {
            self.bytes.extend_from_slice(&value.to_le_bytes());
        }
        self.bytes.extend_from_slice(&size.to_le_bytes());
        self.bytes.extend_from_slice(&offset.to_le_bytes());
        self.bytes.extend_from_slice(&0u16.to_le_bytes());
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn course(scorm: Scorm, part: Part, mastery: Option<u8>) -> Course {
        Course {
            title: "Kafka & <you>".into(),
            part,
            scorm,
            mastery,
        }
    }

    #[test]
    fn the_manifest_names_its_version_launch_mastery_and_every_file() {
        let files = vec!["index.html".to_string(), "sim/kafkascope-sim-0.js".to_string()];
        let v12 = manifest(&course(Scorm::V12, Part::Exercise("pitfalls".into()), Some(75)), &files);
        assert!(v12.contains("<schemaversion>1.2</schemaversion>"));
        assert!(v12.contains("adlcp:scormtype=\"sco\""));
        assert!(v12.contains(
            "href=\"index.html?embed=lesson&amp;play=0&amp;scorm=1.2&amp;mastery=75&amp;exercise=pitfalls#exercise-pitfalls\""
        ));
        assert!(v12.contains("<adlcp:masteryscore>75</adlcp:masteryscore>"));
        assert!(v12.contains("<title>Kafka &amp; &lt;you&gt;</title>"));
        assert!(v12.contains("<file href=\"sim/kafkascope-sim-0.js\"/>"));
        let v2004 = manifest(&course(Scorm::V2004, Part::Story("happy-path".into()), None), &files);
        assert!(v2004.contains("<schemaversion>2004 4th Edition</schemaversion>"));
        assert!(v2004.contains("adlcp:scormType=\"sco\""));
        assert!(v2004.contains("href=\"index.html?embed=steps&amp;play=0&amp;story=happy-path&amp;scorm=2004\""));
        assert!(!v2004.contains("imsss:sequencing"));
        let scored = manifest(&course(Scorm::V2004, Part::Lesson, Some(80)), &files);
        assert!(scored.contains("<imsss:minNormalizedMeasure>0.8</imsss:minNormalizedMeasure>"));
    }

    #[test]
    fn parts_parse_and_a_bad_one_says_what_there_is() {
        assert_eq!(Part::parse("exercise:pitfalls"), Ok(Part::Exercise("pitfalls".into())));
        assert_eq!(Part::parse("story:happy-path"), Ok(Part::Story("happy-path".into())));
        assert_eq!(Part::parse("sandbox"), Ok(Part::Sandbox));
        assert!(Part::parse("exercise:").is_err_and(|error| error.contains("lesson, exercise:ID")));
        assert!(check_part(&Part::Exercise("nope".into())).is_err_and(|error| error.contains("pitfalls")));
        assert!(check_part(&Part::Story("nope".into())).is_err_and(|error| error.contains("happy-path")));
        assert!(check_part(&Part::Story("happy-path".into())).is_ok());
    }

    #[test]
    fn the_zip_holds_each_file_deflated_with_its_crc_and_a_directory() {
        let mut zip = ZipWriter::default();
        zip.add("a.txt", b"hello hello hello").expect("add");
        zip.add("b/c.txt", b"").expect("add");
        let bytes = zip.finish();
        assert_eq!(&bytes[..4], &[0x50, 0x4b, 0x03, 0x04]);
        let end = bytes.len() - 22;
        assert_eq!(&bytes[end..end + 4], &[0x50, 0x4b, 0x05, 0x06]);
        assert_eq!(u16::from_le_bytes([bytes[end + 10], bytes[end + 11]]), 2);
        // The first entry inflates back to its bytes.
        let packed_size = u32::from_le_bytes([bytes[18], bytes[19], bytes[20], bytes[21]]) as usize;
        let start = 30 + "a.txt".len();
        let mut decoder = flate2::read::DeflateDecoder::new(&bytes[start..start + packed_size]);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut decoder, &mut text).expect("inflate");
        assert_eq!(text, "hello hello hello");
    }
}
