//! Template reads: a resource template the model filled in, expanded here (RFC 6570) into the
//! URI that is read. Variables of query-style expressions (`{?…}`, `{&…}`, `{;…}`) are
//! optional; every other one is required. Every failure names the parameter at fault.

use serde_json::{Map, Value};
use uri_template::UriTemplate;

use crate::handlers::args::{json_kind, respond};
use crate::invocation::FunctionCallError;

/// Expand `template` with the model's `parameters`.
pub(crate) fn expand_template(
    template: &str,
    parameters: Option<&Value>,
) -> Result<String, FunctionCallError> {
    let parsed =
        UriTemplate::parse(template).map_err(|e| respond(format!("template is not valid: {e}")))?;
    let empty = Map::new();
    let parameters: &Map<String, Value> = match parameters {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(respond(format!(
                "parameters must be a JSON object, got {}",
                json_kind(other)
            )));
        }
    };
    let variables = parsed.variables();
    if let Some(unknown) = parameters.keys().find(|k| !variables.contains(&k.as_str())) {
        return Err(respond(format!(
            "unknown parameter `{unknown}`: the template's variables are {}",
            variables.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
        )));
    }
    let optional = parsed.optional_variables();
    for name in variables.iter().filter(|v| !optional.contains(v)) {
        if parameters.get(*name).is_none_or(Value::is_null) {
            return Err(respond(format!(
                "missing parameter `{name}` (required by template {template})"
            )));
        }
    }
    for (name, value) in parameters {
        let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
        let ok = match value {
            Value::Array(items) => items.iter().all(scalar),
            Value::Object(_) => false,
            other => other.is_null() || scalar(other),
        };
        if !ok {
            return Err(respond(format!(
                "parameter `{name}` must be a string, number, boolean or a list of them, got {}",
                json_kind(value)
            )));
        }
    }
    parsed.expand(parameters).map_err(|e| respond(format!("cannot expand template: {e}")))
}
