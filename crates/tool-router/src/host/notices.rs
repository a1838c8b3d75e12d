//! What a host tells the model between turns: the resources it read that changed since.

use crate::router::ToolRouter;

impl ToolRouter {
    /// The resources the model read that changed since, each once (taking them clears them,
    /// so the next resource-tool output will not repeat them), with a one-sentence text a host
    /// can give the model before its next turn. `None` when nothing changed.
    pub fn take_resource_notice(&self) -> Option<ResourceNotice> {
        let changed = self.backend()?.take_resource_changes();
        (!changed.is_empty()).then(|| ResourceNotice::new(changed))
    }
}

/// Resources read earlier that changed since (see [`ToolRouter::take_resource_notice`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ResourceNotice {
    /// What changed, in server-name order.
    pub changed: Vec<router_protocol::ResourceChange>,
    /// For the model, e.g. `The MCP resource demo://notes/welcome (server docs) that you read
    /// has changed since; read it again for its current content.`
    pub text: String,
}

impl ResourceNotice {
    fn new(changed: Vec<router_protocol::ResourceChange>) -> Self {
        let names: Vec<String> =
            changed.iter().map(|c| format!("{} (server {})", c.uri, c.server)).collect();
        let text = match names.as_slice() {
            [one] => format!(
                "The MCP resource {one} that you read has changed since; read it again for its current content."
            ),
            many => format!(
                "The MCP resources {} that you read have changed since; read them again for their current content.",
                many.join(", ")
            ),
        };
        Self { changed, text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_text_names_every_change() {
        let change = |server: &str, uri: &str| router_protocol::ResourceChange {
            server: server.into(),
            uri: uri.into(),
            detected_at: "2026-11-23T21:00:00.000Z".into(),
        };
        assert_eq!(
            ResourceNotice::new(vec![change("docs", "demo://a")]).text,
            "The MCP resource demo://a (server docs) that you read has changed since; read it again for its current content."
        );
        assert_eq!(
            ResourceNotice::new(vec![change("docs", "demo://a"), change("notes", "demo://b")]).text,
            "The MCP resources demo://a (server docs), demo://b (server notes) that you read have changed since; read them again for their current content."
        );
    }
}
