//! Expansion, RFC 6570 section 3 and appendix A, from JSON values.
//!
//! (We first used the `iri-string` crate here; version 0.7.14 counts a prefix modifier's
//! characters in bytes, which overflows on multibyte values — extended test vector 7.)

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::parse::{Expression, Modifier, Op, Part, VarSpec};

/// Why a template could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// A value that RFC 6570 cannot expand (nested arrays or objects, a prefix modifier on a
    /// composite value).
    #[error("variable `{name}`: {reason}")]
    UnsupportedValue {
        /// The variable.
        name: String,
        /// Why.
        reason: String,
    },
}

pub(crate) fn expand(
    parts: &[Part],
    variables: &Map<String, Value>,
) -> Result<String, ExpandError> {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Literal(text) => encode_into(&mut out, text, true),
            Part::Expression(expr) => expression(&mut out, expr, variables)?,
        }
    }
    Ok(out)
}

fn expression(
    out: &mut String,
    expr: &Expression,
    variables: &Map<String, Value>,
) -> Result<(), ExpandError> {
    let style = Style::of(expr.op);
    let mut first = true;
    for var in &expr.vars {
        let Some(value) = variables.get(&var.name) else {
            continue;
        };
        let defined = match value {
            Value::Null => false,
            Value::Array(items) => items.iter().any(|v| !v.is_null()),
            Value::Object(map) => map.values().any(|v| !v.is_null()),
            _ => true,
        };
        if !defined {
            continue;
        }
        out.push_str(if first { expr.op.first() } else { sep(expr.op) });
        first = false;
        match value {
            Value::Array(_) | Value::Object(_) if matches!(var.modifier, Modifier::Prefix(_)) => {
                return Err(unsupported(var, "a prefix modifier applies to strings only"));
            }
            Value::Array(items) => style.list(out, var, items)?,
            Value::Object(map) => style.map(out, var, map)?,
            other => {
                let mut text = scalar(other).unwrap_or_default();
                if let Modifier::Prefix(len) = var.modifier {
                    text = text.chars().take(len).collect();
                }
                if style.op.is_named() {
                    named(out, &var.name, &text, style.ifemp, style.reserved);
                } else {
                    encode_into(out, &text, style.reserved);
                }
            }
        }
    }
    Ok(())
}

fn unsupported(var: &VarSpec, reason: &str) -> ExpandError {
    ExpandError::UnsupportedValue { name: var.name.clone(), reason: reason.to_string() }
}

/// How an operator writes values: its separator, whether reserved characters pass, and what
/// an empty named value gets.
struct Style {
    op: Op,
    reserved: bool,
    ifemp: &'static str,
}

impl Style {
    fn of(op: Op) -> Self {
        let ifemp = if matches!(op, Op::Query | Op::QueryCont) { "=" } else { "" };
        Self { op, reserved: op.allows_reserved(), ifemp }
    }

    /// A list value: exploded items separated like variables, or one comma-joined value.
    fn list(&self, out: &mut String, var: &VarSpec, items: &[Value]) -> Result<(), ExpandError> {
        let (op, reserved) = (self.op, self.reserved);
        let items = items
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| {
                scalar(v).ok_or_else(|| {
                    unsupported(var, "list items must be strings, numbers or booleans")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if var.modifier == Modifier::Explode {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep(op));
                }
                if op.is_named() {
                    named(out, &var.name, item, self.ifemp, reserved);
                } else {
                    encode_into(out, item, reserved);
                }
            }
            return Ok(());
        }
        if op.is_named() {
            out.push_str(&var.name);
            out.push('=');
        }
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            encode_into(out, item, reserved);
        }
        Ok(())
    }

    /// An associative value: exploded `key=value` pairs, or one comma-joined `key,value,…`.
    fn map(
        &self,
        out: &mut String,
        var: &VarSpec,
        map: &Map<String, Value>,
    ) -> Result<(), ExpandError> {
        let (op, reserved) = (self.op, self.reserved);
        let pairs = map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| {
                scalar(v).map(|v| (k, v)).ok_or_else(|| {
                    unsupported(var, "object values must be strings, numbers or booleans")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if var.modifier == Modifier::Explode {
            for (i, (key, item)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep(op));
                }
                if op.is_named() {
                    // Keys are data, not template names: they are encoded.
                    let mut key_text = String::new();
                    encode_into(&mut key_text, key, reserved);
                    named(out, &key_text, item, self.ifemp, reserved);
                } else {
                    encode_into(out, key, reserved);
                    out.push('=');
                    encode_into(out, item, reserved);
                }
            }
            return Ok(());
        }
        if op.is_named() {
            out.push_str(&var.name);
            out.push('=');
        }
        for (i, (key, item)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            encode_into(out, key, reserved);
            out.push(',');
            encode_into(out, item, reserved);
        }
        Ok(())
    }
}

/// `name=value`, or `name` + ifemp for an empty value. Names are written as in the template.
fn named(out: &mut String, name: &str, value: &str, ifemp: &str, reserved: bool) {
    out.push_str(name);
    if value.is_empty() {
        out.push_str(ifemp);
    } else {
        out.push('=');
        encode_into(out, value, reserved);
    }
}

fn sep(op: Op) -> &'static str {
    match op.sep() {
        ',' => ",",
        '.' => ".",
        '/' => "/",
        ';' => ";",
        _ => "&",
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// RFC 6570 / RFC 3986 unreserved: `ALPHA DIGIT - . _ ~`.
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 reserved: gen-delims and sub-delims.
pub(crate) fn is_reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

/// Percent-encode `text` (UTF-8, upper-case hex). With `reserved`, reserved characters and
/// existing `%XX` triplets pass through (reserved expansion and literals).
pub(crate) fn encode_into(out: &mut String, text: &str, reserved: bool) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let triplet = reserved
            && b == b'%'
            && bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        if triplet {
            out.push_str(&text[i..i + 3]);
            i += 3;
            continue;
        }
        if is_unreserved(b) || (reserved && is_reserved(b)) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
        i += 1;
    }
}
