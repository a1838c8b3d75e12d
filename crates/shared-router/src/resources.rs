//! The servers' resources and templates, passed through to every session as MCP resources,
//! each URI qualified as `mcp-router://<server>/<the server's URI>` so two servers' URIs cannot
//! collide (a template's expansion stays inside its server's prefix). A read of a qualified URI
//! goes to its server with the server's own URI, and the contents carry the qualified one.

use mcp_host::McpBackend;
use mcp_host::backend::{Items, ListKind, Reuse};
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ListResourceTemplatesResult, ListResourcesResult,
    ReadResourceResult, Reference, ResourceContents,
};
use rmcp::service::{SubscriptionContext, SubscriptionSink};

use super::backend::{SessionBackend, Subscription};

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

/// Where a resource URI a client sent goes: its server and the server's own URI. A qualified
/// URI names its server; a plain one goes to the one server that lists it (else the one whose
/// template produces it), so a client that knows a server's URIs may use them as they are.
struct Target<'a> {
    server: String,
    uri: &'a str,
    /// The client named it `mcp-router://…`: the answer's URIs are qualified too.
    qualified: bool,
}

async fn target<'a>(backend: &dyn McpBackend, uri: &'a str) -> Result<Target<'a>, ErrorData> {
    if let Some((server, original)) = unqualified(uri) {
        return Ok(Target { server: server.to_string(), uri: original, qualified: true });
    }
    let mut servers = servers_listing(backend, ListKind::Resources, |u| u == uri).await?;
    if servers.is_empty() {
        let produces = |template: &str| {
            uri_template::UriTemplate::parse(template).is_ok_and(|t| t.match_uri(uri).is_some())
        };
        servers = servers_listing(backend, ListKind::Templates, produces).await?;
    }
    match servers.as_slice() {
        [server] => Ok(Target { server: server.clone(), uri, qualified: false }),
        [] => Err(ErrorData::resource_not_found(
            format!(
                "unknown resource `{uri}`: no server lists it; the shared router's resources are named mcp-router://<server>/<uri>"
            ),
            None,
        )),
        several => Err(ErrorData::resource_not_found(
            format!(
                "`{uri}` is a resource of the servers {}: name one as mcp-router://<server>/{uri}",
                several.join(", ")
            ),
            None,
        )),
    }
}

/// The servers whose kept (else fresh) listing of `kind` has an item whose URI (or URI
/// template) `wanted` accepts.
async fn servers_listing(
    backend: &dyn McpBackend,
    kind: ListKind,
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<String>, ErrorData> {
    let listings = backend.list_all(kind, Reuse::Kept).await.map_err(internal)?;
    let has = |items: &Items| match items {
        Items::Resources(items) => items.iter().any(|r| wanted(&r.uri)),
        Items::Templates(items) => items.iter().any(|t| wanted(&t.uri_template)),
    };
    Ok(listings
        .iter()
        .filter(|shared| has(&shared.listing.items))
        .map(|shared| shared.listing.server.clone())
        .collect())
}

/// A resource read from its server (see [`Target`]); a qualified URI's contents carry
/// qualified URIs.
pub(crate) async fn read(
    backend: &dyn McpBackend,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let target = target(backend, uri).await?;
    let server = target.server.as_str();
    let mut result = backend
        .read_resource(server, target.uri)
        .await
        .map_err(|e| ErrorData::resource_not_found(e.to_string(), None))?;
    if target.qualified {
        for contents in &mut result.contents {
            match contents {
                ResourceContents::TextResourceContents { uri: inner, .. }
                | ResourceContents::BlobResourceContents { uri: inner, .. } => {
                    *inner = qualified(server, inner);
                }
                _ => {}
            }
        }
    }
    Ok(result)
}

/// `resources/subscribe` (`on`) or `resources/unsubscribe` of a resource (see [`Target`]). A
/// subscription reads the resource once (so that its server's changes of it are heard); from
/// then on a change of it is sent to the session as `notifications/resources/updated`, with
/// the URI as the client subscribed to it (`serve`'s `deliver_updates`).
pub(crate) async fn subscribe(
    backend: &dyn McpBackend,
    session: &SessionBackend,
    uri: &str,
    on: bool,
) -> Result<(), ErrorData> {
    let target = target(backend, uri).await?;
    if on {
        session
            .read_resource(&target.server, target.uri)
            .await
            .map_err(|e| ErrorData::resource_not_found(e.to_string(), None))?;
    }
    let identity = session.view.identity(&target.server);
    let subscription = Subscription { server: &identity, uri: target.uri, asked: uri };
    if !session.hub.subscribe(session.session, subscription, on) {
        return Err(ErrorData::invalid_request(
            "too many subscriptions in this session (4096 at most)",
            None,
        ));
    }
    Ok(())
}

/// One `subscriptions/listen` stream (2026-07-28): its resources are subscribed to as with
/// `resources/subscribe` (one that no server has is left out, named in the log), their updates
/// and the tools' changes go to it, until the client ends it.
pub(crate) async fn listen(
    backend: &dyn McpBackend,
    session: &SessionBackend,
    context: SubscriptionContext,
    register: impl Fn(&SubscriptionSink, bool),
) -> Result<(), ErrorData> {
    let sink = context.sink().clone();
    let uris = sink.accepted().resource_subscriptions.clone().unwrap_or_default();
    let mut subscribed = Vec::new();
    for uri in uris {
        match subscribe(backend, session, &uri, true).await {
            Ok(()) => subscribed.push(uri),
            Err(e) => tracing::info!(%uri, "not subscribed: {}", e.message),
        }
    }
    register(&sink, true);
    context.cancelled().await;
    register(&sink, false);
    for uri in subscribed {
        let _ = subscribe(backend, session, &uri, false).await;
    }
    Ok(())
}

/// `completion/complete`: a resource template's argument (its URI qualified, or one template
/// of one server) from that server; a prompt's (`server/prompt`, or a name one server has)
/// from that server. A prompt no server has completes to nothing.
pub(crate) async fn complete(
    backend: &dyn McpBackend,
    request: CompleteRequestParams,
) -> Result<CompleteResult, ErrorData> {
    let (argument, value) = (request.argument.name.as_str(), request.argument.value.as_str());
    let invalid = |e: mcp_host::McpError| ErrorData::invalid_params(e.to_string(), None);
    let info = match &request.r#ref {
        Reference::Resource(reference) => {
            let (server, template) = match unqualified(&reference.uri) {
                Some((server, template)) => (server.to_string(), template),
                None => {
                    let uri = reference.uri.as_str();
                    let servers =
                        servers_listing(backend, ListKind::Templates, |t| t == uri).await?;
                    let [server] = <[String; 1]>::try_from(servers).map_err(|_| {
                        let message = format!("Unknown resource template: {uri}");
                        ErrorData::invalid_params(message, None)
                    })?;
                    (server, uri)
                }
            };
            backend.complete_resource_argument(&server, template, argument, value).await
        }
        Reference::Prompt(reference) => {
            let Some(prompts) = backend.prompts() else { return Ok(CompleteResult::default()) };
            let (server, name) = match reference.name.split_once('/') {
                Some((server, name)) => (server.to_string(), name),
                None => {
                    let name = reference.name.as_str();
                    let listing = prompts.all_prompts().await;
                    let having = listing.servers.into_iter().filter(|(_, listed)| {
                        listed.as_ref().is_ok_and(|p| p.iter().any(|p| p.name == name))
                    });
                    match having.map(|(server, _)| server).collect::<Vec<_>>().as_slice() {
                        [server] => (server.clone(), name),
                        _ => return Ok(CompleteResult::default()),
                    }
                }
            };
            prompts.complete_prompt_argument(&server, name, argument, value).await
        }
        _ => return Ok(CompleteResult::default()),
    };
    Ok(CompleteResult::new(info.map_err(invalid)?))
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
