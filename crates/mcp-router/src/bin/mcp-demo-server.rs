//! `mcp-demo-server [--page-size N] [--name NAME] [--http 127.0.0.1:PORT] [--fault F]
//! [--conformance-fixtures]`: the demo MCP server.
//! On stdio by default; with `--http` it serves streamable HTTP and prints
//! `listening on http://ADDR/mcp` on stdout once bound (port 0 picks a free port).

use demo_server::{DemoOptions, run_http, run_stdio};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut options = DemoOptions::default();
    let mut http: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value =
            |flag: &str| args.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"));
        match arg.as_str() {
            "--page-size" => options.page_size = value("--page-size")?.parse()?,
            "--name" => options.name = value("--name")?,
            "--http" => http = Some(value("--http")?),
            "--fault" => options.fault = Some(value("--fault")?),
            "--conformance-fixtures" => options.conformance_fixtures = true,
            "-h" | "--help" => {
                println!(
                    "usage: mcp-demo-server [--page-size N] [--name NAME] [--http 127.0.0.1:PORT] [--fault cursor-cycle] [--conformance-fixtures]"
                );
                return Ok(());
            }
            other => anyhow::bail!("unknown argument `{other}` (try --help)"),
        }
    }
    match http {
        None => run_stdio(options).await,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            if !listener.local_addr()?.ip().is_loopback() {
                anyhow::bail!("refusing to listen on a non-loopback address: {addr}");
            }
            println!("listening on http://{}/mcp", listener.local_addr()?);
            run_http(options, listener).await
        }
    }
}
