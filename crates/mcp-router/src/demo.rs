//! `mcp-router demo`: starts the two bundled demo servers and a third with a big generated
//! catalog (three in all) as child processes and runs a short scripted tool loop through the router, printing
//! each call, its events and its output.

use router_protocol::{EventMsg, EventReceiver, event_channel};
use serde_json::Value;
use tool_router::{CallContext, ContentItem, ToolCall, ToolOutput};

use crate::setup;

/// (what it shows, tool name, arguments); `{cursor}` is the previous output's `nextCursor`.
const SCRIPT: &[(&str, &str, &str)] = &[
    ("List every resource of every server (sorted by server name)", "list_mcp_resources", "{}"),
    (
        "List one server's resources: one page, with nextCursor",
        "list_mcp_resources",
        r#"{"server":"docs"}"#,
    ),
    (
        "Follow the cursor to the next page",
        "list_mcp_resources",
        r#"{"server":"docs","cursor":"{cursor}"}"#,
    ),
    ("List resource templates", "list_mcp_resource_templates", "{}"),
    ("Read a resource", "read_mcp_resource", r#"{"server":"docs","uri":"demo://notes/welcome"}"#),
    (
        "Read through a resource template (expanded by the router)",
        "read_mcp_resource",
        r#"{"server":"docs","template":"demo://lines/{name}{?from,to}","parameters":{"name":"README.md","from":1,"to":4}}"#,
    ),
    (
        "Ask the server to complete a template argument",
        "complete_mcp_resource_argument",
        r#"{"server":"docs","template":"demo://docs/{name}","argument":"name","value":""}"#,
    ),
    (
        "Read a CSV resource: it becomes a queryable data source",
        "read_mcp_resource",
        r#"{"server":"docs","uri":"demo://data/cities.csv"}"#,
    ),
    (
        "Query the imported data (read-only SQL)",
        "query_mcp_data",
        r#"{"sql":"SELECT country, count(*) AS cities, sum(population) AS people FROM docs_cities GROUP BY country ORDER BY people DESC LIMIT 3"}"#,
    ),
    ("Writes are refused", "query_mcp_data", r#"{"sql":"DROP TABLE docs_cities"}"#),
    (
        "Read an image: the model gets an image item, not base64 text",
        "read_mcp_resource",
        r#"{"server":"docs","uri":"demo://images/pixel.png"}"#,
    ),
    ("Call an MCP tool by its qualified name", "mcp__notes__add", r#"{"a":2,"b":3}"#),
    (
        "A deliberate mistake: read without a server",
        "read_mcp_resource",
        r#"{"uri":"demo://notes/welcome"}"#,
    ),
    (
        "A URI the server does not have",
        "read_mcp_resource",
        r#"{"server":"notes","uri":"demo://missing"}"#,
    ),
    (
        "Search a big catalog (2,000 resources): invoices only, 3 at a time",
        "list_mcp_resources",
        r#"{"server":"catalog","query":"invoice","limit":3}"#,
    ),
    (
        "Continue the search with its cursor (the filters and the limit travel in it)",
        "list_mcp_resources",
        r#"{"server":"catalog","cursor":"{cursor}"}"#,
    ),
];

/// The change steps after the script: a server adds a tool, which is then called; a resource
/// the model read changes, and the next output says so.
const ADD_TOOL: (&str, &str) = ("mcp__notes__add_tool", r#"{"name":"greet"}"#);
const NEW_TOOL: (&str, &str) = ("mcp__notes__greet", r#"{"to":"you"}"#);
const TOUCH: (&str, &str) = ("mcp__docs__touch", r#"{"uri":"demo://notes/welcome"}"#);
const AFTER_TOUCH: (&str, &str) = ("list_mcp_resources", r#"{"server":"notes"}"#);

/// The list budget of the demo, small so that the first list shows how a catalog that does
/// not fit is cut and continued.
const DEMO_LIST_BUDGET: usize = 6 * 1024;

/// The bundled demo servers plus `catalog`, a big generated catalog, under the demo's small
/// list budget.
fn demo_config() -> anyhow::Result<router_config::ConfigFile> {
    let mut config = setup::config(&setup::ConfigArg::default())?;
    config
        .servers
        .push(setup::demo_server("catalog", &["--page-size", "500", "--generated", "2000"])?);
    config.settings.lists.budget_bytes = DEMO_LIST_BUDGET;
    Ok(config)
}

pub(crate) async fn run() -> anyhow::Result<i32> {
    let (events, mut rx) = event_channel();
    let running = setup::start(demo_config()?, events.clone())?;
    outln!(
        "mcp-router demo: three demo MCP servers as child processes: `docs` (pages of 2), `notes`, and `catalog` (2,000 generated resources; every 7th, 286 in all, is annotated for the user only and so hidden from the model, as `show_user_audience = false` does: the lists skip those numbers); list payloads limited to {} KiB.\n",
        DEMO_LIST_BUDGET / 1024
    );
    running.manager.wait_until_started().await;
    print_events(&mut rx);
    let ctx = CallContext::new(events);
    let mut cursor = String::new();
    for (i, (title, name, arguments)) in SCRIPT.iter().enumerate() {
        let arguments = arguments.replace("{cursor}", &cursor);
        outln!("\n── {}. {title}", i + 1);
        outln!("   call    {name} {arguments}");
        let call = ToolCall {
            call_id: format!("call-{}", i + 1),
            name: name.to_string(),
            arguments: arguments.to_string().into(),
        };
        let output = running.router.dispatch_to_output(&ctx, call).await?;
        if let Some(next) = next_cursor(&output) {
            cursor = next;
        }
        print_events(&mut rx);
        print_output(&output);
    }
    tool_list_change(&running, &ctx, &mut rx, SCRIPT.len() + 1).await?;
    resource_change(&running, &ctx, &mut rx, SCRIPT.len() + 2).await?;
    tool_search(&running, &ctx, &mut rx, SCRIPT.len() + 3).await?;
    skills(&running, &ctx, &mut rx, SCRIPT.len() + 4).await?;
    let step = SCRIPT.len() + 5;
    outln!("\n── {step}. A long call the server runs as a task (SEP-2663): polled to its end");
    let job = r#"{"seconds":1.5}"#;
    sub_step(&running.router, &ctx, &mut rx, format!("call-{step}"), "mcp__docs__job", job).await?;
    running.shutdown().await;
    outln!("\n── Shutdown: every server stopped, the event stream ends");
    print_events(&mut rx);
    Ok(0)
}

/// Tool search: a router over the same servers with `tool_search = "on"` offers its own tools
/// and `search_mcp_tools`; a search reveals the hit, the specs append it, and it is called.
async fn tool_search(
    running: &setup::Running,
    ctx: &CallContext,
    rx: &mut EventReceiver,
    step: usize,
) -> anyhow::Result<()> {
    let settings = tool_router::RouterSettings::default().with(|s| {
        s.search.mode = tool_router::ToolSearchMode::On;
        s.data.enabled = false;
    });
    let searching = tool_router::ToolRouter::with_mcp_settings(running.manager.clone(), &settings)?;
    let all = running.router.specs().await.len();
    let names = |specs: Vec<tool_router::ToolSpec>| -> Vec<String> {
        specs.into_iter().map(|s| s.name).collect()
    };
    let base = names(searching.specs().await);
    outln!(
        "\n── {step}. Tool search (tool_search = \"on\"): {} specs instead of {all}; the model searches, the hit is appended, then called",
        base.len()
    );
    outln!("   specs   {}", base.join(" "));
    let steps = [
        ("search_mcp_tools", r#"{"query":"add two numbers","server":"notes","limit":1}"#),
        ("mcp__notes__add", r#"{"a":20,"b":22}"#),
    ];
    for (i, (name, arguments)) in steps.into_iter().enumerate() {
        let call_id = format!("call-{step}{}", ['a', 'b'][i]);
        sub_step(&searching, ctx, rx, call_id, name, arguments).await?;
        if i == 0 {
            let after = names(searching.specs().await);
            outln!("   specs   … {}", after[base.len()..].join(" "));
        }
    }
    Ok(())
}

/// Skills (SEP-2640): `docs` serves two; the host lists them (nothing fetched), the model
/// loads one — its SKILL.md checked against the listed entry — and reads one of its files,
/// checked against the manifest.
async fn skills(
    running: &setup::Running,
    ctx: &CallContext,
    rx: &mut EventReceiver,
    step: usize,
) -> anyhow::Result<()> {
    outln!("\n── {step}. Skills: listed for the host's prompt, loaded by the model, files checked");
    for skill in running.router.skills().await.skills {
        outln!("   skill   {} {}: {}", skill.server, skill.name, skill.description);
    }
    let steps = [
        (tool_router::LOAD_MCP_SKILL, r#"{"server":"docs","name":"release-notes"}"#),
        (
            tool_router::READ_MCP_RESOURCE,
            r#"{"server":"docs","uri":"skill://release-notes/templates/TEMPLATE.md"}"#,
        ),
    ];
    for (i, (name, arguments)) in steps.into_iter().enumerate() {
        let call_id = format!("call-{step}{}", ['a', 'b'][i]);
        sub_step(&running.router, ctx, rx, call_id, name, arguments).await?;
    }
    Ok(())
}

/// One call of a later step through `router`: the call, its events, its output.
async fn sub_step(
    router: &tool_router::ToolRouter,
    ctx: &CallContext,
    rx: &mut EventReceiver,
    call_id: String,
    name: &str,
    arguments: &str,
) -> anyhow::Result<()> {
    outln!("   call    {name} {arguments}");
    let call =
        ToolCall { call_id, name: name.to_string(), arguments: arguments.to_string().into() };
    let output = router.dispatch_to_output(ctx, call).await?;
    print_events(rx);
    print_output(&output);
    Ok(())
}

/// `demo --live`: the same servers and every step of the transcript, shown in the live view
/// instead: the servers starting and becoming ready, each call in flight with its time ticking
/// (one sleeps 1.5 s to show it), then finished with its duration — the script, the tool-list
/// and resource changes, tool search (on a router with it on), skills and a task. It stays
/// until `q`.
pub(crate) async fn run_live() -> anyhow::Result<i32> {
    let view = match crate::live::LiveView::open("mcp-router demo --live") {
        Ok(view) => view,
        Err(e) => {
            eprintln!("mcp-router: {e}; showing the transcript instead");
            return run().await;
        }
    };
    let (events, mut rx) = event_channel();
    if let Some(to_view) = view.sender() {
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                let _ = to_view.send(event.into());
            }
        });
    }
    let running = setup::start(demo_config()?, events.clone())?;
    let settings = tool_router::RouterSettings::default().with(|s| {
        s.search.mode = tool_router::ToolSearchMode::On;
        s.data.enabled = false;
    });
    let searching = tool_router::ToolRouter::with_mcp_settings(running.manager.clone(), &settings)?;
    let ctx = CallContext::new(events);
    let slow = ("Wait for a slow tool", "mcp__docs__sleep", r#"{"ms":1500}"#);
    let changes = [ADD_TOOL, NEW_TOOL, TOUCH, AFTER_TOUCH].map(|(n, a)| ("", n, a));
    let later = [
        ("search_mcp_tools", r#"{"query":"add two numbers","server":"notes","limit":1}"#),
        ("mcp__notes__add", r#"{"a":20,"b":22}"#),
        (tool_router::LOAD_MCP_SKILL, r#"{"server":"docs","name":"release-notes"}"#),
        (
            tool_router::READ_MCP_RESOURCE,
            r#"{"server":"docs","uri":"skill://release-notes/templates/TEMPLATE.md"}"#,
        ),
        ("mcp__docs__job", r#"{"seconds":1.5}"#),
    ]
    .map(|(n, a)| ("", n, a));
    let steps = SCRIPT.iter().take(5).chain([&slow]).chain(SCRIPT.iter().skip(5)).chain(&changes);
    let steps =
        steps.map(|step| (&*running.router, step)).chain(later.iter().map(|s| (&searching, s)));
    let mut cursor = String::new();
    for (i, (router, (_, name, arguments))) in steps.enumerate() {
        if view.closed() {
            break;
        }
        let arguments = arguments.replace("{cursor}", &cursor);
        if let Some(next) = live_call(&view, router, &ctx, i + 1, name, arguments).await? {
            cursor = next;
        }
    }
    view.send(crate::live::ViewItem::Notice(
        "the demo has finished: every step ran (press q to quit)".to_string(),
    ));
    tokio::task::spawn_blocking(move || view.wait_for_quit()).await?;
    running.shutdown().await;
    Ok(0)
}

/// One call of the live demo, then a pause; the list cursor its output gives, if any.
async fn live_call(
    view: &crate::live::LiveView,
    router: &tool_router::ToolRouter,
    ctx: &CallContext,
    n: usize,
    name: &str,
    arguments: String,
) -> anyhow::Result<Option<String>> {
    let call_id = format!("call-{n}");
    let call =
        ToolCall { call_id: call_id.clone(), name: name.to_string(), arguments: arguments.into() };
    let output = router.dispatch_to_output(ctx, call).await?;
    // Calls no event announces (function tools, calls refused before a server) appear by
    // their output.
    let ok = output.is_success();
    let text = if ok { String::new() } else { crate::watch::output_text(&output) };
    view.send(crate::live::ViewItem::Output { call_id, name: Some(name.to_string()), ok, text });
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    Ok(next_cursor(&output))
}

/// The `nextCursor` of a list output, for the script's `{cursor}`.
fn next_cursor(output: &ToolOutput) -> Option<String> {
    let ToolOutput::Function { content, .. } = output else { return None };
    let payload = serde_json::from_str::<Value>(content).ok()?;
    payload["nextCursor"].as_str().map(String::from)
}

/// One call of a change step; with `until`, the events are printed as they come until that
/// one (the change arrives as a notification, after the call; at most 5 s).
async fn change_call(
    running: &setup::Running,
    ctx: &CallContext,
    rx: &mut EventReceiver,
    call_id: String,
    (name, arguments): (&str, &str),
    until: Option<fn(&EventMsg) -> bool>,
) -> anyhow::Result<()> {
    outln!("   call    {name} {arguments}");
    let call =
        ToolCall { call_id, name: name.to_string(), arguments: arguments.to_string().into() };
    let output = running.router.dispatch_to_output(ctx, call).await?;
    if let Some(until) = until {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while let Ok(Some(event)) = tokio::time::timeout_at(deadline, rx.recv()).await {
            outln!("   event   {}", mcp_host::render::describe(&event));
            if until(&event) {
                break;
            }
        }
    }
    print_events(rx);
    print_output(&output);
    Ok(())
}

/// A server adds a tool; the router reads its list again and the specs follow.
async fn tool_list_change(
    running: &setup::Running,
    ctx: &CallContext,
    rx: &mut EventReceiver,
    step: usize,
) -> anyhow::Result<()> {
    outln!("\n── {step}. A server adds a tool: the router reads its list again, the specs follow");
    let changed: fn(&EventMsg) -> bool = |e| matches!(e, EventMsg::McpToolsChanged(_));
    change_call(running, ctx, rx, format!("call-{step}a"), ADD_TOOL, Some(changed)).await?;
    let specs = running.router.specs().await;
    let notes: Vec<&str> =
        specs.iter().map(|s| s.name.as_str()).filter(|n| n.starts_with("mcp__notes__")).collect();
    outln!("   specs   {}", notes.join(" "));
    change_call(running, ctx, rx, format!("call-{step}b"), NEW_TOOL, None).await
}

/// A resource the model read (step 4) changes: the event at once, the notice in the next
/// output.
async fn resource_change(
    running: &setup::Running,
    ctx: &CallContext,
    rx: &mut EventReceiver,
    step: usize,
) -> anyhow::Result<()> {
    outln!(
        "\n── {step}. A resource the model read changes: an event now, a notice in the next output"
    );
    let updated: fn(&EventMsg) -> bool = |e| matches!(e, EventMsg::McpResourceUpdated(_));
    change_call(running, ctx, rx, format!("call-{step}a"), TOUCH, Some(updated)).await?;
    change_call(running, ctx, rx, format!("call-{step}b"), AFTER_TOUCH, None).await
}

fn print_events(rx: &mut EventReceiver) {
    while let Ok(event) = rx.try_recv() {
        outln!("   event   {}", mcp_host::render::describe(&event));
    }
}

fn print_output(output: &ToolOutput) {
    let (label, text) = match output {
        ToolOutput::Function { content, .. } => {
            if let ToolOutput::Function { content_items: Some(items), .. } = output {
                for item in items {
                    if let ContentItem::InputImage { image_url } = item {
                        let shown: String = image_url.chars().take(48).collect();
                        outln!("   image item for the model: {shown}…");
                    }
                }
            }
            let label = if output.is_success() {
                "output (success)"
            } else {
                "output (error, as the model sees it)"
            };
            let text = serde_json::from_str::<Value>(content)
                .ok()
                .filter(Value::is_object)
                .map(|v| one_item_per_line(&v))
                .unwrap_or_else(|| content.to_string());
            (label, text)
        }
        ToolOutput::Mcp { .. } => (
            "output (MCP result)",
            serde_json::to_value(output).map(|v| one_item_per_line(&v)).unwrap_or_default(),
        ),
    };
    outln!("   {label}:");
    for line in text.lines() {
        outln!("     {line}");
    }
}

/// A payload with one top-level key per line and one array item per line: readable, and every
/// item is still the exact JSON the model gets.
fn one_item_per_line(value: &Value) -> String {
    let Value::Object(map) = value else {
        return value.to_string();
    };
    let mut out = String::from("{\n");
    let last = map.len().saturating_sub(1);
    for (i, (key, value)) in map.iter().enumerate() {
        let comma = if i == last { "" } else { "," };
        match value {
            Value::Array(items) if !items.is_empty() => {
                out.push_str(&format!("  {key:?}: [\n"));
                for (j, item) in items.iter().enumerate() {
                    let item_comma = if j + 1 == items.len() { "" } else { "," };
                    out.push_str(&format!("    {item}{item_comma}\n"));
                }
                out.push_str(&format!("  ]{comma}\n"));
            }
            other => out.push_str(&format!("  {key:?}: {other}{comma}\n")),
        }
    }
    out.push('}');
    out
}
