//! RFC 6570 URI templates for MCP resource templates.
//!
//! - [`UriTemplate::parse`] validates the template (RFC 6570 syntax, levels 1–4).
//! - [`UriTemplate::expand`] fills it from JSON values (strings, numbers, booleans, arrays,
//!   objects; `null` is undefined).
//! - [`UriTemplate::match_uri`] is the inverse: which variables produce this URI.
//!
//! # Matching rules (where RFC 6570 is ambiguous, what we pick)
//!
//! - Literals must match exactly (no case folding, no percent-encoding normalisation).
//! - Every expression may match the empty string (all its variables undefined), which is how
//!   RFC 6570 expands undefined variables; so `{?q}` is optional and `{id}` may be absent.
//! - When an expression could end at several places, the longest match that lets the rest of
//!   the template match wins (leftmost-longest), e.g. `{a}{b}` on `xy` gives `a = "xy"`.
//! - Values are percent-decoded; invalid UTF-8 fails the match. `{+var}` and `{#var}` pass
//!   reserved characters and existing `%XX` triplets through, so there a triplet is decoded
//!   only if expansion could have written it (`a%20b` → `a b`, but `admin%2F` stays as
//!   written: decoding it would give `admin/`, which expands differently).
//! - `{var}` with a list value expands to `a,b`; it matches back as the string `"a,b"`.
//!   An exploded variable (`{/path*}`, `{?list*}`) matches back as an array, and a named
//!   exploded variable whose items carry other names (`{?keys*}` → `?a=1&b=2`) as an object.
//! - A prefix modifier (`{var:3}`) matches the prefix only.
//! - Named operators (`;`, `?`, `&`) accept their variables in any order; a name that is not
//!   one of the expression's variables fails the match unless a variable is exploded.
//! - Non-ASCII characters in the URI are accepted where unreserved characters are.
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod expand;
mod matcher;
mod parse;

use serde_json::{Map, Value};

pub use expand::ExpandError;
pub use parse::TemplateError;

/// A parsed RFC 6570 URI template.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    source: String,
    parts: Vec<parse::Part>,
}

impl UriTemplate {
    /// Parse and validate a template.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let parts = parse::parse(template)?;
        Ok(Self { source: template.to_string(), parts })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Variable names in order of first appearance.
    pub fn variables(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for var in self.parts.iter().flat_map(parse::Part::vars) {
            if !out.contains(&var.name.as_str()) {
                out.push(&var.name);
            }
        }
        out
    }

    /// Variables that RFC 6570 treats as optional in practice: those of query-style
    /// expressions (`{?…}`, `{&…}`, `{;…}`), whose absence leaves a well-formed URI.
    pub fn optional_variables(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for part in &self.parts {
            if let parse::Part::Expression(e) = part
                && e.op.is_named()
            {
                for var in &e.vars {
                    if !out.contains(&var.name.as_str()) {
                        out.push(&var.name);
                    }
                }
            }
        }
        out
    }

    /// Expand with `variables`; missing and `null` variables are undefined.
    pub fn expand(&self, variables: &Map<String, Value>) -> Result<String, ExpandError> {
        expand::expand(&self.parts, variables)
    }

    /// The variables that expand to exactly `uri`, or `None` if this template cannot produce it.
    pub fn match_uri(&self, uri: &str) -> Option<Map<String, Value>> {
        matcher::match_uri(&self.parts, uri)
    }
}

impl std::fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}
