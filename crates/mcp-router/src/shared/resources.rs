//! The servers' resources and templates, passed through to every session as MCP resources,
//! each URI qualified as `mcp-router://<server>/<the server's URI>` so two servers' URIs cannot
//! collide (a template's expansion stays inside its server's prefix). A read of a qualified URI
//! goes to its server with the server's own URI, and the contents carry the qualified one.

use mcp_host::McpBackend;
use mcp_host::backend::{Items, ListKind, Reuse};
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, ResourceContents,
};

/// The scheme and separator of a qualified URI.
const PREFIX: &str = "mcp-router://";

/// `mcp-router://server/uri`.
pub(crate) fn qualified(server: &str, uri: &str) -> String {
    format!("{PREFIX}{server}/{uri}")
}

/// The server and the server's URI of a qualified URI.
pub(crate) fn unqualified(uri: &str) -> Option<(&str, &str)> {
    let (server, original) = uri.strip_prefix(PREFIX)?.split_once('/')?;
    (!server.is_empty() && !original.is_empty()).then_some((server, original))
}

/// Every server's resources (each listed to its end), in server-name order.
pub(crate) async fn list(backend: &dyn McpBackend) -> Result<ListResourcesResult, ErrorData> {
    let listings = backend.list_all(ListKind::Resources, Reuse::Kept).await.map_err(internal)?;
    let mut resources = Vec::new();
    for shared in listings {
        let listing = &shared.listing;
        if let Items::Resources(items) = &listing.items {
            resources.extend(items.iter().map(|resource| {
                let mut resource = resource.clone();
                resource.uri = qualified(&listing.server, &resource.uri);
                resource
            }));
        }
    }
    Ok(ListResourcesResult::with_all_items(resources))
}

/// Every server's resource templates, in server-name order.
pub(crate) async fn templates(
    backend: &dyn McpBackend,
) -> Result<ListResourceTemplatesResult, ErrorData> {
    let listings = backend.list_all(ListKind::Templates, Reuse::Kept).await.map_err(internal)?;
    let mut templates = Vec::new();
    for shared in listings {
        let listing = &shared.listing;
        if let Items::Templates(items) = &listing.items {
            templates.extend(items.iter().map(|template| {
                let mut template = template.clone();
                template.uri_template = qualified(&listing.server, &template.uri_template);
                template
            }));
        }
    }
    Ok(ListResourceTemplatesResult::with_all_items(templates))
}

/// A qualified URI read from its server.
pub(crate) async fn read(
    backend: &dyn McpBackend,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let Some((server, original)) = unqualified(uri) else {
        let message = format!(
            "unknown resource `{uri}`: the shared router's resources are named mcp-router://<server>/<uri>"
        );
        return Err(ErrorData::resource_not_found(message, None));
    };
    let mut result = backend
        .read_resource(server, original)
        .await
        .map_err(|e| ErrorData::resource_not_found(e.to_string(), None))?;
    for contents in &mut result.contents {
        match contents {
            ResourceContents::TextResourceContents { uri: inner, .. }
            | ResourceContents::BlobResourceContents { uri: inner, .. } => {
                *inner = qualified(server, inner);
            }
            _ => {}
        }
    }
    Ok(result)
}

fn internal(error: mcp_host::McpError) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qualified_uri_names_its_server_and_keeps_the_servers_uri_whole() {
        let uri = qualified("docs", "demo://docs/README.md");
        assert_eq!(uri, "mcp-router://docs/demo://docs/README.md");
        assert_eq!(unqualified(&uri), Some(("docs", "demo://docs/README.md")));
        assert_eq!(unqualified("demo://docs/README.md"), None);
        assert_eq!(unqualified("mcp-router://docs"), None);
        assert_eq!(unqualified("mcp-router:///x"), None);
    }
}
