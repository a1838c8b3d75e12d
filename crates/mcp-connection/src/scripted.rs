//! Tests' scripted server: an rmcp client on the router's stdio transport talks to a test that
//! reads each line the client writes and writes the answers it chooses.

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::ServiceExt;

use crate::client::RouterClient;
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// A scripted server's two ends: what the client wrote, and where its answers go.
pub(crate) struct Server {
    input: BufReader<DuplexStream>,
    pub(crate) output: DuplexStream,
}

impl Server {
    /// The next line the client wrote, within 5 s.
    pub(crate) async fn next(&mut self) -> Value {
        let mut line = String::new();
        let read = self.input.read_line(&mut line);
        let read = tokio::time::timeout(Duration::from_secs(5), read).await;
        read.expect("a line within 5 s").expect("a line from the client");
        serde_json::from_str(&line).expect("json")
    }

    pub(crate) async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.output.write_all(line.as_bytes()).await.expect("written");
    }

    /// The request for `uri` a dropped future abandoned, then the `notifications/cancelled`
    /// that names it with rmcp's reason; the request is returned.
    pub(crate) async fn abandoned(&mut self, uri: &str) -> Value {
        let request = self.next().await;
        assert_eq!(request["params"]["uri"], uri);
        let cancelled = self.next().await;
        assert_eq!(cancelled["method"], "notifications/cancelled", "{cancelled}");
        assert_eq!(cancelled["params"]["requestId"], request["id"]);
        assert_eq!(cancelled["params"]["reason"], crate::transport::wire::ABANDONED);
        request
    }

    pub(crate) async fn answer(&mut self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
    }
}

pub(crate) type Client = rmcp::service::RunningService<RoleClient, ()>;

/// A connection's client side named `s`, with `host`, events discarded and nothing watched.
pub(crate) fn router_client(host: std::sync::Arc<dyn crate::host::HostHandler>) -> RouterClient {
    RouterClient {
        server: "s".into(),
        events: router_protocol::EventSender::discard(),
        host,
        cache: Default::default(),
        changes: Default::default(),
        watched: std::sync::Arc::new(crate::watch::Watched::new(0)),
        challenge: Default::default(),
        list_generation: Default::default(),
        telemetry: crate::telemetry::Telemetry::new(&crate::config::ServerConfig::stdio(
            "s",
            "true",
            Vec::new(),
        )),
        address: None,
        progress: Default::default(),
        closed: Default::default(),
        logs: Default::default(),
        startup: Default::default(),
    }
}

/// An rmcp client on the transport `over` makes of the client's ends (what it reads, what it
/// writes), through `initialize` with the scripted server (2025-11-25).
pub(crate) async fn connected<T, E>(
    over: impl FnOnce(DuplexStream, DuplexStream) -> T,
) -> (Client, Server)
where
    T: Transport<RoleClient, Error = E> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let (client_out, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_in) = tokio::io::duplex(1 << 16);
    let mut server = Server { input: BufReader::new(server_in), output: server_out };
    let transport = over(client_in, client_out);
    let client = tokio::spawn(async move { ().serve(transport).await.expect("initialized") });
    let initialize = server.next().await;
    assert_eq!(initialize["method"], "initialize");
    let info = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"resources": {}},
        "serverInfo": {"name": "scripted", "version": "1"},
    });
    server.answer(&initialize["id"], info).await;
    assert_eq!(server.next().await["method"], "notifications/initialized");
    (client.await.expect("client"), server)
}
