//! Editing an agent's JSON config (JSON with comments and trailing commas, as VS Code's and
//! Gemini CLI's are) in place: one member of an object added or replaced, every other byte of
//! the file kept. A small scanner finds where each member's key and value are in the text.

use std::ops::Range;

/// One member of an object: its key (unescaped) and where its value is in the text.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) key: String,
    /// Where the key's opening quote is.
    pub(crate) key_at: usize,
    pub(crate) value: Range<usize>,
}

/// An object in the text: where its braces are, and its members.
#[derive(Debug, Clone)]
pub(crate) struct Object {
    pub(crate) open: usize,
    pub(crate) close: usize,
    pub(crate) members: Vec<Member>,
}

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn error(&self, what: &str) -> String {
        let line =
            self.text[..self.at.min(self.text.len())].iter().filter(|b| **b == b'\n').count();
        format!("{what} at line {}", line + 1)
    }

    /// Past whitespace and comments.
    fn skip(&mut self) -> Result<(), String> {
        loop {
            match (self.text.get(self.at), self.text.get(self.at + 1)) {
                (Some(b' ' | b'\t' | b'\n' | b'\r'), _) => self.at += 1,
                (Some(b'/'), Some(b'/')) => {
                    while self.text.get(self.at).is_some_and(|b| *b != b'\n') {
                        self.at += 1;
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let rest = &self.text[self.at + 2..];
                    let end = rest.windows(2).position(|w| w == b"*/");
                    let end = end.ok_or_else(|| self.error("an unclosed comment"))?;
                    self.at += 2 + end + 2;
                }
                _ => return Ok(()),
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.text.get(self.at) {
                Some(b'"') => break,
                Some(b'\\') => self.at += 2,
                Some(_) => self.at += 1,
                None => return Err(self.error("an unclosed string")),
            }
        }
        self.at += 1;
        let raw = std::str::from_utf8(&self.text[start..self.at]).map_err(|e| e.to_string())?;
        serde_json::from_str(raw).map_err(|e| self.error(&format!("a bad string ({e})")))
    }

    /// A value of any kind; objects are read member by member into `objects` (`depth` 0 is
    /// the top).
    fn value(&mut self) -> Result<Range<usize>, String> {
        self.skip()?;
        let start = self.at;
        match self.text.get(self.at) {
            Some(b'{') => {
                self.object()?;
            }
            Some(b'[') => {
                self.at += 1;
                loop {
                    self.skip()?;
                    match self.text.get(self.at) {
                        Some(b']') => break,
                        Some(b',') => self.at += 1,
                        Some(_) => {
                            self.value()?;
                        }
                        None => return Err(self.error("an unclosed array")),
                    }
                }
                self.at += 1;
            }
            Some(b'"') => {
                self.string()?;
            }
            Some(_) => {
                let literal = |b: &u8| b.is_ascii_alphanumeric() || b"+-.".contains(b);
                while self.text.get(self.at).is_some_and(literal) {
                    self.at += 1;
                }
                if self.at == start {
                    return Err(self.error("an unexpected character"));
                }
            }
            None => return Err(self.error("the end of the file where a value was expected")),
        }
        Ok(start..self.at)
    }

    fn object(&mut self) -> Result<Object, String> {
        let open = self.at;
        self.at += 1;
        let mut members = Vec::new();
        loop {
            self.skip()?;
            match self.text.get(self.at) {
                Some(b'}') => break,
                Some(b',') => self.at += 1,
                Some(b'"') => {
                    let key_at = self.at;
                    let key = self.string()?;
                    self.skip()?;
                    if self.text.get(self.at) != Some(&b':') {
                        return Err(self.error("a missing `:`"));
                    }
                    self.at += 1;
                    let value = self.value()?;
                    members.push(Member { key, key_at, value });
                }
                _ => return Err(self.error("an unclosed object")),
            }
        }
        let close = self.at;
        self.at += 1;
        Ok(Object { open, close, members })
    }
}

/// The top-level object of `text`.
pub(crate) fn top(text: &str) -> Result<Object, String> {
    // A byte order mark, as some editors write one, is not part of the JSON.
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut scanner = Scanner { text: text.as_bytes(), at: start };
    scanner.skip()?;
    if scanner.text.get(scanner.at) != Some(&b'{') {
        return Err(scanner.error("not a JSON object"));
    }
    let object = scanner.object()?;
    scanner.skip()?;
    if scanner.at < scanner.text.len() {
        return Err(scanner.error("text after the object"));
    }
    Ok(object)
}

/// The object whose text is `range` of `text`.
pub(crate) fn object_at(text: &str, range: &Range<usize>) -> Option<Object> {
    let mut scanner = Scanner { text: text.as_bytes(), at: range.start };
    (text.as_bytes().get(range.start) == Some(&b'{')).then(|| scanner.object().ok()).flatten()
}

/// The indentation of the line `at` is on.
fn indent_of(text: &str, at: usize) -> &str {
    let line = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let width = text[line..].bytes().take_while(|b| *b == b' ' || *b == b'\t').count();
    &text[line..line + width]
}

/// One step of indentation in `text`: the leading whitespace of its first indented line
/// (a tab, two or four spaces…), two spaces when nothing is indented.
fn unit_of(text: &str) -> &str {
    let indented = text.lines().map(|l| {
        let width = l.bytes().take_while(|b| *b == b' ' || *b == b'\t').count();
        (&l[..width], width < l.len())
    });
    indented
        .filter(|(lead, more)| !lead.is_empty() && *more)
        .map(|(lead, _)| lead)
        .next()
        .unwrap_or("  ")
}

/// `value` (JSON text indented by two spaces a step) at `indent`, a step being `unit`.
fn placed(value: &str, indent: &str, unit: &str) -> String {
    let mut lines = value.lines();
    let mut out = lines.next().unwrap_or_default().to_string();
    for line in lines {
        let width = line.bytes().take_while(|b| *b == b' ').count();
        out.push('\n');
        out.push_str(indent);
        out.push_str(&unit.repeat(width / 2));
        out.push_str(&line[width..]);
    }
    out
}

/// `text` with `key: value` set in `object`: the member's value replaced when it is there,
/// else the member added after the last one (or into the empty object), indented as its
/// neighbours are. `value` is JSON text written at the member's indentation.
pub(crate) fn set_member(text: &str, object: &Object, key: &str, value: &str) -> String {
    let edited = set_member_lf(text, object, key, value);
    match text.contains("\r\n") {
        // A file of CRLF lines gets CRLF lines: only the new text is touched.
        true => {
            let (a, b) = common_ends(text, &edited);
            let new = edited[a..edited.len() - b].replace("\r\n", "\n").replace('\n', "\r\n");
            format!("{}{new}{}", &edited[..a], &edited[edited.len() - b..])
        }
        false => edited,
    }
}

/// How many bytes `a` and `b` share at their start and (after that) at their end, on
/// character boundaries of both.
fn common_ends(a: &str, b: &str) -> (usize, usize) {
    let mut prefix = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !(a.is_char_boundary(prefix) && b.is_char_boundary(prefix)) {
        prefix -= 1;
    }
    let (ra, rb) = (&a.as_bytes()[prefix..], &b.as_bytes()[prefix..]);
    let mut suffix = ra.iter().rev().zip(rb.iter().rev()).take_while(|(x, y)| x == y).count();
    while !(a.is_char_boundary(a.len() - suffix) && b.is_char_boundary(b.len() - suffix)) {
        suffix -= 1;
    }
    (prefix, suffix)
}

fn set_member_lf(text: &str, object: &Object, key: &str, value: &str) -> String {
    let key_json = serde_json::to_string(key).unwrap_or_default();
    let unit = unit_of(text);
    if let Some(member) = object.members.iter().find(|m| m.key == key) {
        let value = placed(value, indent_of(text, member.key_at), unit);
        return format!("{}{value}{}", &text[..member.value.start], &text[member.value.end..]);
    }
    let outer = indent_of(text, object.open).to_string();
    match object.members.last() {
        Some(last) => {
            let indent = indent_of(text, last.key_at).to_string();
            let value = placed(value, &indent, unit);
            let same_line = !text[object.members[0].key_at..object.close].contains('\n');
            let gap = if same_line { " ".to_string() } else { format!("\n{indent}") };
            format!(
                "{},{gap}{key_json}: {value}{}",
                &text[..last.value.end],
                &text[last.value.end..]
            )
        }
        None => {
            let indent = format!("{outer}{unit}");
            let value = placed(value, &indent, unit);
            format!(
                "{}\n{indent}{key_json}: {value}\n{outer}{}",
                &text[..object.open + 1],
                &text[object.close..]
            )
        }
    }
}

/// `text` as plain JSON: comments blanked, trailing commas dropped (for checking an edit).
pub(crate) fn plain(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'"', _) => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(bytes.len());
                out.extend_from_slice(&bytes[start..i]);
            }
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let end = text[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e + 2);
                i = end;
            }
            (b',', _) => {
                let next = bytes[i + 1..].iter().position(|b| !b.is_ascii_whitespace());
                let closes = next.is_some_and(|n| matches!(bytes[i + 1 + n], b'}' | b']'));
                if !closes {
                    out.push(b',');
                }
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str, path: &[&str], key: &str, value: &str) -> String {
        let mut object = top(text).expect("an object");
        for step in path {
            let member = object.members.iter().find(|m| m.key == *step).expect("the member");
            object = object_at(text, &member.value).expect("an object");
        }
        set_member(text, &object, key, value)
    }

    /// Added beside its neighbours with their indentation (tabs too), into an empty object on
    /// lines of its own, replaced in place; CRLF files get CRLF lines; a BOM is kept.
    #[test]
    fn a_member_is_set_and_every_other_byte_kept() {
        let value = "{\n  \"command\": \"r\"\n}";
        let tabs = "{\n\t\"s\": {\n\t\t\"a\": 1\n\t}\n}\n";
        assert_eq!(
            set(tabs, &["s"], "b", value),
            "{\n\t\"s\": {\n\t\t\"a\": 1,\n\t\t\"b\": {\n\t\t\t\"command\": \"r\"\n\t\t}\n\t}\n}\n"
        );
        assert_eq!(set("{\"s\": {}}", &["s"], "b", "1"), "{\"s\": {\n  \"b\": 1\n}}");
        assert_eq!(
            set("{\"s\": {\"b\": 2, \"c\": 3}}", &["s"], "b", "1"),
            "{\"s\": {\"b\": 1, \"c\": 3}}"
        );
        let crlf = "{\r\n  \"s\": {\r\n    \"a\": 1\r\n  }\r\n}\r\n";
        let out = set(crlf, &["s"], "b", value);
        assert!(!out.replace("\r\n", "").contains('\n'), "CRLF only: {out:?}");
        assert!(out.starts_with("{\r\n  \"s\": {\r\n    \"a\": 1,\r\n    \"b\": {"), "{out:?}");
        let bom = "\u{feff}{\"s\": {}}";
        let out = set(bom, &["s"], "b", "1");
        assert!(out.starts_with('\u{feff}'));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&plain(&out)).expect("JSON")["s"]["b"],
            1
        );
        // Comments, strings with braces and escapes are read past.
        let tricky = "/* { */ {\"s\": {\"x\": \"}\\\"{\" // }\n}}";
        let out = set(tricky, &["s"], "b", "1");
        let parsed: serde_json::Value = serde_json::from_str(&plain(&out)).expect("JSON");
        assert_eq!(parsed, serde_json::json!({"s": {"x": "}\"{", "b": 1}}), "{out}");
        assert!(out.starts_with("/* { */ {\"s\": {\"x\": \"}\\\"{\","), "{out}");
        assert!(top("{\"a\": ").is_err() && top("[1]").is_err() && top("{} x").is_err());
    }
}
