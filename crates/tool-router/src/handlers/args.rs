//! Argument rules shared by the function-style handlers (Codex's): arguments are a JSON object
//! read into each tool's own typed struct, required strings are trimmed and non-empty, optional
//! empty strings become absent. The router has already parsed the text, once.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::invocation::FunctionCallError;

pub(crate) fn respond(message: impl Into<String>) -> FunctionCallError {
    FunctionCallError::RespondToModel(message.into())
}

/// Read the arguments into `T`. They must be a JSON object (serde would otherwise accept
/// `["a", "b"]` positionally); absent arguments are an error.
pub(crate) fn parse_args<T: DeserializeOwned>(
    arguments: Option<&Value>,
) -> Result<T, FunctionCallError> {
    match arguments {
        Some(value) if !value.is_object() => Err(respond(format!(
            "failed to parse function arguments: expected a JSON object, got {}",
            json_kind(value)
        ))),
        Some(value) => T::deserialize(value)
            .map_err(|e| respond(format!("failed to parse function arguments: {e}"))),
        None => Err(respond("failed to parse function arguments: expected value")),
    }
}

/// Like [`parse_args`], with absent arguments read as `T::default()`.
pub(crate) fn parse_args_with_default<T: DeserializeOwned + Default>(
    arguments: Option<&Value>,
) -> Result<T, FunctionCallError> {
    match arguments {
        Some(value) => parse_args(Some(value)),
        None => Ok(T::default()),
    }
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn normalize_optional_string(value: Option<String>) -> Option<String> {
    value.map(trimmed).filter(|v| !v.is_empty())
}

/// `value` without surrounding whitespace; the same string when it has none (no copy).
fn trimmed(value: String) -> String {
    let trimmed = value.trim();
    if trimmed.len() == value.len() { value } else { trimmed.to_string() }
}

pub(crate) fn normalize_required_string(
    field: &str,
    value: Option<String>,
) -> Result<String, FunctionCallError> {
    normalize_optional_string(value).ok_or_else(|| respond(format!("{field} must be provided")))
}
