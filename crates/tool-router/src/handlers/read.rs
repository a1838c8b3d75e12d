//! `read_mcp_resource`, as Codex's `mcp_resource` handler has it (the `uri` passed to the
//! server as-is, `resources/read failed: …`), and beyond Codex: template reads, a byte budget
//! with `offset` paging, images as image items, described blobs, and CSV contents imported as
//! data sources (through the data handler's import).

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{Items, ListKind, McpBackend};
use rmcp::model::ResourceContents;
use router_protocol::ResourceChange;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::handler::ToolHandler;
use crate::handlers::args::{
    normalize_optional_string, normalize_required_string, parse_args, respond,
};
use crate::handlers::data::{DataSources, import_csv, is_csv};
use crate::handlers::template::expand_template;
use crate::handlers::{
    Failed, Produced, backend_failure, one_server, produced_by, run, single_failure,
};
use crate::invocation::{CallContext, ContentItem, FunctionCallError, ToolInvocation, ToolOutput};
use crate::results::content::{
    ContentPolicy, Paging, ShapedContent, ShapedRead, decode_text_blobs, shape_read,
};
use crate::results::json_text::write_json_str;
use crate::results::kept::{KeptRead, KeptResults, RESULTS_PREFIX, RESULTS_SERVER};
use crate::results::links::LinkedResources;
use crate::skills::{LoadedSkills, read_bytes};
use crate::spec::ToolSpec;

/// Name of the read tool.
pub const READ_MCP_RESOURCE: &str = "read_mcp_resource";

/// How reads are shaped for the model.
#[derive(Clone, Default)]
pub(crate) struct ReadOptions {
    /// Budget, images and blobs.
    pub(crate) policy: ContentPolicy,
    /// Where CSV resources are imported; `None` turns data sources off (CSV reads are text).
    pub(crate) data: Option<Arc<DataSources>>,
    /// Tool results the router kept, read on server `mcp-router`.
    pub(crate) kept: Arc<KeptResults>,
    /// Which server linked which URI, so a link is read on its own server.
    pub(crate) links: Arc<LinkedResources>,
    /// The skills the model loaded: their files are checked against their manifests.
    pub(crate) skills: Arc<LoadedSkills>,
}

/// Handles `read_mcp_resource`.
pub(crate) struct McpReadHandler {
    backend: Arc<dyn McpBackend>,
    options: ReadOptions,
}

#[derive(Debug, Default, Deserialize)]
struct ReadArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    /// Beyond Codex: a resource template to expand client-side with `parameters`.
    #[serde(default)]
    template: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    /// Beyond Codex: where to start in the text (bytes of UTF-8) and how much to return.
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    max_bytes: Option<u64>,
}

/// A read the model asked for, validated: what to read and how much of it.
struct ReadRequest {
    server: String,
    uri: String,
    template: Option<String>,
    offset: usize,
    max_bytes: Option<usize>,
}

/// `{"server", "uri", "template"?, "contents": […], "offset"?, "total_bytes"?, "truncated"?,
/// "next_offset"?}`: `template` only for template reads, the paging facts only when a budget or
/// an offset applied.
#[derive(Serialize)]
struct ReadPayload<'a> {
    server: &'a str,
    uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    template: Option<&'a str>,
    contents: &'a [ShapedContent<'a>],
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    paging: Option<&'a Paging>,
}

impl ReadPayload<'_> {
    /// The payload's JSON, with `changes` as its `changed` field when there are any: what serde
    /// writes for it (a test checks byte for byte), the strings escaped a word at a time.
    fn write(&self, out: &mut Vec<u8>, changes: &[ResourceChange]) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"server\":");
        write_json_str(out, self.server);
        out.extend_from_slice(b",\"uri\":");
        write_json_str(out, self.uri);
        if let Some(template) = self.template {
            out.extend_from_slice(b",\"template\":");
            write_json_str(out, template);
        }
        out.extend_from_slice(b",\"contents\":[");
        for (i, content) in self.contents.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let ShapedContent::Text { uri, mime_type, text, meta } = content else {
                serde_json::to_writer(&mut *out, content)?;
                continue;
            };
            out.extend_from_slice(b"{\"uri\":");
            write_json_str(out, uri);
            if let Some(mime_type) = mime_type {
                out.extend_from_slice(b",\"mimeType\":");
                write_json_str(out, mime_type);
            }
            out.extend_from_slice(b",\"text\":");
            write_json_str(out, text);
            if let Some(meta) = meta {
                out.extend_from_slice(b",\"_meta\":");
                serde_json::to_writer(&mut *out, meta)?;
            }
            out.push(b'}');
        }
        out.push(b']');
        if let Some(paging) = self.paging {
            use std::io::Write as _;
            let Paging { offset, total_bytes, truncated, next_offset } = paging;
            write!(
                out,
                ",\"offset\":{offset},\"total_bytes\":{total_bytes},\"truncated\":{truncated}"
            )
            .map_err(serde_json::Error::io)?;
            if let Some(next) = next_offset {
                write!(out, ",\"next_offset\":{next}").map_err(serde_json::Error::io)?;
            }
        }
        if !changes.is_empty() {
            out.extend_from_slice(b",\"changed\":");
            serde_json::to_writer(&mut *out, changes)?;
        }
        out.push(b'}');
        Ok(())
    }
}

impl ReadRequest {
    fn from_args(args: ReadArgs) -> Result<Self, FunctionCallError> {
        let server = normalize_required_string("server", args.server)?;
        let template = normalize_optional_string(args.template);
        let uri = match &template {
            None => normalize_required_string("uri", args.uri)?,
            Some(template) => {
                if normalize_optional_string(args.uri).is_some() {
                    return Err(respond(
                        "provide either uri or template (with parameters), not both",
                    ));
                }
                expand_template(template, args.parameters.as_ref())?
            }
        };
        let offset = usize::try_from(args.offset.unwrap_or(0)).unwrap_or(usize::MAX);
        let max_bytes = match args.max_bytes {
            Some(0) => return Err(respond("max_bytes must be at least 1")),
            other => other.map(|m| usize::try_from(m).unwrap_or(usize::MAX)),
        };
        Ok(Self { server, uri, template, offset, max_bytes })
    }
}

impl McpReadHandler {
    pub(crate) fn new(backend: Arc<dyn McpBackend>, options: ReadOptions) -> Self {
        Self { backend, options }
    }

    /// The tool's spec (Codex's wording, plus template reads and paging).
    pub(crate) fn spec() -> ToolSpec {
        ToolSpec {
            name: READ_MCP_RESOURCE.to_string(),
            description: "Read a specific resource from an MCP server given the server name and resource URI. To read from a resource template, pass `template` (a uriTemplate returned by list_mcp_resource_templates) and `parameters` instead of `uri`.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources."},
                    "uri": {"type": "string", "description": "Resource URI to read. Must be one of the URIs returned by list_mcp_resources."},
                    "template": {"type": "string", "description": "Instead of uri: an RFC 6570 uriTemplate returned by list_mcp_resource_templates, expanded with parameters."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset in the resource's text to start from: the next_offset of a truncated read."},
                    "max_bytes": {"type": "integer", "minimum": 1, "description": "Return at most this many bytes of text (never more than the router's read budget)."},
                    "parameters": {"type": "object", "description": "Values for the template's variables, e.g. {\"id\": \"42\"}. Variables of {?...}, {&...} and {;...} expressions are optional; all others are required.", "additionalProperties": {"type": ["string", "number", "boolean", "array"]}}
                },
                "required": ["server"],
                "additionalProperties": false
            }),
        }
    }

    async fn read(&self, ctx: &CallContext, request: &ReadRequest) -> Result<Produced, Failed> {
        let ReadRequest { server, uri, .. } = request;
        if server == RESULTS_SERVER || uri.starts_with(RESULTS_PREFIX) {
            return self.read_kept(request);
        }
        self.refuse_foreign_link(server, uri)?;
        let expected = self.options.skills.before_read(server, uri).map_err(|why| {
            reject_skill_file(ctx, server, self.options.skills.owner(server, uri), uri, &why);
            single_failure(server, why)
        })?;
        let mut result = self
            .backend
            .read_resource(server, uri)
            .await
            .map_err(|e| backend_failure(server, "resources/read", e))?;
        crate::ledger::from_server(|| mcp_backend::json_len(&result));
        if let Some(expected) = expected {
            let checked = read_bytes(&result.contents, uri)
                .and_then(|bytes| expected.entry.verify(&bytes).map_err(|e| e.to_string()));
            if let Err(why) = checked {
                reject_skill_file(ctx, server, Some(expected.skill.clone()), uri, &why);
                let message = format!(
                    "resources/read refused: {why} (a file of skill \"{}\"); its content was not used",
                    expected.skill
                );
                return Err(single_failure(server, message));
            }
        }
        result.contents = decode_text_blobs(result.contents);
        if let Some(data) = &self.options.data
            && result.contents.iter().any(|c| is_csv(c, uri))
        {
            // Boxed: the import's future is large and rare; every read's would be as large.
            return Box::pin(import_csv(data.clone(), server, uri, result.contents)).await;
        }
        let shaped =
            shape_read(&result.contents, &self.options.policy, request.offset, request.max_bytes)
                .map_err(|e| single_failure(server, e))?;
        self.payload(request, &shaped)
    }

    /// The model's output for shaped contents: the payload, and image items after it.
    fn payload(&self, request: &ReadRequest, shaped: &ShapedRead<'_>) -> Result<Produced, Failed> {
        let payload = ReadPayload {
            server: &request.server,
            uri: &request.uri,
            template: request.template.as_deref(),
            contents: &shaped.contents,
            paging: shaped.paging.as_ref(),
        };
        let write = |out: &mut Vec<u8>, changes: &[ResourceChange]| payload.write(out, changes);
        let mut produced =
            produced_by(self.backend.as_ref(), write, one_server(shaped.contents.len()))?;
        if !shaped.images.is_empty() {
            let mut items = vec![ContentItem::InputText { text: produced.content.to_string() }];
            items.extend(shaped.images.iter().cloned());
            produced.items = Some(items);
        }
        Ok(produced)
    }
}

impl McpReadHandler {
    /// A page of a tool result the router kept; only on server `mcp-router`, which serves
    /// nothing else.
    fn read_kept(&self, request: &ReadRequest) -> Result<Produced, Failed> {
        let ReadRequest { server, uri, offset, max_bytes, .. } = request;
        if server != RESULTS_SERVER {
            let message = format!(
                "resources/read refused: {uri} is a tool result the router kept; read it with server \"{RESULTS_SERVER}\""
            );
            return Err(single_failure(server, message));
        }
        if !uri.starts_with(RESULTS_PREFIX) {
            let message = format!(
                "resources/read failed: server \"{RESULTS_SERVER}\" holds only the tool results the router kept ({RESULTS_PREFIX}…), not {uri}"
            );
            return Err(single_failure(server, message));
        }
        let policy = &self.options.policy;
        let budget =
            max_bytes.map_or(policy.read_budget_bytes, |m| m.min(policy.read_budget_bytes));
        let read =
            self.options.kept.read(uri, *offset, budget).map_err(|e| single_failure(server, e))?;
        let template = request.template.as_deref();
        match read {
            KeptRead::Text { mime, text, paging } => {
                let contents =
                    [ShapedContent::Text { uri, mime_type: Some(&mime), text: &text, meta: None }];
                let payload = ReadPayload {
                    server,
                    uri,
                    template,
                    contents: &contents,
                    paging: paging.as_ref(),
                };
                let write =
                    |out: &mut Vec<u8>, changes: &[ResourceChange]| payload.write(out, changes);
                produced_by(self.backend.as_ref(), write, one_server(1))
            }
            KeptRead::Blob { mime, blob } => {
                let contents = [ResourceContents::BlobResourceContents {
                    uri: uri.clone(),
                    mime_type: Some(mime),
                    blob,
                    meta: None,
                }];
                let shaped = shape_read(&contents, policy, *offset, *max_bytes)
                    .map_err(|e| single_failure(server, e))?;
                self.payload(request, &shaped)
            }
        }
    }

    /// A URI that another server's tool result linked is not sent to this server, unless this
    /// server linked it too or lists it.
    fn refuse_foreign_link(&self, server: &str, uri: &str) -> Result<(), Failed> {
        let Some(linkers) = self.options.links.linked_elsewhere(server, uri) else { return Ok(()) };
        let listed = self.backend.kept_listing(server, ListKind::Resources).is_some_and(|kept| {
            matches!(&kept.listing.items, Items::Resources(items) if items.iter().any(|r| r.uri == uri))
        });
        if listed {
            return Ok(());
        }
        let names: Vec<String> = linkers.iter().map(|s| format!("\"{s}\"")).collect();
        let message = format!(
            "resources/read refused: {uri} was linked by a tool result of server {}, not of \"{server}\"; read it with server {}",
            names.join(" and "),
            names[0]
        );
        Err(single_failure(server, message))
    }
}

/// A file of a loaded skill failed its check: `mcp_skill_rejected` says so.
fn reject_skill_file(ctx: &CallContext, server: &str, skill: Option<String>, uri: &str, why: &str) {
    ctx.emit(router_protocol::EventMsg::McpSkillRejected(router_protocol::McpSkillRejectedEvent {
        server: server.to_string(),
        skill: skill.unwrap_or_default(),
        uri: uri.to_string(),
        reason: why.to_string(),
    }));
}

#[async_trait]
impl ToolHandler for McpReadHandler {
    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: ReadArgs = parse_args(invocation.arguments.as_ref())?;
        let request = ReadRequest::from_args(args)?;
        let (call_id, event_invocation) = invocation.into_event(Some(request.server.clone()));
        let span = tracing::info_span!(
            "resource_retrieval",
            server = %request.server,
            uri = %request.uri,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        // Pinned here and lent: moved into `run`, the read's future would be held twice.
        let work = std::pin::pin!(self.read(ctx, &request));
        let (outcome, duration) =
            run(ctx, call_id, event_invocation, work).instrument(span.clone()).await;
        span.record("outcome", if outcome.is_ok() { "ok" } else { "error" });
        span.record("duration_ms", duration.as_secs_f64() * 1000.0);
        span.in_scope(|| match &outcome {
            Ok(_) => tracing::info!("resource retrieved"),
            Err(e) => tracing::info!(error = %e, "resource retrieval failed"),
        });
        outcome
    }
}

#[cfg(test)]
mod payload_tests {
    use proptest::prelude::*;

    use super::*;
    use crate::handlers::write_payload;

    /// `payload` written by hand and by serde, with and without changes.
    fn both(payload: &ReadPayload<'_>) -> Vec<(String, String)> {
        let change = ResourceChange {
            server: "s\"1".into(),
            uri: "file:///a\nb".into(),
            detected_at: "2026-11-29T08:00:00.000Z".into(),
        };
        let mut out = Vec::new();
        for changes in [&[][..], &[change.clone(), change][..]] {
            let (mut ours, mut serde) = (Vec::new(), Vec::new());
            payload.write(&mut ours, changes).expect("written");
            write_payload(&mut serde, payload, changes).expect("json");
            let text = |v: Vec<u8>| String::from_utf8(v).expect("UTF-8");
            out.push((text(ours), text(serde)));
        }
        out
    }

    #[test]
    fn the_hand_written_payload_is_what_serde_writes_for_every_shape() {
        let mut meta = rmcp::model::MetaObject::new();
        meta.insert("k".into(), json!({"x": [1, "\u{1}"]}));
        let blob = json!({"uri": "b://1", "blob": "AAEC", "mimeType": "application/octet-stream"});
        let contents = [
            ShapedContent::Text { uri: "a://1", mime_type: None, text: "plain", meta: None },
            ShapedContent::Text {
                uri: "a://\"2\"",
                mime_type: Some("text/plain"),
                text: "tab\there, quote \" and \\ and é😀 and \u{1f}",
                meta: Some(&meta),
            },
            ShapedContent::Other(blob),
        ];
        let pagings = [
            None,
            Some(Paging { offset: 3, total_bytes: 90, truncated: true, next_offset: Some(40) }),
            Some(Paging { offset: 0, total_bytes: 5, truncated: false, next_offset: None }),
        ];
        for template in [None, Some("a://{id}")] {
            for paging in &pagings {
                for count in [0, 1, 3] {
                    let payload = ReadPayload {
                        server: "srv",
                        uri: "a://1?q=\"x\"",
                        template,
                        contents: &contents[..count],
                        paging: paging.as_ref(),
                    };
                    for (ours, serde) in both(&payload) {
                        assert_eq!(ours, serde);
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn any_text_read_is_written_as_serde_writes_it(text in any::<String>(), uri in ".{0,12}") {
            let contents =
                [ShapedContent::Text { uri: &uri, mime_type: Some("text/x"), text: &text, meta: None }];
            let payload =
                ReadPayload { server: "s", uri: &uri, template: None, contents: &contents, paging: None };
            for (ours, serde) in both(&payload) {
                prop_assert_eq!(ours, serde);
            }
        }
    }
}
