//! How bytes reach a server: newline-delimited JSON-RPC over a child's pipes (`lines`, `wire`,
//! `stdio`, `procs`), the straight path that answers reads without rmcp (`straight`), streamable
//! HTTP (`remote`), and the wrapper every rmcp connection goes through (`traced`).

pub(crate) mod lines;
pub(crate) mod procs;
pub(crate) mod remote;
pub(crate) mod stdio;
pub(crate) mod straight;
pub(crate) mod traced;
pub(crate) mod wire;
