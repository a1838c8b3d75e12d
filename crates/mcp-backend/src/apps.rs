//! MCP Apps (SEP-1865, `io.modelcontextprotocol/ui`) as far as the router must know them: which
//! tools the model may see (a tool whose `_meta.ui.visibility` leaves out `"model"` is for the
//! app alone — the spec's MUST, with or without a UI), and the `ui://` resource a tool's UI is.

use rmcp::model::Tool;
use serde_json::Value;

/// The MCP Apps extension's id, which a host that renders apps declares.
pub const UI_EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// Whether the model may see and call `tool`: no `_meta.ui.visibility`, or one naming `"model"`.
pub fn model_visible(tool: &Tool) -> bool {
    let visibility =
        tool.meta.as_ref().and_then(|m| m.get("ui")).and_then(|ui| ui.get("visibility"));
    match visibility {
        Some(Value::Array(audiences)) => audiences.iter().any(|a| a == "model"),
        _ => true,
    }
}

/// Whether an app may call `tool` (through the host): no `_meta.ui.visibility` (the default is
/// both), or one naming `"app"`.
pub fn app_visible(tool: &Tool) -> bool {
    let visibility =
        tool.meta.as_ref().and_then(|m| m.get("ui")).and_then(|ui| ui.get("visibility"));
    match visibility {
        Some(Value::Array(audiences)) => audiences.iter().any(|a| a == "app"),
        _ => true,
    }
}

/// The `ui://` resource of `tool`'s UI: `_meta.ui.resourceUri`, else the older
/// `_meta["ui/resourceUri"]` or `_meta["openai/outputTemplate"]`.
pub fn ui_resource_uri(tool: &Tool) -> Option<&str> {
    let meta = tool.meta.as_ref()?;
    let nested = meta.get("ui").and_then(|ui| ui.get("resourceUri"));
    let uri =
        nested.or_else(|| meta.get("ui/resourceUri")).or_else(|| meta.get("openai/outputTemplate"));
    uri.and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(meta: Value) -> Tool {
        let mut tool = Tool::new("t", "d", std::sync::Arc::new(serde_json::Map::new()));
        tool.meta = serde_json::from_value(meta).ok();
        tool
    }

    #[test]
    fn visibility_and_the_ui_resource() {
        assert!(model_visible(&tool(json!({}))));
        assert!(model_visible(&tool(json!({"ui": {"visibility": ["model", "app"]}}))));
        assert!(!model_visible(&tool(json!({"ui": {"visibility": ["app"]}}))));
        assert!(!model_visible(&tool(json!({"ui": {"visibility": []}}))));
        assert!(app_visible(&tool(json!({"ui": {"visibility": ["app"]}}))));
        assert!(!app_visible(&tool(json!({"ui": {"visibility": ["model"]}}))));
        assert!(app_visible(&tool(json!({}))));
        let nested =
            tool(json!({"ui": {"resourceUri": "ui://a/x.html"}, "ui/resourceUri": "ui://old"}));
        assert_eq!(ui_resource_uri(&nested), Some("ui://a/x.html"));
        assert_eq!(ui_resource_uri(&tool(json!({"ui/resourceUri": "ui://old"}))), Some("ui://old"));
        let openai = tool(json!({"openai/outputTemplate": "ui://o"}));
        assert_eq!(ui_resource_uri(&openai), Some("ui://o"));
        assert_eq!(ui_resource_uri(&tool(json!({}))), None);
    }
}
