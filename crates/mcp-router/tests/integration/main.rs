//! Integration tests: the router and connection manager against real MCP servers (the demo
//! server binary as a child process, and over streamable HTTP on 127.0.0.1), and the
//! `mcp-router` binary end to end.

mod add;
mod apps;
mod cancel;
mod catalog;
mod cli;
mod code_map;
mod current;
mod defaults;
mod era;
mod examples;
mod exec;
mod faults;
mod first_hour;
mod host;
mod interop;
mod interop_era;
mod ledger;
mod live;
mod load;
mod logs;
mod manager;
mod oauth;
#[cfg(feature = "otel")]
mod otel;
mod prompts;
mod results;
mod sandbox;
mod search;
mod shared;
mod skills;
mod startup;
mod support;
mod tasks;
mod telemetry;
mod tidy;
mod trace;
mod trust;
mod wire;
