//! Where a value sits in a JSON text: the line and column of the value at
//! a path such as `inputs[3].input.producer`, so that an error found after
//! parsing (a producer the cluster does not have) points at the same
//! place as serde's own errors do ("at line 12 column 40").
//!
//! A small scanner over the text, not a second parser: it reads only as
//! far as the value it looks for, and gives up (`None`) on text that is
//! not JSON, which serde has refused before anyone asks.

/// One step of a path: an object's field or an array's element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// A field of an object, by name.
    Field(&'a str),
    /// An element of an array, from 0.
    Index(usize),
}

/// The 1-based line and column of the first character of the value at
/// `path` in `text` (a column counts characters, as an editor does).
pub fn position(text: &str, path: &[Step<'_>]) -> Option<(usize, usize)> {
    let mut scanner = Scanner { text: text.as_bytes(), at: 0 };
    scanner.skip_space();
    let start = scanner.find(path, 0)?;
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    Some((line, text[line_start..start].chars().count() + 1))
}

/// How deep the scanner goes before it gives up (the scenario parser
/// refuses deeper text anyway).
const MAX_DEPTH: usize = 128;

struct Scanner<'t> {
    text: &'t [u8],
    at: usize,
}

impl<'t> Scanner<'t> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_space();
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    /// With the scanner on a value: the offset of the value at `path`
    /// inside it (the value itself for an empty path).
    fn find(&mut self, path: &[Step<'_>], depth: usize) -> Option<usize> {
        self.skip_space();
        let Some((step, rest)) = path.split_first() else {
            return Some(self.at);
        };
        if depth > MAX_DEPTH {
            return None;
        }
        match (self.peek()?, step) {
            (b'{', Step::Field(wanted)) => {
                self.at += 1;
                loop {
                    self.skip_space();
                    if self.peek()? == b'}' {
                        return None;
                    }
                    let name = self.string()?;
                    self.eat(b':')?;
                    if name == wanted.as_bytes() {
                        return self.find(rest, depth + 1);
                    }
                    self.skip_value(depth + 1)?;
                    self.skip_space();
                    if self.peek()? == b',' {
                        self.at += 1;
                    }
                }
            }
            (b'[', Step::Index(wanted)) => {
                self.at += 1;
                for _ in 0..*wanted {
                    self.skip_space();
                    if self.peek()? == b']' {
                        return None;
                    }
                    self.skip_value(depth + 1)?;
                    self.eat(b',')?;
                }
                self.skip_space();
                if self.peek()? == b']' {
                    return None;
                }
                self.find(rest, depth + 1)
            }
            _ => None,
        }
    }

    /// Reads a string's raw bytes (escapes left as written: field names
    /// with escapes do not match, which is fine for kafkascope's fields).
    fn string(&mut self) -> Option<&'t [u8]> {
        if self.peek()? != b'"' {
            return None;
        }
        self.at += 1;
        let start = self.at;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    let text: &'t [u8] = self.text;
                    return text.get(start..self.at - 1);
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    fn skip_value(&mut self, depth: usize) -> Option<()> {
        self.skip_space();
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                loop {
                    self.skip_space();
                    if self.peek()? == close {
                        self.at += 1;
                        return Some(());
                    }
                    if open == b'{' {
                        self.string()?;
                        self.eat(b':')?;
                    }
                    self.skip_value(depth + 1)?;
                    self.skip_space();
                    if self.peek()? == b',' {
                        self.at += 1;
                    }
                }
            }
            _ => {
                // A number, `true`, `false` or `null`: up to the next
                // delimiter.
                let start = self.at;
                while !matches!(self.peek(), None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{position, Step};

    #[test]
    fn finds_a_nested_value_by_its_path() {
        let text = "{\n  \"name\": \"x\",\n  \"inputs\": [\n    { \"atMs\": 1, \"input\": { \"type\": \"produce\", \"producer\": 0 } },\n    { \"atMs\": 2, \"input\": { \"type\": \"produce\", \"producer\": 3 } }\n  ]\n}\n";
        let path = [Step::Field("inputs"), Step::Index(1), Step::Field("input"), Step::Field("producer")];
        assert_eq!(position(text, &path), Some((5, 60)));
        assert_eq!(position(text, &[Step::Field("name")]), Some((2, 11)));
        assert_eq!(position(text, &[Step::Field("inputs"), Step::Index(2)]), None);
        assert_eq!(position(text, &[Step::Field("missing")]), None);
        assert_eq!(position(text, &[]), Some((1, 1)));
    }

    #[test]
    fn skips_strings_with_escapes_and_nested_values_and_counts_characters() {
        let text = r#"{"a": "q\"}]", "b": [{"c": [1, {"d": null}]}, true], "é": 1, "e": -2.5e3}"#;
        assert_eq!(position(text, &[Step::Field("e")]), Some((1, 67)));
        assert_eq!(
            position(text, &[Step::Field("b"), Step::Index(0), Step::Field("c"), Step::Index(1), Step::Field("d")]),
            Some((1, 38))
        );
        assert_eq!(position(text, &[Step::Field("b"), Step::Index(1)]), Some((1, 47)));
    }

    #[test]
    fn gives_up_on_what_is_not_json() {
        for text in ["", "{", "{\"a\" 1}", "[1, 2", "{\"a\": \"unterminated"] {
            assert_eq!(position(text, &[Step::Field("a"), Step::Index(3)]), None, "{text}");
        }
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        assert_eq!(position(&deep, &vec![Step::Index(0); 400]), None);
    }
}
