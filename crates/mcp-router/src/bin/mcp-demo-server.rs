//! `mcp-demo-server [--page-size N] [--name NAME] [--http 127.0.0.1:PORT] [--fault F]
//! [--conformance-fixtures]`: the demo MCP server.
//! On stdio by default; with `--http` it serves streamable HTTP and prints
//! `listening on http://ADDR/mcp` on stdout once bound (port 0 picks a free port).

use std::sync::Arc;

use clap::Parser;
use demo_server::{ServeArgs, serve};

#[path = "../process_faults.rs"]
mod process_faults;

/// The demo MCP server.
#[derive(Parser)]
#[command(
    name = "mcp-demo-server",
    version,
    about = "The demo MCP server (stdio or loopback HTTP)"
)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let faults = Arc::new(process_faults::ThisProcess);
    serve(&cli.serve, Some(faults), |addr| println!("listening on http://{addr}/mcp")).await?;
    Ok(())
}
