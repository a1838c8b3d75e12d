use std::time::Duration;

use router_protocol::{LedgerRun, ToolOutput};

use super::*;

#[test]
fn percentiles_are_values_measured_by_nearest_rank() {
    let mut durations: Vec<u64> = (1..=100).map(|ms| ms * 1000).collect();
    assert_eq!(percentiles(&mut durations), (50.0, 95.0, 100.0));
    assert_eq!(percentiles(&mut [7000]), (7.0, 7.0, 7.0));
    assert_eq!(percentiles(&mut []), (0.0, 0.0, 0.0));
    // Three calls: the median is the second, the 95th the slowest.
    assert_eq!(percentiles(&mut [3000, 1000, 2000]), (2.0, 3.0, 3.0));
}

#[test]
fn a_call_is_counted_with_its_bytes_tokens_and_kind_of_failure() {
    let ledger = Ledger::new();
    let ok = ToolOutput::Function {
        content: "hello world".to_string().into(),
        content_items: None,
        success: Some(true),
    };
    ledger.call("docs", "read_mcp_resource", Duration::from_millis(4), &ok, 120);
    let refused =
        ToolOutput::failure("tool `add` of MCP server 'calc' is refused by configuration");
    ledger.call("calc", "add", Duration::from_millis(2), &refused, 0);
    let timeout = ToolOutput::failure("tool call error: request timed out after 1s");
    ledger.call("calc", "add", Duration::from_millis(1000), &timeout, 0);
    let report = ledger.report();
    assert_eq!(report.tokenizer, tokens::TOKENIZER);
    let docs = &report.tools[1];
    assert_eq!((docs.server.as_str(), docs.calls, docs.bytes_to_model), ("docs", 1, 11));
    assert_eq!(docs.tokens_to_model, tokens::count("hello world"));
    assert_eq!((docs.bytes_from_server, docs.p50_ms), (120, 4.0));
    let calc = &report.tools[0];
    assert_eq!(calc.calls, 2);
    assert_eq!(calc.errors.get("refused"), Some(&1), "{calc:?}");
    assert_eq!(calc.errors.get("timeout"), Some(&1), "{calc:?}");
    assert_eq!((calc.p50_ms, calc.p95_ms, calc.max_ms), (2.0, 1000.0, 1000.0));
    let servers: Vec<(&str, u64, u64)> =
        report.servers.iter().map(|s| (s.server.as_str(), s.calls, s.errors)).collect();
    assert_eq!(servers, [("calc", 2, 2), ("docs", 1, 0)]);
}

#[cfg(feature = "tokens")]
#[test]
fn tokens_are_o200k_counts() {
    // o200k_base: "hello world" is two tokens; a word it does not know is several.
    assert_eq!(tokens::count("hello world"), 2);
    assert!(tokens::count("antidisestablishmentarianism") > 2);
    assert_eq!(tokens::TOKENIZER, "o200k_base");
}

#[test]
fn a_tool_list_replaces_the_last_and_shares_are_of_loaded_bytes() {
    let ledger = Ledger::new();
    let spec = |server: &str, loaded: bool, text: &str| SpecSeen {
        server: server.into(),
        loaded,
        text: text.into(),
    };
    ledger.specs(vec![spec("a", true, "xxxx"), spec("b", true, "xxxxxxxxxxxx")]);
    ledger.specs(vec![
        spec("a", true, "xxxxxx"),
        spec("b", true, "xx"),
        spec("b", false, "xxxxxxxx"),
    ]);
    let report = ledger.report();
    let rows: Vec<(&str, u64, u64, u64, f64)> = report
        .servers
        .iter()
        .map(|s| {
            (
                s.server.as_str(),
                s.spec_bytes_loaded,
                s.tools_deferred,
                s.spec_bytes_deferred,
                s.context_share,
            )
        })
        .collect();
    assert_eq!(rows, [("a", 6, 0, 0, 0.75), ("b", 2, 1, 8, 0.25)]);
    // The same list again (a host asks every turn) changes nothing.
    ledger.specs(vec![
        spec("a", true, "xxxxxx"),
        spec("b", true, "xx"),
        spec("b", false, "xxxxxxxx"),
    ]);
    assert_eq!(ledger.report().servers, report.servers);
    assert_eq!(report.servers[1].spec_tokens_deferred, tokens::count("xxxxxxxx"));
}

#[test]
fn runs_add_up_and_percentiles_span_them() {
    let run = |at: u64, durations: Vec<u64>| LedgerRun {
        at,
        tokenizer: "o200k_base".into(),
        servers: vec![],
        tools: vec![router_protocol::ToolCalls {
            server: "s".into(),
            tool: "t".into(),
            calls: durations.len() as u64,
            durations_us: durations,
            bytes_to_model: 10,
            ..Default::default()
        }],
    };
    let runs = [run(100, vec![1000, 2000]), run(50, vec![3000, 4000])];
    let report = report(&runs, &LedgerSettings::default());
    assert_eq!((report.runs, report.since), (2, Some(50)));
    let tool = &report.tools[0];
    assert_eq!((tool.calls, tool.bytes_to_model), (4, 20));
    assert_eq!((tool.p50_ms, tool.max_ms), (2.0, 4.0));
}

#[test]
fn the_file_is_bounded_rotated_and_a_corrupt_one_set_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = Ledger::new();
    let output = ToolOutput::failure("x");
    run.call("s", "t", Duration::from_millis(1), &output, 0);
    let run = run.run();
    let line = serde_json::to_string(&run).expect("json").len() as u64 + 1;
    let fit = store::MAX_BYTES / line;
    for _ in 0..fit + 1 {
        store::append(dir.path(), &run).expect("append");
    }
    let size = |name: &str| std::fs::metadata(dir.path().join(name)).map(|m| m.len()).unwrap_or(0);
    assert!(size(store::FILE) <= store::MAX_BYTES && size(store::OLDER) <= store::MAX_BYTES);
    assert_eq!(size(store::FILE), line, "rotated: the newest run starts the file");
    let loaded = store::load(dir.path(), None);
    assert_eq!((loaded.runs.len() as u64, loaded.warnings.len()), (fit + 1, 0));
    assert!(store::load(dir.path(), Some(run.at + 1)).runs.is_empty(), "--since");
    // A torn line: the file is set aside, its readable runs kept, and nothing fails.
    let mut text = std::fs::read_to_string(dir.path().join(store::FILE)).expect("read");
    text.push_str("{\"at\": 1, \"tok\n");
    std::fs::write(dir.path().join(store::FILE), text).expect("write");
    let loaded = store::load(dir.path(), None);
    assert_eq!(loaded.runs.len() as u64, fit + 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("could not be read (line 2"), "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("set aside as"), "{:?}", loaded.warnings);
    let again = store::load(dir.path(), None);
    assert_eq!((again.runs.len() as u64, again.warnings.len()), (fit + 1, 0), "written back");
    let aside = std::fs::read_dir(dir.path()).expect("dir").filter_map(Result::ok);
    assert!(
        aside
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .any(|n| n.contains(".corrupt-"))
    );
}

#[test]
fn a_server_whose_specs_take_more_than_their_share_is_named_with_what_to_do() {
    let settings =
        LedgerSettings { context_tokens: 1000, spec_share_warning: 0.01, ..Default::default() };
    let ledger = Ledger::with_settings(&settings);
    let spec = |server: &str, text: String| SpecSeen { server: server.into(), loaded: true, text };
    let big = "a tool that does many things ".repeat(10);
    ledger.specs(vec![
        spec("big", big.clone()),
        spec("small", "x".into()),
        spec(ROUTER, big.clone()),
    ]);
    let report = ledger.report();
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    let tokens = tokens::count(&big);
    assert!(tokens > 10, "{tokens}");
    assert_eq!(
        report.warnings[0],
        format!(
            "MCP server 'big': its 1 tool specs take {tokens} tokens, {:.1}% of a 1000-token context (more than the 1.0% of spec_share_warning); turn tool search on (tool_search = \"on\") or keep the tools you use (enabled_tools / disabled_tools)",
            tokens as f64 / 10.0
        )
    );
}

#[test]
fn a_turn_is_the_calls_since_the_last_turn_ended() {
    let ledger = Ledger::new();
    let output = |text: &str| ToolOutput::Function {
        content: text.to_string().into(),
        content_items: None,
        success: Some(true),
    };
    ledger.call("s", "a", Duration::from_millis(10), &output("one"), 5);
    ledger.call("s", "b", Duration::from_millis(20), &ToolOutput::failure("request timed out"), 0);
    let first = ledger.turn();
    assert_eq!(first.tools.len(), 2);
    ledger.call("s", "a", Duration::from_millis(30), &output("three"), 7);
    let second = ledger.turn();
    assert_eq!(second.tools.len(), 1, "b was not called this turn: {second:?}");
    let a = &second.tools[0];
    assert_eq!((a.calls, a.bytes_to_model, a.bytes_from_server, a.p50_ms), (1, 5, 7, 30.0));
    assert_eq!(a.tokens_to_model, tokens::count("three"));
    assert!(ledger.turn().tools.is_empty(), "nothing since");
    assert_eq!(ledger.report().tools[0].calls, 2, "the run still has every call");
}

#[test]
fn a_text_past_the_exact_bound_is_scaled_from_its_beginning() {
    let unit = "the quick brown fox jumps over the lazy dog. ";
    let exact = unit.repeat(tokens::EXACT_BYTES / unit.len());
    let long = unit.repeat(4 * tokens::EXACT_BYTES / unit.len());
    let (short, scaled) = (tokens::count(&exact), tokens::count(&long));
    assert!(exact.len() <= tokens::EXACT_BYTES && long.len() > tokens::EXACT_BYTES);
    // A text of one repeated sentence scales to about four times its first part's count.
    let expected = short * long.len() as u64 / exact.len() as u64;
    assert!(scaled.abs_diff(expected) <= expected / 100 + 2, "{scaled} against {expected}");
}
