//! `docs/architecture.md` tells the truth about what exists: every crate of the workspace has a
//! section, every section names a crate that exists, and every path the document names (in
//! backticks: a file such as `manager.rs` or `src/bin/mcp-demo-server.rs`, or a folder such as
//! `handlers/`) exists, looked up in the section's crate or at the repository's top.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The backticked spans of `line`.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Whether a span names a path: a file with a known extension, or a folder (ending in `/`).
fn is_path(span: &str) -> bool {
    let charset = span.chars().all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
    let file = [".rs", ".md", ".txt", ".cjs"].iter().any(|ext| span.ends_with(ext));
    charset && (file || (span.ends_with('/') && span.len() > 1))
}

/// Every file and folder below `dir`, relative to it.
fn walk(dir: &Path, prefix: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == "target" || name == "node_modules" || name == ".venv" || name == ".git" {
            continue;
        }
        let relative = prefix.join(&name);
        out.push(relative.clone());
        if entry.path().is_dir() {
            walk(&entry.path(), &relative, out);
        }
    }
}

/// `span` exists at the top, in the crate, in its `src/`, or as the tail of a path in the crate.
fn exists(span: &str, krate: Option<&Path>) -> bool {
    let span = span.trim_end_matches('/');
    let root = root();
    if root.join(span).exists() {
        return true;
    }
    let Some(krate) = krate else { return false };
    if krate.join(span).exists() || krate.join("src").join(span).exists() {
        return true;
    }
    let mut files = Vec::new();
    walk(krate, Path::new(""), &mut files);
    files.iter().any(|f| f.ends_with(span))
}

#[test]
fn every_path_and_crate_the_code_map_names_exists() {
    let root = root();
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the code map");
    let mut krate: Option<PathBuf> = None;
    let mut sections = Vec::new();
    let mut missing = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            let name = spans(heading).first().map(|s| s.to_string()).unwrap_or_default();
            assert!(root.join(&name).join("Cargo.toml").exists(), "no crate at {name}");
            sections.push(name.clone());
            krate = Some(root.join(name));
            continue;
        }
        for span in spans(line).into_iter().filter(|s| is_path(s)) {
            if !exists(span, krate.as_deref()) {
                missing.push(format!("{span} (in the section of {:?})", krate.as_deref()));
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new(), "named in docs/architecture.md but missing");
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .expect("crates")
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| format!("crates/{}", e.file_name().to_string_lossy()))
        .collect();
    crates.sort();
    sections.sort();
    assert_eq!(sections, crates, "one section per crate");
}

#[test]
fn the_check_notices_a_missing_path() {
    let krate = root().join("crates/tool-router");
    assert!(exists("router.rs", Some(&krate)));
    assert!(exists("handlers/", Some(&krate)));
    assert!(exists("docs/architecture.md", Some(&krate)));
    assert!(!exists("no_such_module.rs", Some(&krate)));
    assert!(!exists("manager.rs", Some(&krate)), "a file of another crate is not found here");
    assert!(is_path("src/bin/mcp-demo-server.rs") && is_path("tests/vectors/"));
    assert!(!is_path("resources/read failed: …") && !is_path("ServerConfig"));
}

/// What the workspace's sources define: every item's name, each type's members (methods,
/// associated items, variants, fields, from every `impl` and the definition), and the names of
/// modules and crates.
#[derive(Default)]
struct Defined {
    items: std::collections::BTreeSet<String>,
    functions: std::collections::BTreeSet<String>,
    members: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    modules: std::collections::BTreeSet<String>,
}

impl Defined {
    fn member(&mut self, owner: &str, name: String) {
        self.members.entry(owner.to_string()).or_default().insert(name);
    }
}

impl<'a> syn::visit::Visit<'a> for Defined {
    fn visit_item_struct(&mut self, s: &'a syn::ItemStruct) {
        self.items.insert(s.ident.to_string());
        for field in s.fields.iter().filter_map(|f| f.ident.as_ref()) {
            self.member(&s.ident.to_string(), field.to_string());
        }
        syn::visit::visit_item_struct(self, s);
    }
    fn visit_item_enum(&mut self, e: &'a syn::ItemEnum) {
        self.items.insert(e.ident.to_string());
        for variant in &e.variants {
            self.member(&e.ident.to_string(), variant.ident.to_string());
        }
        syn::visit::visit_item_enum(self, e);
    }
    fn visit_item_trait(&mut self, t: &'a syn::ItemTrait) {
        self.items.insert(t.ident.to_string());
        for item in &t.items {
            match item {
                syn::TraitItem::Fn(f) => self.member(&t.ident.to_string(), f.sig.ident.to_string()),
                syn::TraitItem::Const(c) => self.member(&t.ident.to_string(), c.ident.to_string()),
                syn::TraitItem::Type(ty) => self.member(&t.ident.to_string(), ty.ident.to_string()),
                _ => {}
            }
        }
        syn::visit::visit_item_trait(self, t);
    }
    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        if let syn::Type::Path(p) = &*i.self_ty
            && let Some(owner) = p.path.segments.last()
        {
            let owner = owner.ident.to_string();
            for item in &i.items {
                match item {
                    syn::ImplItem::Fn(f) => {
                        self.functions.insert(f.sig.ident.to_string());
                        self.member(&owner, f.sig.ident.to_string());
                    }
                    syn::ImplItem::Const(c) => self.member(&owner, c.ident.to_string()),
                    syn::ImplItem::Type(t) => self.member(&owner, t.ident.to_string()),
                    _ => {}
                }
            }
        }
        syn::visit::visit_item_impl(self, i);
    }
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        self.items.insert(f.sig.ident.to_string());
        self.functions.insert(f.sig.ident.to_string());
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_item_const(&mut self, c: &'a syn::ItemConst) {
        self.items.insert(c.ident.to_string());
    }
    fn visit_item_static(&mut self, s: &'a syn::ItemStatic) {
        self.items.insert(s.ident.to_string());
    }
    fn visit_item_type(&mut self, t: &'a syn::ItemType) {
        self.items.insert(t.ident.to_string());
    }
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        self.modules.insert(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
    }
    fn visit_item_macro(&mut self, m: &'a syn::ItemMacro) {
        // `macro_rules! name`, and the functions `list_page!(…, name, …)` style macros define:
        // every identifier of an invocation is taken as a name it may define.
        if let Some(ident) = &m.ident {
            self.items.insert(ident.to_string());
        }
        for token in m.mac.tokens.clone() {
            if let proc_macro2::TokenTree::Ident(ident) = token {
                self.functions.insert(ident.to_string());
                self.items.insert(ident.to_string());
            }
        }
    }
}

/// Everything the workspace's `src/` and `examples/` define.
fn defined() -> Defined {
    let mut defined = Defined::default();
    let root = root();
    for entry in std::fs::read_dir(root.join("crates")).expect("crates").flatten() {
        let krate = entry.path();
        let Ok(manifest) = std::fs::read_to_string(krate.join("Cargo.toml")) else { continue };
        let package: toml::Table = manifest.parse().expect("TOML");
        if let Some(name) = package["package"]["name"].as_str() {
            defined.modules.insert(name.replace('-', "_"));
        }
        for dir in ["src", "examples"] {
            let mut files = Vec::new();
            walk(&krate.join(dir), Path::new(""), &mut files);
            for file in files.iter().filter(|f| f.extension() == Some("rs".as_ref())) {
                for part in file.with_extension("").components() {
                    defined.modules.insert(part.as_os_str().to_string_lossy().into_owned());
                }
                let text = std::fs::read_to_string(krate.join(dir).join(file)).expect("source");
                let parsed = syn::parse_file(&text).expect("parses");
                syn::visit::Visit::visit_file(&mut defined, &parsed);
            }
        }
    }
    defined
}

/// Names from other crates the map quotes (types of rmcp, std and serde a sentence needs).
const EXTERNAL: &[&str] = &[
    "Arc",
    "CallToolResult",
    "Debug",
    "ClientHandler",
    "Mutex",
    "None",
    "Peer",
    "ServerHandler",
    "Value",
];
/// Crates whose paths (`rmcp::…`) the map may quote without the check looking inside.
const EXTERNAL_CRATES: &[&str] = &["rmcp", "std", "serde", "serde_json", "tokio", "tracing"];

/// Whether `span` looks like a Rust name: `Type`, `CONST`, `Type::member`, `module::item`,
/// or a function written `name()`.
fn rust_name(span: &str) -> Option<&str> {
    let name = span.strip_suffix("()").unwrap_or(span);
    let charset = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    let starts = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    let named = name.contains("::")
        || span.ends_with("()")
        || name.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    (charset && starts && named && !name.ends_with("::")).then_some(name)
}

/// Why `span` names nothing the workspace defines; `None` when it resolves.
fn unresolved(span: &str, defined: &Defined) -> Option<String> {
    let name = rust_name(span)?;
    let segments: Vec<&str> = name.split("::").collect();
    if EXTERNAL_CRATES.contains(&segments[0]) {
        return None;
    }
    let known_type = |t: &str| defined.items.contains(t) || EXTERNAL.contains(&t);
    match segments.as_slice() {
        [one] if span.ends_with("()") => {
            (!defined.functions.contains(*one)).then(|| format!("{span}: no such function"))
        }
        [one] => (!known_type(one)).then(|| format!("{span}: no such item")),
        [.., owner, member] => {
            if let Some(members) = defined.members.get(*owner) {
                let found = members.contains(*member)
                    || (defined.modules.contains(*owner) && defined.items.contains(*member));
                return (!found).then(|| format!("{span}: {owner} has no {member}"));
            }
            if defined.modules.contains(*owner) {
                let found = defined.items.contains(*member) || defined.modules.contains(*member);
                return (!found).then(|| format!("{span}: nothing named {member}"));
            }
            if EXTERNAL.contains(owner) {
                return None;
            }
            Some(format!("{span}: no type or module {owner}"))
        }
        [] => None,
    }
}

/// Every backticked name of `text` (outside code fences) that resolves to nothing.
fn unresolved_names(text: &str, defined: &Defined) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            found.extend(spans(line).into_iter().filter_map(|s| unresolved(s, defined)));
        }
    }
    found
}

/// The names the map quotes resolve: `Type::member` to a method, associated item, variant or
/// field of that type, `module::item` to an item, `Type` to a type, `name()` to a function. A
/// removed or renamed item fails here.
#[test]
fn every_name_the_code_map_quotes_is_defined() {
    let defined = defined();
    assert!(defined.items.len() > 1000, "the walk found the items: {}", defined.items.len());
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).expect("the map");
    assert_eq!(unresolved_names(&text, &defined), Vec::<String>::new(), "in docs/architecture.md");
    // The check sees a removed method, type, function and module item, and lets prose,
    // config keys, JSON and paths pass.
    let sample = "`ToolRouter::dispatch` `ToolRouter::no_such` `NoSuchType` `gone_fn()` \
                  `handlers::no_such` `list_budget_bytes` `mcp__server__tool` `lib.rs` \
                  `rmcp::anything` `McpError::ShutDown` `Running::shutdown` `idle_at_start()`";
    assert_eq!(
        unresolved_names(sample, &defined),
        [
            "ToolRouter::no_such: ToolRouter has no no_such",
            "NoSuchType: no such item",
            "gone_fn(): no such function",
            "handlers::no_such: nothing named no_such",
        ]
    );
}

/// Every `Type::member` a doc comment (`///`, `//!`) under `crates/*/src` quotes, whose type the
/// workspace defines: `(file, the unresolved name and why)`.
fn unresolved_in_doc_comments(defined: &Defined) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("crates").flatten() {
        let src = entry.path().join("src");
        let mut files = Vec::new();
        walk(&src, Path::new(""), &mut files);
        for file in files.iter().filter(|f| f.extension() == Some("rs".as_ref())) {
            let text = std::fs::read_to_string(src.join(file)).expect("source");
            let docs = text
                .lines()
                .map(str::trim_start)
                .filter_map(|line| line.strip_prefix("///").or_else(|| line.strip_prefix("//!")));
            for span in docs.flat_map(spans) {
                let span = span.trim_start_matches('[').trim_end_matches(']');
                let Some(name) = rust_name(span) else { continue };
                let segments: Vec<&str> = name.split("::").collect();
                let [.., owner, _] = segments.as_slice() else { continue };
                // A type of the workspace only: `Vec::new` or `rmcp::model::Tool` are not ours.
                let ours = owner.starts_with(|c: char| c.is_ascii_uppercase())
                    && defined.members.contains_key(*owner);
                if let Some(why) = ours.then(|| unresolved(span, defined)).flatten() {
                    let krate = entry.file_name().to_string_lossy().into_owned();
                    found.push(format!("crates/{krate}/src/{}: {why}", file.display()));
                }
            }
        }
    }
    found
}

/// The `Type::member` names the libraries' doc comments quote resolve, as the map's do: a
/// removed or renamed field or method leaves no stale name in a comment.
#[test]
fn every_member_the_doc_comments_quote_is_defined() {
    let defined = defined();
    assert_eq!(unresolved_in_doc_comments(&defined), Vec::<String>::new());
}

/// The public types each library crate defines (`pub struct|enum|trait|type Name`), by crate.
fn public_types() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut by_crate: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("crates").flatten() {
        let krate = entry.file_name().to_string_lossy().into_owned();
        let mut files = Vec::new();
        walk(&entry.path().join("src"), Path::new(""), &mut files);
        for file in files.iter().filter(|f| f.extension() == Some("rs".as_ref())) {
            let text = std::fs::read_to_string(entry.path().join("src").join(file)).expect("src");
            for kind in ["pub struct ", "pub enum ", "pub trait ", "pub type "] {
                for (at, _) in text.match_indices(kind) {
                    let name: String = text[at + kind.len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    by_crate.entry(krate.clone()).or_default().insert(name);
                }
            }
        }
    }
    by_crate
}

/// The README's types a host uses are the front door's: every type the README quotes that a
/// library crate under `mcp-host` defines is exported by `mcp_host` by name (those of
/// `router-protocol` and `mcp-backend` are reachable as `mcp_host::events::…` and
/// `mcp_host::backend::…`; the binaries' own are not a host's, and `shared-router`, a floor
/// above the front door, exports its own).
#[test]
fn every_type_the_readme_quotes_is_exported_by_the_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let lib = std::fs::read_to_string(root().join("crates/mcp-host/src/lib.rs")).expect("lib");
    let face = &lib[lib.find("mod assembly;").expect("the exports")..];
    let exported = |name: &str| {
        face.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|word| word == name)
    };
    let reachable =
        ["router-protocol", "mcp-backend", "mcp-router", "demo-server", "bench", "shared-router"];
    let types = public_types();
    let library = |name: &str| {
        types
            .iter()
            .any(|(krate, names)| !reachable.contains(&krate.as_str()) && names.contains(name))
    };
    let mut missing = std::collections::BTreeSet::new();
    for span in readme.lines().flat_map(spans) {
        let first = span.split("::").next().unwrap_or_default().trim_end_matches("()");
        let qualified = span.starts_with("mcp_host::");
        let typed = first.starts_with(|c: char| c.is_ascii_uppercase())
            && first.chars().all(|c| c.is_ascii_alphanumeric());
        if typed && !qualified && library(first) && !exported(first) {
            missing.insert(first.to_string());
        }
    }
    assert_eq!(missing, std::collections::BTreeSet::<String>::new(), "not exported by mcp_host");
}
