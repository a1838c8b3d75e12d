//! A small MCP server on rmcp's server side, for the demo and the tests: this repository's
//! documents, a CSV dataset and a PNG as resources, four templates, and tools (`echo`, `add`,
//! `fail`, `sleep`, elicitation and roots requests, and fault tools for recovery tests).
//!
//! `page_size` makes pagination visible; cursors are opaque. It speaks MCP on stdio
//! ([`run_stdio`]) or streamable HTTP ([`run_http`]); [`ServeArgs`] is the one option set of
//! every binary that serves it. The library never exits the process or writes to stdout:
//! what the `crash` and `garbage` tools do to a process is the binary's ([`ProcessFaults`]).
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod oauth;
mod options;
mod resources;
mod serve;
mod server;
mod skills;
mod tasks;
mod tools;
mod traced;

pub use options::{DemoError, DemoOptions, Fault, ProcessFaults};
pub use resources::{
    CITIES_CSV, DOCS, PIXEL_PNG, register_conformance_fixtures, register_generated, registry,
    resources,
};
pub use serve::{ServeArgs, run_http, run_stdio, serve};
pub use server::DemoServer;
pub use skills::{bundled_skills_dir, load_skills};
pub use traced::TRACEPARENT_HEADER_KEY;
