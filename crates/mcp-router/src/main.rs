//! `mcp-router`: the command-line face of the tool router.
//!
//! - `demo`: three bundled demo servers and a scripted tool loop, printed as a transcript.
//! - `exec`: a JSON-lines tool loop for agents in any language (see README); `--live` adds the
//!   live view on the terminal.
//! - `watch`: an exec stream in the live view (or as readable lines).
//! - `tools`: the tool specs, OpenAI or Anthropic format.
//! - `list-resources`, `list-templates`, `read`, `call`: the same tools for a person.
//! - `login`, `logout`, `auth status`: OAuth sign-in for HTTP servers.

/// `println!` for the program's own stdout: a reader that went away (`| head`) ends the
/// program quietly instead of a panic (see [`stdout_line`]).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::stdout_line(format_args!($($arg)*))
    };
}

mod add;
mod auth;
mod config_text;
mod conformance;
mod demo;
mod entry;
mod exec;
mod exec_host;
mod exec_output;
mod human;
mod import;
mod installed;
mod live;
mod mcpb;
mod oci;
#[cfg(feature = "otel")]
mod otel;
mod packages;
mod process_faults;
mod prompts;
mod pypi;
mod secrets;
mod setup;
mod shared;
mod stats;
mod trial;
mod trust;
mod watch;
mod wire;
mod wire_json;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use setup::ConfigArg;

#[derive(Parser)]
#[command(name = "mcp-router", version, about = "Route a model's tool calls to MCP servers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start three bundled demo servers and run a short scripted tool loop (no config needed).
    Demo {
        /// Show the live view (servers, calls in flight, durations) instead of the transcript.
        #[arg(long)]
        live: bool,
    },
    /// Read tool calls as JSON lines on stdin; write events and outputs as JSON lines on stdout.
    Exec {
        #[command(flatten)]
        config: ConfigArg,
        /// Also show the live view on the terminal (stdout stays JSON lines).
        #[arg(long)]
        live: bool,
        /// Add each output in a provider's format to its line, as `formatted`.
        #[arg(long, value_enum)]
        format: Option<ProviderFormat>,
    },
    /// Show an exec JSON-lines stream (a file, or `-` / nothing for stdin) in the live view;
    /// readable lines instead when stdout is not a terminal.
    Watch {
        /// The recorded or teed stream.
        file: Option<PathBuf>,
    },
    /// Print the tool specs.
    Tools {
        #[command(flatten)]
        config: ConfigArg,
        /// Wire format.
        #[arg(long, value_enum, default_value_t = Format::Openai)]
        format: Format,
        /// Start every server and list what it offers now (otherwise a server whose tool list
        /// is in the cache is listed from it without being started).
        #[arg(long)]
        refresh: bool,
        /// With tool search on, also list every MCP tool behind `search_mcp_tools`.
        #[arg(long)]
        all: bool,
    },
    /// List the skills the servers offer (SEP-2640): server, name, description, uri.
    Skills {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the JSON a host gets (`ToolRouter::skills`, exec's `skills` answer).
        #[arg(long)]
        json: bool,
    },
    /// List the prompts the servers offer (what agents make slash commands of).
    Prompts {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the JSON a host gets (`ToolRouter::prompts`, exec's `prompts` answer).
        #[arg(long)]
        json: bool,
    },
    /// Get one prompt's messages, with its arguments.
    Prompt {
        #[command(flatten)]
        config: ConfigArg,
        /// The server name.
        #[arg(long)]
        server: String,
        /// The prompt's name.
        name: String,
        /// An argument, `NAME=VALUE` (repeatable).
        #[arg(long = "arg")]
        args: Vec<String>,
    },
    /// What MCP cost: the ledger's runs added up, per server (the context its specs take,
    /// calls, latency) and per tool (errors by kind, what the model was given).
    Stats(stats::StatsArgs),
    /// List resources (all servers, or one page of one server).
    ListResources(human::ListArgs),
    /// List resource templates (all servers, or one page of one server).
    ListTemplates(human::ListArgs),
    /// Read a resource.
    Read {
        #[command(flatten)]
        config: ConfigArg,
        /// The server name.
        #[arg(long)]
        server: String,
        /// The resource URI.
        #[arg(long, required_unless_present = "template", conflicts_with = "template")]
        uri: Option<String>,
        /// A resource template (as listed by `list-templates`) to expand with `--param`.
        #[arg(long)]
        template: Option<String>,
        /// A template parameter, `NAME=VALUE` (repeatable).
        #[arg(long = "param", requires = "template")]
        params: Vec<String>,
        /// Print the raw payload the model would get.
        #[arg(long)]
        json: bool,
    },
    /// Call an MCP tool by its qualified name (`mcp__server__tool`).
    Call {
        #[command(flatten)]
        config: ConfigArg,
        /// The qualified tool name.
        name: String,
        /// Arguments as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
        /// Print the raw output the model would get.
        #[arg(long)]
        json: bool,
        /// Print the output as a provider's API takes it back.
        #[arg(long, value_enum, conflicts_with = "json")]
        format: Option<ProviderFormat>,
    },
    /// Sign in to an HTTP server with OAuth: prints the authorization URL, opens a browser when
    /// there is one and receives the redirect on 127.0.0.1.
    Login {
        #[command(flatten)]
        config: ConfigArg,
        /// The server name.
        name: String,
        /// Do not listen for the redirect: paste the URL the browser was sent to on stdin.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget a server's stored OAuth credentials.
    Logout {
        #[command(flatten)]
        config: ConfigArg,
        /// The server name.
        name: String,
    },
    /// The pinned tool definitions and the changes held (without a subcommand: list them).
    Trust {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the JSON of the listing.
        #[arg(long)]
        json: bool,
        /// Start the servers first and list what they offer now (tools, prompts, resource
        /// templates, skills), so what changed since they last ran is shown held.
        #[arg(long)]
        refresh: bool,
        #[command(subcommand)]
        command: Option<trust::TrustCommand>,
    },
    /// Run the shared router: one process per configured server for every agent of this user
    /// and config, each agent's session its own (on a Unix socket; `--listen` adds loopback
    /// HTTP with a bearer secret).
    Serve(shared::ServeArgs),
    /// The stdio bridge an agent lists as a server: joins the shared router for this config,
    /// starting it when none runs.
    Connect(shared::ConnectArgs),
    /// Wire agents to the shared router: one `mcp-router connect` entry in each agent's own
    /// MCP config, the rest of the file kept byte for byte; `--undo` puts it back.
    Wire(wire::WireArgs),
    /// Take the MCP servers of the agents configured here into the router's config.
    Import(import::ImportArgs),
    /// Add a server from the MCP registry (or a server.json) to the config, version pinned,
    /// after showing what it runs and asking.
    Add(add::AddArgs),
    /// For the servers `add` put in the config: a newer version, or the pinned one deprecated
    /// or deleted, as their registry says.
    Outdated(installed::OutdatedArgs),
    /// Take a server out of the config, every other byte kept.
    Remove(installed::RemoveArgs),
    /// Move a server `add` put in the config to its registry's latest version, after showing
    /// what changes and asking.
    Update(installed::UpdateArgs),
    /// The secret store: servers' secret variables, kept out of the config.
    #[command(subcommand)]
    Secret(secrets::SecretCommand),
    /// What the shared router for this config runs: sessions, servers, processes, memory.
    Status {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Stop the shared router for this config (as SIGTERM does: its sessions end, its servers
    /// stop); waits until it is gone.
    Stop {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Sign-in state of the HTTP servers.
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    /// Client side of the MCP conformance suite (scenario in MCP_CONFORMANCE_SCENARIO).
    ConformanceClient {
        /// The scenario server's URL (the suite appends it).
        url: String,
    },
    /// Serve the bundled demo MCP server (what `demo` starts): the same options as
    /// `mcp-demo-server`.
    #[command(hide = true)]
    ServeDemo(demo_server::ServeArgs),
}

#[derive(Subcommand)]
enum AuthCommand {
    /// Which servers are signed in, with scopes and expiry (never a token).
    Status(ConfigArg),
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Openai,
    Anthropic,
}

/// A provider's format for a call's output (`ToolOutput::to_format`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ProviderFormat {
    /// OpenAI Responses: a `function_call_output` item.
    OpenaiResponses,
    /// OpenAI Chat Completions: a `tool` message.
    OpenaiChat,
    /// Anthropic Messages: a `tool_result` block.
    Anthropic,
}

impl From<ProviderFormat> for router_protocol::OutputFormat {
    fn from(format: ProviderFormat) -> Self {
        match format {
            ProviderFormat::OpenaiResponses => Self::OpenAiResponses,
            ProviderFormat::OpenaiChat => Self::OpenAiChat,
            ProviderFormat::Anthropic => Self::Anthropic,
        }
    }
}

/// A user error prints one clear line (`mcp-router: …`, with its causes) and exits 1, whatever
/// `RUST_BACKTRACE` says; `RUST_LOG` keeps the detail in the log.
fn main() {
    // A sandboxed server's start: this binary is the sandbox's helper (`Sandbox::helper`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "__sandbox-exec") {
        let error = mcp_host::sandbox_exec(&args[1..]);
        eprintln!("mcp-router: __sandbox-exec: {error}");
        std::process::exit(126);
    }
    let code = main_with_code().unwrap_or_else(|e| {
        eprintln!("mcp-router: {e:#}");
        1
    });
    std::process::exit(code);
}

/// One line on stdout. SIGPIPE stays ignored, as Rust leaves it: a server that exits while a
/// request is written to it fails that request (`EPIPE`), it does not kill the router and
/// every other server with it. A reader of our own stdout that went away (`| head`) ends the
/// program quietly here instead, as it would end other command-line tools (exit 0; the servers'
/// guards end them as the process goes).
pub(crate) fn stdout_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("mcp-router: cannot write to stdout: {e}");
        }
        std::process::exit(if e.kind() == std::io::ErrorKind::BrokenPipe { 0 } else { 1 });
    }
}

fn main_with_code() -> anyhow::Result<i32> {
    let cli = Cli::parse();
    if matches!(cli.command, Command::ConformanceClient { .. }) {
        // The suite hands a scenario's client secret over in its context; the OAuth config
        // names secrets by environment variable, so it goes there.
        let context: Option<serde_json::Value> = std::env::var("MCP_CONFORMANCE_CONTEXT")
            .ok()
            .and_then(|c| serde_json::from_str(&c).ok());
        if let Some(secret) = context.as_ref().and_then(|c| c["client_secret"].as_str()) {
            // SAFETY: no other thread exists yet (the runtime is built below).
            #[allow(unsafe_code)]
            unsafe {
                std::env::set_var(conformance::SECRET_VAR, secret);
            }
        }
    }
    let default_filter = default_log_filter(&cli.command);
    let log_filter = || {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter))
    };
    // Colour only on a terminal, and never with NO_COLOR set.
    let ansi = {
        use std::io::IsTerminal as _;
        std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    };
    #[cfg(not(feature = "otel"))]
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_env_filter(log_filter())
        .init();
    #[cfg(feature = "otel")]
    let exporters = {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        let log = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
            .with_filter(log_filter());
        match otel::layers()? {
            Some((layers, exporters)) => {
                tracing_subscriber::registry().with(log).with(layers).init();
                Some(exporters)
            }
            None => {
                tracing_subscriber::registry().with(log).init();
                None
            }
        }
    };
    let runtime = runtime_for(&cli.command)?;
    let result = runtime.block_on(run(cli));
    // Not a plain drop: that would wait forever for a blocking read of stdin still in flight.
    // Servers are already shut down; any left are killed by their guards as tasks are dropped.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    #[cfg(feature = "otel")]
    if let Some(exporters) = exporters {
        exporters.shutdown();
    }
    result
}

/// The log filter without RUST_LOG: warnings, less rmcp's worker, whose "fatal" lines at
/// shutdown (a cancelled credential-store task) are expected. A one-shot command says a
/// server's failed start in its own one `mcp-router: …` line, so the manager's warning would say
/// it twice.
fn default_log_filter(command: &Command) -> &'static str {
    match command {
        Command::Call { .. }
        | Command::Read { .. }
        | Command::ListResources(_)
        | Command::ListTemplates(_)
        | Command::Tools { .. }
        | Command::Skills { .. }
        | Command::Prompts { .. }
        | Command::Prompt { .. } => {
            "warn,mcp_connection_manager::start=error,rmcp::transport::worker=off"
        }
        _ => "warn,rmcp::transport::worker=off",
    }
}

/// The runtime: `connect` only carries bytes between two pipes (on threads of its own), one
/// thread is enough; everything else gets the multi-threaded one.
fn runtime_for(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    match command {
        Command::Connect(_) => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        _ => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    }
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Demo { live: false } => demo::run().await,
        Command::Demo { live: true } => demo::run_live().await,
        Command::Exec { config, live, format } => {
            exec::run(&config, live, format.map(Into::into)).await
        }
        Command::Watch { file } => watch::watch(file.as_deref()),
        Command::Tools { config, format, refresh, all } => {
            let format = match format {
                Format::Openai => tool_router::ToolFormat::OpenAi,
                Format::Anthropic => tool_router::ToolFormat::Anthropic,
            };
            human::tools(&config, format, refresh, all).await
        }
        Command::Skills { config, json } => human::skills(&config, json).await,
        Command::Prompts { config, json } => crate::prompts::list(&config, json).await,
        Command::Prompt { config, server, name, args } => {
            crate::prompts::get(&config, &server, &name, &args).await
        }
        Command::Stats(args) => stats::run(&args),
        Command::ListResources(args) => human::list(args, tool_router::LIST_MCP_RESOURCES).await,
        Command::ListTemplates(args) => {
            human::list(args, tool_router::LIST_MCP_RESOURCE_TEMPLATES).await
        }
        Command::Read { config, server, uri, template, params, json } => {
            let target = match (uri, template) {
                (Some(uri), _) => human::Target::Uri(uri),
                (None, Some(template)) => human::Target::Template { template, params },
                (None, None) => anyhow::bail!("give --uri or --template"),
            };
            human::read(&config, server, target, json).await
        }
        Command::Call { config, name, arguments, json, format } => {
            human::call(&config, name, arguments, json, format.map(Into::into)).await
        }
        Command::ConformanceClient { url } => conformance::run(url).await,
        Command::Login { config, name, no_browser } => {
            auth::login(&config, &name, no_browser).await
        }
        Command::Logout { config, name } => auth::logout(&config, &name),
        Command::Trust { config, json, refresh, command } => {
            trust::main(&config, json, refresh, command).await
        }
        Command::Auth { command: AuthCommand::Status(config) } => auth::status(&config).await,
        Command::Serve(args) => shared::serve(args).await,
        Command::Connect(args) => shared::connect(args).await,
        Command::Wire(args) => wire::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Add(args) => add::run(&args).await,
        Command::Outdated(args) => installed::outdated(&args).await,
        Command::Remove(args) => installed::remove(&args),
        Command::Update(args) => installed::update(&args).await,
        Command::Secret(command) => secrets::run(&command),
        Command::Status { config, json } => shared::status(&config, json).await,
        Command::Stop { config } => shared::stop(&config).await,
        Command::ServeDemo(args) => serve_demo(args).await,
    }
}

/// The bundled demo server, with this process's fault hooks.
async fn serve_demo(args: demo_server::ServeArgs) -> anyhow::Result<i32> {
    let faults = std::sync::Arc::new(process_faults::ThisProcess);
    demo_server::serve(&args, Some(faults), |addr| {
        println!("listening on http://{addr}/mcp");
    })
    .await?;
    Ok(0)
}
