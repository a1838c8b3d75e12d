//! How bytes reach a server: newline-delimited JSON-RPC over a child's pipes (`lines`, `wire`,
//! `stdio`, `procs`), and the straight path that answers reads and calls without rmcp (`straight`).

pub(crate) mod lent;
pub(crate) mod lines;
pub(crate) mod procs;
pub(crate) mod stderr;
pub(crate) mod stdio;
pub(crate) mod straight;
pub(crate) mod wire;
