//! The demo's resources: this repository's own documents, a CSV dataset, a PNG, a note, and the
//! templates `demo://docs/{name}`, `demo://lines/{name}{?from,to}`, `demo://sized/{bytes}` and
//! `demo://notes/{id}`; plus the fixtures the MCP conformance suite's server scenarios read.

use std::sync::Arc;

use resource_registry::{
    Completer, RegistrationError, RegistryOptions, ResourceBody, ResourceError, ResourceRegistry,
};
use rmcp::model::{Resource, ResourceTemplate};
use serde_json::{Map, Value, json};

use crate::options::DemoOptions;

/// A 1×1 PNG, the demo's binary blob.
pub const PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The demo's documents: this repository's own docs, bundled at build time.
pub const DOCS: &[(&str, &str)] = &[
    ("README.md", include_str!("../../../README.md")),
    ("architecture.md", include_str!("../../../docs/architecture.md")),
];
/// A small CSV dataset.
pub const CITIES_CSV: &str = include_str!("../data/cities.csv");
const WELCOME: &str =
    "Welcome! Templates: demo://docs/{name}, demo://lines/{name}{?from,to}, demo://notes/{id}.";

/// Every resource the demo lists, in its order.
pub fn resources() -> Vec<Resource> {
    registry(usize::MAX).list_resources(None).map(|r| r.resources).unwrap_or_default()
}

/// Registration of fixed, distinct, named resources cannot fail: a failure is a bug, logged.
fn ok(result: Result<(), RegistrationError>) {
    if let Err(e) = result {
        tracing::error!("demo registration failed: {e}");
    }
}

/// Build the demo's resource registry.
pub fn registry(page_size: usize) -> Arc<ResourceRegistry> {
    registry_with(RegistryOptions { page_size, ..Default::default() })
}

/// Build the demo's resource registry with these options.
pub(crate) fn registry_with(options: RegistryOptions) -> Arc<ResourceRegistry> {
    let registry = ResourceRegistry::new(options);
    register_resources(&registry);
    register_templates(&registry);
    registry
}

/// The direct resources: the documents, the CSV dataset, the PNG, the welcome note.
fn register_resources(registry: &ResourceRegistry) {
    for (name, text) in DOCS {
        let resource = Resource::new(format!("demo://docs/{name}"), *name)
            .with_description(format!("The project's {name}"))
            .with_mime_type("text/markdown")
            .with_size(text.len() as u64);
        ok(registry
            .register_resource(resource, move || async move { Ok(ResourceBody::from(*text)) }));
    }
    let csv = Resource::new("demo://data/cities.csv", "cities")
        .with_description("Ten large cities: city, country, population, area_km2")
        .with_mime_type("text/csv")
        .with_size(CITIES_CSV.len() as u64);
    ok(registry.register_resource(csv, || async { Ok(ResourceBody::from(CITIES_CSV)) }));
    let png = Resource::new("demo://images/pixel.png", "pixel")
        .with_description("A 1x1 PNG image (binary blob)")
        .with_mime_type("image/png")
        .with_size(PIXEL_PNG.len() as u64);
    ok(registry.register_resource(png, || async { Ok(ResourceBody::Binary(PIXEL_PNG.to_vec())) }));
    let welcome = Resource::new("demo://notes/welcome", "welcome-note")
        .with_mime_type("text/plain")
        .with_size(WELCOME.len() as u64);
    ok(registry.register_resource(welcome, || async { Ok(ResourceBody::from(WELCOME)) }));
}

/// The templates: documents by name, line ranges, sized text, notes by id.
fn register_templates(registry: &ResourceRegistry) {
    let doc_names: Completer = Arc::new(|argument, prefix| {
        if argument != "name" {
            return Vec::new();
        }
        DOCS.iter().map(|(n, _)| n.to_string()).filter(|n| n.starts_with(prefix)).collect()
    });
    let doc = ResourceTemplate::new("demo://docs/{name}", "doc")
        .with_description("A document of this project by file name (see completion)")
        .with_mime_type("text/markdown");
    ok(registry.register_template(
        doc,
        |vars| async move { doc_text(&vars).map(ResourceBody::from) },
        Some(doc_names.clone()),
    ));
    let lines = ResourceTemplate::new("demo://lines/{name}{?from,to}", "doc-lines")
        .with_description("Lines `from`..=`to` (1-based, both optional) of a document")
        .with_mime_type("text/plain");
    ok(registry.register_template(
        lines,
        |vars| async move { line_range(&vars).map(ResourceBody::from) },
        Some(doc_names),
    ));
    let sized = ResourceTemplate::new("demo://sized/{bytes}", "sized-text")
        .with_description("Generated text of exactly `bytes` bytes (mixed 1- to 4-byte characters, at most 64 MiB)")
        .with_mime_type("text/plain");
    ok(registry.register_template(
        sized,
        |vars| async move { sized_text(&vars).map(ResourceBody::from) },
        None,
    ));
    let note = ResourceTemplate::new("demo://notes/{id}", "note")
        .with_description("A note by id, e.g. demo://notes/42")
        .with_mime_type("text/plain");
    ok(registry.register_template(
        note,
        |vars| async move {
            match vars.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() && !id.contains('/') => {
                    Ok(ResourceBody::from(format!("Note {id}")))
                }
                _ => Err(ResourceError::NotFound("no such note".into())),
            }
        },
        None,
    ));
}

/// The registry `options` ask for: the demo's, plus the conformance fixtures if wanted.
pub(crate) fn options_registry(options: &DemoOptions) -> Arc<ResourceRegistry> {
    let registry = registry_with(RegistryOptions {
        page_size: options.page_size.max(1),
        ttl_ms: options.ttl_ms,
    });
    if options.conformance_fixtures {
        register_conformance_fixtures(&registry);
    }
    if options.generated > 0 {
        register_generated(&registry, options.generated);
    }
    registry
}

/// `--generated N`: a big catalog for the list tools, `demo://gen/{i}` for `i` in `0..N`
/// (zero-padded to 6 digits so the URIs sort in order). Every 10th is an invoice
/// (`invoice-{i}`, `application/pdf`), every 10th from 5 on a JSON report, the rest text notes;
/// every 7th is annotated for the user only, every 100th has priority 1.0.
pub fn register_generated(registry: &ResourceRegistry, count: usize) {
    for i in 0..count {
        let (name, mime, description) = match i % 10 {
            0 => (format!("invoice-{i}"), "application/pdf", format!("Invoice number {i}")),
            5 => (format!("report-{i}"), "application/json", format!("Report {i} as JSON")),
            _ => (format!("note-{i}"), "text/plain", format!("Note {i}")),
        };
        let mut annotations = rmcp::model::Annotations::default();
        if i % 7 == 3 {
            annotations.audience = Some(vec![rmcp::model::Role::User]);
        }
        if i % 100 == 42 {
            annotations.priority = Some(1.0);
        }
        let mut resource = Resource::new(format!("demo://gen/{i:06}"), name)
            .with_mime_type(mime)
            .with_description(description);
        if annotations.audience.is_some() || annotations.priority.is_some() {
            resource = resource.with_annotations(annotations);
        }
        let body = format!("generated item {i}");
        let _ = registry.register_resource(resource, move || {
            let body = body.clone();
            async move { Ok(ResourceBody::from(body)) }
        });
    }
}

/// The resources the MCP conformance suite's server scenarios read, with the contents they
/// expect (`resources-read-text`, `resources-read-binary`, `resources-templates-read`,
/// `resources-subscribe`, `resources-unsubscribe`).
pub fn register_conformance_fixtures(registry: &ResourceRegistry) {
    const TEXT: &str = "This is the content of the static text resource.";
    let results = [
        registry.register_resource(
            Resource::new("test://static-text", "static-text").with_mime_type("text/plain"),
            || async { Ok(ResourceBody::from(TEXT)) },
        ),
        registry.register_resource(
            Resource::new("test://static-binary", "static-binary").with_mime_type("image/png"),
            || async { Ok(ResourceBody::Binary(PIXEL_PNG.to_vec())) },
        ),
        registry.register_resource(
            Resource::new("test://watched-resource", "watched-resource")
                .with_mime_type("text/plain"),
            || async { Ok(ResourceBody::from("A resource to subscribe to.")) },
        ),
        registry.register_template(
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .with_mime_type("application/json"),
            |vars| async move {
                let id = vars.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
                let body =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(ResourceBody::from(body.to_string()))
            },
            None,
        ),
    ];
    results.into_iter().for_each(ok);
}

/// `bytes` bytes of text cycling through characters of 1 to 4 bytes (padded with ASCII).
fn sized_text(vars: &Map<String, Value>) -> Result<String, ResourceError> {
    const MAX: usize = 64 * 1024 * 1024;
    let raw = vars.get("bytes").and_then(Value::as_str).unwrap_or_default();
    let bytes = raw.parse::<usize>().ok().filter(|n| *n <= MAX).ok_or_else(|| {
        ResourceError::InvalidParams(format!(
            "`bytes` must be a number from 0 to {MAX}, got {raw:?}"
        ))
    })?;
    let unit = "aé€😀\n";
    let mut text = unit.repeat(bytes / unit.len());
    text.push_str(&"x".repeat(bytes - text.len()));
    Ok(text)
}

fn doc_text(vars: &Map<String, Value>) -> Result<&'static str, ResourceError> {
    let name = vars.get("name").and_then(Value::as_str).unwrap_or_default();
    DOCS.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| ResourceError::NotFound(format!("no document named {name:?}")))
}

fn line_range(vars: &Map<String, Value>) -> Result<String, ResourceError> {
    let text = doc_text(vars)?;
    let bound = |key: &str| -> Result<Option<usize>, ResourceError> {
        match vars.get(key).and_then(Value::as_str) {
            None => Ok(None),
            Some(v) => v.parse::<usize>().ok().filter(|n| *n >= 1).map(Some).ok_or_else(|| {
                ResourceError::InvalidParams(format!(
                    "`{key}` must be a line number (1 or more), got {v:?}"
                ))
            }),
        }
    };
    let from = bound("from")?.unwrap_or(1);
    let to = bound("to")?.unwrap_or(usize::MAX);
    if from > to {
        return Err(ResourceError::InvalidParams(format!("`from` ({from}) is after `to` ({to})")));
    }
    Ok(text.lines().skip(from - 1).take(to - from + 1).collect::<Vec<_>>().join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ranges() {
        let vars = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        let first =
            line_range(&vars(serde_json::json!({"name": "README.md", "from": "1", "to": "1"})))
                .expect("range");
        assert_eq!(first, "# mcp-router");
        let err = line_range(&vars(serde_json::json!({"name": "README.md", "from": "x"})))
            .expect_err("bad");
        assert_eq!(
            err,
            ResourceError::InvalidParams(
                "`from` must be a line number (1 or more), got \"x\"".into()
            )
        );
        assert!(matches!(
            line_range(&vars(serde_json::json!({"name": "nope"}))),
            Err(ResourceError::NotFound(_))
        ));
    }

    #[test]
    fn registry_lists_docs_data_and_image() {
        let uris: Vec<String> = resources().into_iter().map(|r| r.uri).collect();
        assert_eq!(
            uris,
            [
                "demo://docs/README.md",
                "demo://docs/architecture.md",
                "demo://data/cities.csv",
                "demo://images/pixel.png",
                "demo://notes/welcome"
            ]
        );
    }
}
