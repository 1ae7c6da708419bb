//! The scenario format's reference, written from its JSON Schema (which
//! schemars generates from the engine's types and their doc comments), so
//! the reference cannot drift from what `Scenario::from_json` takes:
//! `kafkascope schema --format json|markdown|html`. The site publishes the
//! schema and the HTML page; `docs/` keeps the schema and the Markdown (a
//! test checks that all three are what this writes).

use serde_json::Value;

/// The schema as the site publishes it (pretty JSON, a final newline).
pub fn schema_json() -> String {
    let schema = kafkascope_engine::sim::scenario::json_schema();
    format!("{}\n", serde_json::to_string_pretty(&schema).unwrap_or_default())
}

/// The reference as Markdown: the file's top level, then every type it
/// names, each with its fields (type, required or default, meaning) or its
/// values, and each kind of input or expectation with its own fields.
pub fn markdown() -> String {
    let schema = kafkascope_engine::sim::scenario::json_schema();
    let mut out = String::from(
        "# The scenario file format\n\n\
         Written from the types kafkascope's parser reads (`kafkascope schema\n\
         --format markdown`), so it always says what the page and `kafkascope run`\n\
         accept. The same format as a JSON Schema: `scenario.schema.json`.\n\
         A scenario file is one JSON object, a `Scenario`; fields not listed are\n\
         refused, with their line and column. Times are milliseconds of\n\
         simulated time. A story you open in the page is named `custom-` and its\n\
         `story.id` in the host page API's events.\n\n",
    );
    write_definition(&mut out, "Scenario", &schema);
    if let Some(Value::Object(definitions)) = schema.get("$defs") {
        for (name, definition) in definitions {
            write_definition(&mut out, name, definition);
        }
    }
    out
}

/// The reference as a standalone HTML page for the site.
pub fn html() -> String {
    let markdown = markdown();
    use pulldown_cmark::{CowStr, Event, Tag, TagEnd};
    let mut body = String::new();
    let parser = pulldown_cmark::Parser::new_ext(&markdown, pulldown_cmark::Options::ENABLE_TABLES);
    // Only the anchors this file writes pass as HTML, and links only to
    // this page or the web: any other markup in a doc comment is text.
    let mut dropped_links = Vec::new();
    let events = parser.filter_map(|event| match event {
        Event::Html(html) | Event::InlineHtml(html) => Some(if is_anchor(&html) {
            Event::Html(html)
        } else {
            Event::Text(html)
        }),
        Event::Start(Tag::Link { dest_url, .. }) if !safe_link(&dest_url) => {
            dropped_links.push(());
            None
        }
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Some(Event::Start(Tag::Link {
            link_type,
            dest_url: CowStr::from(dest_url.to_string()),
            title,
            id,
        })),
        Event::End(TagEnd::Link) if dropped_links.pop().is_some() => None,
        other => Some(other),
    });
    pulldown_cmark::html::push_html(&mut body, events);
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>kafkascope: the scenario file format</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n{STYLE}</style>\n</head>\n\
         <body>\n<main>\n<p><a href=\"./\">kafkascope</a> · <a href=\"scenario.schema.json\">JSON Schema</a></p>\n\
         {body}</main>\n</body>\n</html>\n"
    )
}

const STYLE: &str = "body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1b1f24; background: #fff; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid #c9d1d9; padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
h2, h3, h4, p, li { overflow-wrap: anywhere; }
code { background: #f0f3f6; padding: 0 0.2rem; border-radius: 3px; }
a { color: #0550ae; }
h2 { border-top: 1px solid #c9d1d9; padding-top: 1rem; }
";

/// `<a id="name"></a>`, the one piece of HTML the reference writes (which
/// Markdown reads as its opening and closing tags, inline).
fn is_anchor(html: &str) -> bool {
    let html = html.trim();
    let html = html.strip_suffix("</a>").unwrap_or(html);
    html.is_empty()
        || html
            .strip_prefix("<a id=\"")
            .and_then(|rest| rest.strip_suffix("\">"))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-'))
}

/// A link target the page may keep: this page's anchors or the web.
fn safe_link(target: &str) -> bool {
    target.starts_with('#') || target.starts_with("https://") || target.starts_with("http://")
}

/// A doc comment as the reference shows it: rustdoc's links to other
/// items (`` [`Name`] ``, `` [`Name`](path) ``) become plain code.
fn plain_doc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(close) = after.find("`]") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let code = &after[..close + 1];
        rest = &after[close + 2..];
        // A target in parentheses: a web link stays a link, an intra-doc
        // path goes.
        let target = rest
            .strip_prefix('(')
            .and_then(|target| Some(&target[..target.find(')')?]));
        match target {
            Some(target) if safe_link(target) => {
                out.push_str(&format!("[{code}]({target})"));
                rest = &rest[target.len() + 2..];
            }
            Some(target) => {
                out.push_str(code);
                rest = &rest[target.len() + 2..];
            }
            None => out.push_str(code),
        }
    }
    out.push_str(rest);
    out
}

fn anchor(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// One line of a description: its paragraphs joined, safe in a table cell.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

fn description(schema: &Value) -> String {
    plain_doc(schema.get("description").and_then(Value::as_str).unwrap_or_default())
}

fn write_definition(out: &mut String, name: &str, schema: &Value) {
    out.push_str(&format!("<a id=\"{}\"></a>\n\n## {name}\n\n", anchor(name)));
    let text = description(schema);
    if !text.is_empty() {
        out.push_str(&format!("{}\n\n", text.trim()));
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.push_str(&format!(
            "One of: {}.\n\n",
            values.iter().map(literal).collect::<Vec<_>>().join(", ")
        ));
    }
    if schema.get("properties").is_some() {
        write_fields(out, schema, None);
    }
    let variants = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array);
    for variant in variants.into_iter().flatten() {
        write_variant(out, variant, 3);
    }
    if schema.get("enum").is_none() && schema.get("properties").is_none() && variants.is_none() {
        out.push_str(&format!("Type: {}.\n\n", type_of(schema)));
    }
}

/// One kind of a tagged enum (an input, an expectation, a knob): its tag's
/// value as a heading of `level`, then its other fields and the kinds it
/// holds in turn (`setConfig`'s knobs); a plain value is a list item.
fn write_variant(out: &mut String, variant: &Value, level: usize) {
    let hashes = "#".repeat(level);
    let tag = variant
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|properties| {
            properties.iter().find_map(|(field, schema)| {
                let value = schema
                    .get("const")
                    .or_else(|| schema.get("enum").and_then(|values| values.get(0)))?;
                (schema
                    .get("enum")
                    .is_none_or(|values| values.as_array().is_some_and(|values| values.len() == 1)))
                .then(|| (field.clone(), value.clone()))
            })
        });
    match &tag {
        Some((field, value)) => out.push_str(&format!("{hashes} `{field}`: {}\n\n", literal(value))),
        None => match variant
            .get("enum")
            .and_then(Value::as_array)
            .cloned()
            .or_else(|| variant.get("const").map(|value| vec![value.clone()]))
        {
            Some(values) => {
                out.push_str(&format!(
                    "- {}",
                    values.iter().map(literal).collect::<Vec<_>>().join(", ")
                ));
                let text = description(variant);
                if !text.is_empty() {
                    out.push_str(&format!(": {}", cell(&text)));
                }
                out.push_str("\n\n");
                return;
            }
            None => out.push_str(&format!("{hashes} {}\n\n", type_of(variant))),
        },
    }
    let text = description(variant);
    if !text.is_empty() {
        out.push_str(&format!("{}\n\n", text.trim()));
    }
    if variant.get("properties").is_some() {
        write_fields(out, variant, tag.as_ref().map(|(field, _)| field.as_str()));
    }
    // A kind whose fields are another type's (`setConfig` and its knob).
    let included: Vec<&Value> = std::iter::once(variant)
        .chain(variant.get("allOf").and_then(Value::as_array).into_iter().flatten())
        .filter(|schema| schema.get("$ref").is_some())
        .collect();
    for schema in included {
        out.push_str(&format!("With the fields of {}.\n\n", type_of(schema)));
    }
    for inner in variant.get("oneOf").and_then(Value::as_array).into_iter().flatten() {
        write_variant(out, inner, level + 1);
    }
}

fn write_fields(out: &mut String, schema: &Value, tag: Option<&str>) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let rows: Vec<_> = properties
        .iter()
        .filter(|(field, _)| Some(field.as_str()) != tag)
        .collect();
    if rows.is_empty() {
        if ["$ref", "allOf", "oneOf"].iter().all(|key| schema.get(key).is_none()) {
            out.push_str("No other fields.\n\n");
        }
        return;
    }
    out.push_str("| Field | Type | Required or default | Meaning |\n|---|---|---|---|\n");
    for (field, property) in rows {
        let need = if required.contains(&field.as_str()) {
            "required".to_string()
        } else {
            match property.get("default") {
                Some(value) => format!("default {}", literal(value)),
                None => "optional".to_string(),
            }
        };
        out.push_str(&format!(
            "| `{field}` | {} | {} | {} |\n",
            type_of(property),
            cell(&need),
            cell(&description(property))
        ));
    }
    out.push('\n');
}

/// A JSON value as the reference shows it: `"text"`, `3`, `null`.
fn literal(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    if text.len() > 60 {
        "(see the schema)".to_string()
    } else {
        format!("`{}`", text.replace('|', "\\|"))
    }
}

/// A field's type in words, with links to the types it names.
fn type_of(schema: &Value) -> String {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return format!("[{name}](#{})", anchor(name));
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().map(literal).collect::<Vec<_>>().join(" or ");
    }
    if let Some(value) = schema.get("const") {
        return literal(value);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let (nulls, others): (Vec<&Value>, Vec<&Value>) = options
                .iter()
                .partition(|option| option.get("type").and_then(Value::as_str) == Some("null"));
            let words: Vec<String> = others.iter().map(|option| type_of(option)).collect();
            let mut text = words.join(" or ");
            if !nulls.is_empty() {
                text.push_str(" or null");
            }
            return text;
        }
    }
    let kinds: Vec<&str> = match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => return "any".to_string(),
    };
    let words: Vec<String> = kinds
        .iter()
        .map(|kind| match *kind {
            "array" => format!("list of {}", schema.get("items").map_or("any".to_string(), type_of)),
            "object" => match schema.get("additionalProperties") {
                Some(values) if values.is_object() => format!("map of text to {}", type_of(values)),
                _ => "object".to_string(),
            },
            "integer" => match schema.get("minimum").and_then(Value::as_f64) {
                Some(minimum) => format!("integer ≥ {minimum}"),
                None => "integer".to_string(),
            },
            "string" => "text".to_string(),
            other => other.to_string(),
        })
        .collect();
    words.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_links_become_code_and_markup_stays_text() {
        assert_eq!(
            plain_doc("See [`ProducerConfig::delivery_timeout`] and [`OutputAudit`](super::ledger::OutputAudit)."),
            "See `ProducerConfig::delivery_timeout` and `OutputAudit`."
        );
        assert_eq!(
            plain_doc("[`KIP`](https://kafka.apache.org)"),
            "[`KIP`](https://kafka.apache.org)"
        );
        assert!(is_anchor("<a id=\"clusterconfig\"></a>\n"));
        assert!(!is_anchor("<img src=x onerror=alert(1)>"));
        assert!(!is_anchor("<a id=\"x\" onclick=\"y\"></a>"));
        assert!(is_anchor("<a id=\"acks\">") && is_anchor("</a>"));
        assert!(!is_anchor("<a href=\"javascript:x\">"));
        assert!(safe_link("#scenario") && safe_link("https://kafka.apache.org/"));
        assert!(!safe_link("javascript:alert(1)") && !safe_link("super::ledger"));
    }

    #[test]
    fn the_page_keeps_no_markup_or_links_a_doc_comment_could_carry() {
        let page = html();
        assert!(!page.contains("<img") && !page.contains("javascript:"));
        assert!(!page.contains("href=\"super::") && !page.contains("href=\"crate::"));
        // Every type has its anchor, and every link to a type lands on one.
        assert!(page.contains("<a id=\"clusterconfig\"></a>"), "the anchors are markup");
        assert!(!page.contains("&lt;a id="));
        for link in page.split("href=\"#").skip(1) {
            let id = &link[..link.find('"').unwrap_or(0)];
            assert!(page.contains(&format!("<a id=\"{id}\">")), "#{id} leads nowhere");
        }
    }
}
