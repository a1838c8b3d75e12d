//! A tool's definition as it is pinned, and its canonical hash: the fields a model is shown,
//! without what does not change its meaning, as RFC 8785 (JCS) text, hashed with SHA-256
//! (as SEP-3140 proposes for signed capability declarations).

use router_protocol::DefinitionKind;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The fields of a definition that are pinned: what the model (or the host's user) is shown
/// of it, and a tool's hints.
pub(crate) fn pinned_fields(kind: DefinitionKind) -> &'static [&'static str] {
    match kind {
        DefinitionKind::Tool => {
            &["name", "title", "description", "inputSchema", "outputSchema", "annotations"]
        }
        DefinitionKind::Prompt => &["name", "title", "description", "arguments"],
        DefinitionKind::ResourceTemplate => {
            &["uriTemplate", "name", "title", "description", "mimeType", "annotations"]
        }
        DefinitionKind::Skill => &["uri", "frontmatter"],
    }
}

/// An item's pinned definition: its kind's [`pinned_fields`] only (never `_meta` or icons),
/// with null values and empty strings, arrays and objects dropped at every depth, so that a
/// server that sends `"required": []` one run and leaves it out the next is not seen as
/// changed. Key order does not matter (see [`canonical`]).
pub(crate) fn definition(kind: DefinitionKind, item: &impl Serialize) -> Value {
    let Ok(Value::Object(mut all)) = serde_json::to_value(item) else { return Value::Null };
    let mut kept = Map::new();
    for field in pinned_fields(kind) {
        if let Some(mut value) = all.remove(*field)
            && !prune(&mut value)
        {
            kept.insert(field.to_string(), value);
        }
    }
    Value::Object(kept)
}

/// Drop what is empty below `value`; whether `value` itself is empty now.
fn prune(value: &mut Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(items) => {
            items.retain_mut(|item| !prune(item));
            items.is_empty()
        }
        Value::Object(map) => {
            map.retain(|_, item| !prune(item));
            map.is_empty()
        }
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// RFC 8785 text of `value`: object keys sorted by their UTF-16 code units, no whitespace,
/// strings and numbers as serde_json writes them (the same as ECMAScript's for strings and for
/// the integers and short decimals schemas hold).
pub(crate) fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// SHA-256 of `text`, as lowercase hex.
pub(crate) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Tool;
    use serde_json::json;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).expect("a tool")
    }

    #[test]
    fn order_absent_and_empty_fields_do_not_change_the_hash() {
        let a = tool(json!({
            "name": "read", "description": "Read a file",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "_meta": {"run": 1}
        }));
        let b = tool(json!({
            "inputSchema": {"required": ["path"], "properties": {"path": {"type": "string"}}, "type": "object", "additionalProperties": null},
            "description": "Read a file", "name": "read", "title": "", "annotations": {},
            "outputSchema": null, "_meta": {"run": 2}, "icons": []
        }));
        let hash = |t: &Tool| sha256_hex(&canonical(&definition(DefinitionKind::Tool, t)));
        assert_eq!(hash(&a), hash(&b));
        let changed = tool(json!({"name": "read", "description": "Read a file\u{200b}",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}));
        assert_ne!(hash(&a), hash(&changed));
    }

    #[test]
    fn canonical_text_sorts_keys_by_utf16_and_has_no_whitespace() {
        // RFC 8785's own ordering example: "\u{20ac}" (U+20AC) sorts after "\r", and a
        // surrogate pair (U+1F600) before U+FB33 by code units.
        let value =
            json!({"b": [1, {"z": true, "a": null}], "a": "x", "\u{fb33}": 1, "\u{1f600}": 2});
        assert_eq!(
            canonical(&value),
            "{\"a\":\"x\",\"b\":[1,{\"a\":null,\"z\":true}],\"\u{1f600}\":2,\"\u{fb33}\":1}"
        );
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
