//! Argument parsing shared by the function-style handlers (Codex's rules): blank arguments are
//! none, required strings are trimmed and non-empty, optional empty strings become absent.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::invocation::FunctionCallError;

pub(crate) fn respond(message: impl Into<String>) -> FunctionCallError {
    FunctionCallError::RespondToModel(message.into())
}

/// Empty or whitespace arguments (and JSON `null`) mean none.
pub(crate) fn parse_arguments(raw: &str) -> Result<Option<Value>, FunctionCallError> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(raw)
        .map_err(|e| respond(format!("failed to parse function arguments: {e}")))?;
    Ok((!value.is_null()).then_some(value))
}

/// Arguments must be a JSON object (serde would otherwise accept `["a", "b"]` positionally).
pub(crate) fn parse_args<T: DeserializeOwned>(
    arguments: Option<Value>,
) -> Result<T, FunctionCallError> {
    match arguments {
        Some(value) if !value.is_object() => Err(respond(format!(
            "failed to parse function arguments: expected a JSON object, got {}",
            json_kind(&value)
        ))),
        Some(value) => serde_json::from_value(value)
            .map_err(|e| respond(format!("failed to parse function arguments: {e}"))),
        None => Err(respond("failed to parse function arguments: expected value")),
    }
}

pub(crate) fn parse_args_with_default<T: DeserializeOwned + Default>(
    arguments: Option<Value>,
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
    value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

pub(crate) fn normalize_required_string(
    field: &str,
    value: Option<String>,
) -> Result<String, FunctionCallError> {
    normalize_optional_string(value).ok_or_else(|| respond(format!("{field} must be provided")))
}
