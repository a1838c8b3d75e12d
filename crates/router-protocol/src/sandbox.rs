//! A stdio server's sandbox profile (`sandbox` in its entry, `[mcp_router] sandbox` for all).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a sandboxed stdio server may reach. The default profile: everything readable but the
/// user's credentials and the router's own state; writes to its working directory and the
/// router's, temp and the package managers' caches; the network on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sandbox {
    /// `false`: `sandbox = "off"`, the server runs with all of the user's rights.
    pub enabled: bool,
    /// `false`: read-only (it may write only to `/dev` and `allow_write`).
    pub write: bool,
    /// `false`: no IPv4 or IPv6 socket can be made (Unix sockets still work).
    pub network: bool,
    /// With the network on: TCP connections to these ports only (none: any).
    pub ports: Vec<u16>,
    /// More places it may write (`allow_write`), whatever `write` says.
    pub allow_write: Vec<PathBuf>,
    /// More places it may not read, beside the credentials and the router's state in their
    /// default places: the manager adds where its own state is when a host put it elsewhere
    /// (`Assembly::state_dir`, a `PinStore` or `TokenStore` of its own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<PathBuf>,
    /// A program that applies the sandbox and runs the server (`PROGRAM __sandbox-exec PLAN --
    /// COMMAND…`, see `mcp_connection::sandbox_exec`), started by `posix_spawn`; `None`: the
    /// sandbox is applied in the child between `fork` and `exec`. The `mcp-router` binary
    /// names itself; a host may name its own binary if it answers `__sandbox-exec`.
    pub helper: Option<PathBuf>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self {
            enabled: true,
            write: true,
            network: true,
            ports: Vec::new(),
            allow_write: Vec::new(),
            deny: Vec::new(),
            helper: None,
        }
    }
}

impl Sandbox {
    /// The profiles' names, as the config takes them.
    pub const NAMES: [&str; 5] = ["default", "off", "read-only", "offline", "strict"];

    /// `sandbox = "off"`.
    pub fn off() -> Self {
        Self { enabled: false, ..Self::default() }
    }

    /// A named profile: `default`, `off`, `read-only`, `offline` (network off), `strict`
    /// (read-only and offline).
    pub fn named(name: &str) -> Option<Self> {
        let base = Self::default();
        Some(match name {
            "default" => base,
            "off" => Self::off(),
            "read-only" => Self { write: false, ..base },
            "offline" => Self { network: false, ..base },
            "strict" => Self { write: false, network: false, ..base },
            _ => return None,
        })
    }
}

/// A package a server runs from and the digest it had when it was installed: before each start
/// its files must still have it, or the server is refused and nothing of it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageIntegrity {
    /// The package: a file, or a folder (every file, link and folder under it, by path).
    pub path: std::path::PathBuf,
    /// Its SHA-256 digest, lower-case hex (`mcp_connection_manager::package_digest`).
    pub sha256: String,
}
