//! One router for every agent of a user: [`SharedRouter`] is an MCP server on a Unix socket
//! (and, when asked, on loopback HTTP) where each session gets a router of its own over the
//! servers they all share; servers marked `shared = false` run once per session, `shared =
//! "cwd"` once per working directory of the sessions' agents. [`join`] and [`bridge`] are the
//! client side an agent starts as a stdio server (`mcp-router connect`), [`status_text`] and
//! [`stop`] ask a running router. `mcp-router serve`, `connect`, `status` and `stop` are these
//! functions behind command-line arguments.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use shared_router::{Place, ServeOptions, SharedRouter};
//! let config = router_config::ConfigFile::from_servers(Vec::new());
//! let place = Place::for_config(None)?;
//! let options = ServeOptions {
//!     place, config, follow: None, listen: None, idle_timeout: None, state_dir: None,
//! };
//! let router = SharedRouter::start(options).await?;
//! println!("sessions on {}", router.socket().display());
//! router.run(async { let _ = tokio::signal::ctrl_c().await; }).await;
//! # Ok(())
//! # }
//! ```
// A poisoned lock is handled by one rule, `lock::locked`; nothing here panics on one, and
// `expect` is for tests.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod backend;
mod connect;
mod ending;
mod events;
mod handler;
mod host;
mod http;
mod lock;
mod output;
mod own;
mod place;
mod prompts;
mod resources;
mod serve;
mod session;
mod shell;
mod status;
#[cfg(test)]
mod tests;

pub use connect::{bridge, join};
pub use own::as_run_in;
pub use place::Place;
pub use serve::{ConfigSource, Ended, Notice, ServeOptions, SharedRouter};
pub use shell::shell_word;
pub use status::{status_text, stop};
