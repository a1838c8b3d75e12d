//! The manager's options every row takes.

use mcp_connection_manager::ManagerOptions;

/// The manager's defaults, with this binary as the sandbox's helper (`__sandbox-exec`), as the
/// `mcp-router` binary runs: every bench row's servers are sandboxed as a user's are.
pub(crate) fn manager_options() -> ManagerOptions {
    let helper = std::env::current_exe().ok();
    ManagerOptions::default().with(|o| o.sandbox.helper = helper)
}
