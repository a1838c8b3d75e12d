//! `mcp-router-bench`: each workload measured against a baseline in the same run, printed as a
//! table of medians and ratios. `mcp-router-bench [all|e2e|e1|e2|e3|e7|everything|r1|p1|p2|p3|p4|p5|p6|p7|p8|p9|p10|scale|csv|layers|shared|fuzz] (p3 includes P11) [--quick]`.
//! `mcp-router-bench serve …` is the bench MCP server the workloads start as child processes.
//! `mcp-router-bench fuzz [--cases N] [--live-cases M]` runs the dispatch fuzzer's campaign.
//! `mcp-router-bench soak [CALLS]` runs the soak (servers killed at random; see `soak`).

mod alloc;
mod e2e;
mod events;
mod everything;
mod fuzz;
mod lists;
mod options;
mod pin;
mod results;
mod rmcp_cost;
mod row;
mod sandbox;
mod search;
mod server;
mod shared;
mod soak;
mod solo;
mod workloads;

use std::time::Duration;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

use row::Row;

fn main() -> anyhow::Result<()> {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if raw.first().is_some_and(|a| a == "__sandbox-exec") {
        // A sandboxed bench server's start: this binary is the sandbox's helper.
        let error = mcp_connection_manager::sandbox_exec(&raw[1..]);
        anyhow::bail!("__sandbox-exec: {error}");
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        return runtime.block_on(server::serve(server::Options::parse(&args[1..])?));
    }
    if args.first().map(String::as_str) == Some("serve-demo") {
        // The demo MCP server over stdio, for the fuzz campaign's live target.
        // `--skills`: with the bundled demo skills (the soak loads one); other arguments
        // (the soak's marker) are ignored.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let mut options = demo_server::DemoOptions::default();
        if args.iter().any(|a| a == "--skills") {
            let dir = demo_server::bundled_skills_dir()?;
            options.skills = Some(std::sync::Arc::new(demo_server::load_skills(&dir)?));
        }
        runtime.block_on(demo_server::run_stdio(options))?;
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("soak") {
        let calls = args.get(1).map_or(Ok(20_000), |n| n.parse()).map_err(anyhow::Error::msg)?;
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let held = runtime.block_on(async move { tokio::spawn(soak::run(calls)).await? })?;
        runtime.shutdown_timeout(Duration::from_secs(1));
        std::process::exit(if held { 0 } else { 1 });
    }
    if args.first().map(String::as_str) == Some("fuzz") {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let clean = runtime.block_on(fuzz::campaign(&args[1..]))?;
        runtime.shutdown_timeout(Duration::from_secs(1));
        std::process::exit(if clean { 0 } else { 1 });
    }
    if args.first().map(String::as_str) == Some("solo") {
        let side = args.get(1).cloned().unwrap_or_else(|| "agent".to_string());
        let number = |k: usize, default: usize| args.get(k).map_or(Ok(default), |n| n.parse());
        let reads = number(2, 20_000).map_err(anyhow::Error::msg)?;
        let at_once = number(3, 1).map_err(anyhow::Error::msg)?;
        let servers = args.get(4).map(|n| n.parse()).transpose().map_err(anyhow::Error::msg)?;
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        // On a runtime worker, as an agent's calls are (see P1 below).
        runtime.block_on(async move {
            tokio::spawn(async move { solo::run(&side, reads, at_once, servers).await }).await?
        })?;
        runtime.shutdown_timeout(Duration::from_secs(1));
        return Ok(());
    }
    let quick = args.iter().any(|a| a == "--quick");
    let which: Vec<&str> =
        args.iter().map(String::as_str).filter(|a| !a.starts_with("--")).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let rows = runtime.block_on(workloads(&which, quick))?;
    print_table(&rows);
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

/// The workloads `which` names (all when empty or `all`), in an order that keeps them fair.
async fn workloads(which: &[&str], quick: bool) -> anyhow::Result<Vec<Row>> {
    let all = which.is_empty() || which.contains(&"all");
    let wanted = |name: &str| all || which.contains(&name);
    let mut rows = Vec::new();
    if wanted("p1") {
        // On a runtime worker, as an agent runs each call (`exec` does); from the blocking
        // thread every event would wake the consumer across threads (30 µs a call here).
        keep(&mut rows, "p1", tokio::spawn(workloads::p1_dispatch(quick)).await?);
    }
    if wanted("e2e") {
        // On a runtime worker, as P1 (and an agent's calls) are.
        keep(&mut rows, "e2e", tokio::spawn(e2e_rows(quick)).await?);
    } else {
        e2e_parts(&mut rows, &wanted, quick).await?;
    }
    if wanted("everything") || wanted("e2e") {
        keep(&mut rows, "everything", tokio::spawn(everything::rows(quick)).await?);
    }
    if wanted("r1") || wanted("e2e") {
        keep(&mut rows, "r1", tokio::spawn(rmcp_cost::rows(quick)).await?);
    }
    if wanted("e5") || wanted("e2e") {
        keep(&mut rows, "e5", tokio::spawn(results::big_result(quick)).await?);
    }
    if wanted("e6") {
        search::every(quick).await.into_iter().for_each(|r| keep(&mut rows, "e6", r));
    }
    // Process-starting workloads run before the memory-filling ones (P3/P8/P10): without
    // `setpriv` a server starts by fork, whose cost grows with memory (P5's heavy-host row).
    if wanted("p2") {
        keep(&mut rows, "p2", workloads::p2_fan_out(quick).await);
    }
    if wanted("p4") {
        keep(&mut rows, "p4", workloads::p4_throughput(quick).await);
    }
    if wanted("p5") {
        keep(&mut rows, "p5", workloads::p5_startup(quick).await);
    }
    if wanted("sandbox") {
        keep(&mut rows, "sandbox", sandbox::rows(quick).await);
    }
    if wanted("p6") {
        keep(&mut rows, "p6", workloads::p6_events(quick).await.map(|row| vec![row]));
    }
    if wanted("p7") {
        keep(&mut rows, "p7", workloads::p7_updates(quick).await);
    }
    if wanted("p9") {
        keep(&mut rows, "p9", workloads::p9_first_specs(quick).await);
    }
    if wanted("scale") {
        keep(&mut rows, "scale", workloads::scale(quick).await);
    }
    if wanted("p3") {
        keep(&mut rows, "p3", lists::p3_scale(quick).await);
    }
    if wanted("p8") {
        keep(&mut rows, "p8", workloads::p8_event_payload(quick).await.map(|row| vec![row]));
    }
    if wanted("p10") {
        keep(&mut rows, "p10", workloads::p10_million(quick).await);
    }
    named_only(&mut rows, which, quick).await?;
    if wanted("csv") {
        keep(&mut rows, "csv", workloads::csv_import(quick).map(|row| vec![row]));
    }
    Ok(rows)
}

/// The workloads that run only when named — `layers` (P1 layer by layer), `p12` (P12 alone,
/// in alternating rounds), `shared` (S1–S4, the shared router; needs the `mcp-router` binary)
/// — and P13 (`p13`, also in a full run).
async fn named_only(rows: &mut Vec<Row>, which: &[&str], quick: bool) -> anyhow::Result<()> {
    if which.contains(&"layers") {
        keep(rows, "layers", workloads::p1_layers().await);
    }
    if which.contains(&"p12") {
        keep(rows, "p12", lists::p12_payload(quick).await);
    }
    if which.contains(&"shared") {
        keep(rows, "shared", shared::rows(quick).await);
    }
    if which.is_empty() || which.contains(&"all") || which.contains(&"p13") {
        // On a runtime worker, as an agent's calls are.
        keep(rows, "p13", tokio::spawn(events::rows(quick)).await?);
    }
    Ok(())
}

/// The end-to-end rows asked for one by one (`e1`, `e7`, `e2`, `e8`, `e3`), each on a runtime
/// worker.
async fn e2e_parts(
    rows: &mut Vec<Row>,
    wanted: &impl Fn(&str) -> bool,
    quick: bool,
) -> anyhow::Result<()> {
    if wanted("e1") {
        keep(rows, "e1", tokio::spawn(e2e::rows_e1(quick)).await?);
    }
    if wanted("e7") {
        keep(rows, "e7", tokio::spawn(results::rows_e7(quick)).await?);
    }
    if wanted("e2") {
        keep(rows, "e2", tokio::spawn(e2e::rows_e2(quick)).await?);
    }
    if wanted("e8") {
        keep(rows, "e8", tokio::spawn(results::rows_e8(quick)).await?);
    }
    if wanted("e3") {
        keep(rows, "e3", tokio::spawn(everything::rows_e3(quick)).await?);
    }
    Ok(())
}

/// A workload's rows, or one row saying it failed and why: one workload that cannot run (a
/// missing tool, a server that changed) does not take the others' rows with it.
fn keep(rows: &mut Vec<Row>, mode: &str, result: anyhow::Result<Vec<Row>>) {
    match result {
        Ok(more) => rows.extend(more),
        Err(error) => rows.push(Row {
            name: "a workload failed",
            baseline: "—".to_string(),
            router: format!("{mode}: {error:#}"),
            ratio: f64::NAN,
            target: "runs",
            met: Some(false),
        }),
    }
}

fn print_table(rows: &[Row]) {
    println!("| workload | baseline (median) | router (median) | ratio | target | met |");
    println!("|---|---|---|---|---|---|");
    for row in rows {
        let met = match row.met {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "—",
        };
        // A row that did not run has no ratio.
        let ratio =
            if row.ratio.is_nan() { "—".to_string() } else { format!("{:.3}", row.ratio) };
        println!(
            "| {} | {} | {} | {ratio} | {} | {met} |",
            row.name, row.baseline, row.router, row.target
        );
    }
}

/// Every end-to-end row.
async fn e2e_rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    let mut out = e2e::rows_e1(quick).await?;
    out.extend(results::rows_e7(quick).await?);
    out.extend(e2e::rows_e2(quick).await?);
    out.extend(results::rows_e8(quick).await?);
    out.extend(everything::rows_e3(quick).await?);
    Ok(out)
}
