//! The inverse of expansion: which variables produce a URI. Backtracking over the parts, each
//! expression trying its longest candidate first (see the crate docs for the rules).

use serde_json::{Map, Value};

use crate::expand::{is_reserved, is_unreserved};
use crate::parse::{Expression, Modifier, Op, Part};

/// Longest URI we try to match (keeps backtracking bounded).
const MAX_URI_LEN: usize = 8 * 1024;

pub(crate) fn match_uri(parts: &[Part], uri: &str) -> Option<Map<String, Value>> {
    if uri.len() > MAX_URI_LEN {
        return None;
    }
    let mut vars = Map::new();
    matches_from(parts, uri, &mut vars).then_some(vars)
}

fn matches_from(parts: &[Part], rest: &str, vars: &mut Map<String, Value>) -> bool {
    let Some((part, tail)) = parts.split_first() else {
        return rest.is_empty();
    };
    match part {
        Part::Literal(lit) => {
            literal_len(lit, rest).is_some_and(|n| matches_from(tail, &rest[n..], vars))
        }
        Part::Expression(expr) => {
            let max = candidate_len(expr, rest);
            for end in (0..=max).rev().filter(|e| rest.is_char_boundary(*e)) {
                // Prune: the next literal must start right here.
                if let Some(Part::Literal(next)) = tail.first()
                    && literal_len(next, &rest[end..]).is_none()
                {
                    continue;
                }
                if let Some(found) = decode_expression(expr, &rest[..end]) {
                    let saved = vars.clone();
                    vars.extend(found);
                    if matches_from(tail, &rest[end..], vars) {
                        return true;
                    }
                    *vars = saved;
                }
            }
            false
        }
    }
}

/// The length of `literal` at the start of `rest`, as written or as expansion encodes it
/// (`café` → `caf%C3%A9`).
fn literal_len(literal: &str, rest: &str) -> Option<usize> {
    if rest.starts_with(literal) {
        return Some(literal.len());
    }
    let mut encoded = String::new();
    crate::expand::encode_into(&mut encoded, literal, true);
    rest.starts_with(&encoded).then_some(encoded.len())
}

/// How far an expansion of `op` can reach into `rest`: the run of characters it may produce.
fn candidate_len(expr: &Expression, rest: &str) -> usize {
    // An exploded associative array writes `key=value` pairs in any operator.
    let explodes = expr.vars.iter().any(|v| v.modifier == Modifier::Explode);
    let mut len = 0;
    for (i, c) in rest.char_indices() {
        if !(allowed(expr.op, c) || (explodes && c == '=')) {
            break;
        }
        len = i + c.len_utf8();
    }
    len
}

fn allowed(op: Op, c: char) -> bool {
    // Non-ASCII characters (IRIs) count as unreserved.
    let byte = c.is_ascii().then_some(c as u8);
    let unreserved = byte.is_none_or(|b| is_unreserved(b) || b == b'%');
    if unreserved || c == ',' {
        return true;
    }
    if op.allows_reserved() {
        return byte.is_some_and(is_reserved);
    }
    let first = op.first().chars().next();
    Some(c) == first || c == op.sep() || (op.is_named() && c == '=')
}

/// The variables one expression's expansion `text` stands for, or `None` if it cannot be one.
fn decode_expression(expr: &Expression, text: &str) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    if text.is_empty() {
        return Some(out);
    }
    let body = text.strip_prefix(expr.op.first())?;
    if expr.op.first().is_empty() && !expr.op.allows_reserved() && text.starts_with(',') {
        return None;
    }
    let items: Vec<&str> = body.split(expr.op.sep()).collect();
    if expr.op.is_named() {
        decode_named(expr, &items, &mut out)?;
    } else {
        decode_positional(expr, &items, &mut out)?;
    }
    Some(out)
}

fn decode_positional(
    expr: &Expression,
    items: &[&str],
    out: &mut Map<String, Value>,
) -> Option<()> {
    let op = expr.op;
    let last = expr.vars.len().saturating_sub(1);
    let mut next = 0;
    for (i, var) in expr.vars.iter().enumerate() {
        if next >= items.len() {
            break;
        }
        // The last variable takes every remaining item; an earlier exploded one takes all but
        // one item per variable after it; any other variable takes one item.
        let take = if i == last {
            items.len() - next
        } else if var.modifier == Modifier::Explode {
            (items.len() - next).saturating_sub(last - i).max(1)
        } else {
            1
        };
        let taken = &items[next..next + take];
        next += take;
        let value = if var.modifier == Modifier::Explode {
            exploded(op, taken)?
        } else if taken.len() == 1 || op.sep() != ',' || op.allows_reserved() {
            // Separators inside one plain value (`{.v}` with `a.b`, `{+v}` with `a,b`).
            value_of(op, &taken.join(&op.sep().to_string()))?
        } else {
            // Several comma-separated items for one plain variable: a list value.
            list(op, taken)?
        };
        out.insert(var.name.clone(), value);
    }
    Some(())
}

/// An exploded value: `a=1,b=2` is an associative array, anything else a list.
fn exploded(op: Op, items: &[&str]) -> Option<Value> {
    if items.iter().all(|s| s.contains('=')) {
        let mut map = Map::new();
        for item in items {
            let (k, v) = item.split_once('=')?;
            map.insert(decode_for(op, k)?, Value::String(decode_for(op, v)?));
        }
        return Some(Value::Object(map));
    }
    list(op, items)
}

fn list(op: Op, items: &[&str]) -> Option<Value> {
    items
        .iter()
        .map(|s| decode_for(op, s).map(Value::String))
        .collect::<Option<_>>()
        .map(Value::Array)
}

/// One item's value. Where a string's commas would have been percent-encoded, a raw comma
/// can only come from a list value, so the item is a list.
fn value_of(op: Op, raw: &str) -> Option<Value> {
    if !op.allows_reserved() && raw.contains(',') {
        return list(op, &raw.split(',').collect::<Vec<_>>());
    }
    decode_for(op, raw).map(Value::String)
}

/// Reserved and fragment expansion pass reserved characters and existing `%XX` triplets
/// through and encode the rest. So a triplet is decoded only if expansion could have written
/// it: a character that is neither unreserved nor reserved (space, `%`, `"`, non-ASCII …).
/// `admin%2F` stays `admin%2F`; `a%20b` becomes `a b`. Other operators decode everything.
fn decode_for(op: Op, text: &str) -> Option<String> {
    if !op.allows_reserved() {
        return decode(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let mut run = Vec::new();
        let mut j = i;
        while let Some(b) = encoded_triplet(text, j) {
            run.push(b);
            j += 3;
            if b < 0x80 {
                break;
            }
        }
        match std::str::from_utf8(&run) {
            Ok(decoded) if !run.is_empty() => {
                out.push_str(decoded);
                i = j;
            }
            _ => {
                let c = text[i..].chars().next()?;
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    Some(out)
}

/// The byte of a `%XX` triplet at `at` that reserved expansion would have produced.
fn encoded_triplet(text: &str, at: usize) -> Option<u8> {
    let hex = text.get(at..at + 3)?.strip_prefix('%')?;
    let b = u8::from_str_radix(hex, 16).ok()?;
    let passes_through = is_unreserved(b) || is_reserved(b);
    (!passes_through).then_some(b)
}

fn decode_named(expr: &Expression, items: &[&str], out: &mut Map<String, Value>) -> Option<()> {
    let exploded = expr.vars.iter().find(|v| v.modifier == Modifier::Explode);
    for item in items {
        // Names are compared as written: a template's variable names may be percent-encoded.
        let (name, raw) = item.split_once('=').unwrap_or((item, ""));
        let name = name.to_string();
        let value = value_of(expr.op, raw)?;
        match expr.vars.iter().find(|v| v.name == name) {
            Some(var) if var.modifier == Modifier::Explode => match out.get_mut(&name) {
                Some(Value::Array(list)) => list.push(value),
                Some(first) => {
                    let first = std::mem::take(first);
                    out.insert(name, Value::Array(vec![first, value]));
                }
                None => {
                    out.insert(name, value);
                }
            },
            Some(var) => {
                if out.contains_key(&var.name) {
                    return None;
                }
                out.insert(name, value);
            }
            None => {
                let var = exploded?;
                let name = decode_for(expr.op, &name)?;
                let entry =
                    out.entry(var.name.clone()).or_insert_with(|| Value::Object(Map::new()));
                entry.as_object_mut()?.insert(name, value);
            }
        }
    }
    Some(())
}

/// Percent-decode; `None` if a triplet is broken or the bytes are not UTF-8.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
