//! Bad input against every tool: random and hostile tool names and arguments through the whole
//! router (templates, completion, data sources on). Nothing may panic, every call gets exactly one
//! answer that is an output or a model-visible error (never `Fatal`), and every begin event is
//! paired with one end event. `PROPTEST_CASES` raises the case count for a longer campaign.

use proptest::prelude::*;

use crate::fuzz::{Case, FAKE_SERVER, Verdict, cases, fake_router as router, run_case};
use crate::router::ToolRouter;

fn strategy() -> BoxedStrategy<Case> {
    cases(FAKE_SERVER, &["echo".to_string(), "fail".to_string()], "memo://1")
}

fn check(
    runtime: &tokio::runtime::Runtime,
    router: &ToolRouter,
    name: String,
    arguments: String,
) -> Result<(), TestCaseError> {
    let verdict = runtime.block_on(run_case(router, Case { name, arguments }));
    prop_assert_eq!(verdict, Verdict::Answered);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn any_call_gets_one_answer_and_never_panics(case in strategy()) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let router = router();
        check(&runtime, &router, case.name, case.arguments)?;
    }
}

/// Interesting inputs kept as regressions.
#[test]
fn corpus() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let router = router();
    let cases: &[(&str, &str)] = &[
        (
            "read_mcp_resource",
            r#"{"server":"figma","template":"memo://{id}{?q}","parameters":{"id":["a",["b"]]}}"#,
        ),
        (
            "read_mcp_resource",
            r#"{"server":"figma","uri":"memo://1","offset":18446744073709551615}"#,
        ),
        ("read_mcp_resource", r#"{"server":"figma","uri":"memo://1","max_bytes":0}"#),
        (
            "read_mcp_resource",
            r#"{"server":"figma","template":"{+x:9999}","parameters":{"x":"é"}}"#,
        ),
        ("read_mcp_resource", r#"{"server":"figma","template":"{","parameters":{}}"#),
        ("list_mcp_resources", r#"{"server":"figma","cursor":"\u0000"}"#),
        (
            "query_mcp_data",
            r#"{"sql":"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r LIMIT 100000) SELECT n FROM r"}"#,
        ),
        ("query_mcp_data", r#"{"sql":"SELECT load_extension('x')"}"#),
        ("query_mcp_data", r#"{"sql":"/* */ -- \n VALUES (1)"}"#),
        (
            "complete_mcp_resource_argument",
            r#"{"server":"figma","template":"memo://{id}{?q}","argument":"id","value":"\u0000"}"#,
        ),
        ("mcp__figma__echo", "null"),
        ("mcp__figma__echo", "[]"),
        ("mcp__figma__echo", r#"{"text":"\ud800"}"#),
        ("\u{0}", ""),
        ("mcp__\u{1F600}__x", "{}"),
    ];
    for (name, arguments) in cases {
        check(&runtime, &router, name.to_string(), arguments.to_string())
            .unwrap_or_else(|e| panic!("{name} {arguments}: {e}"));
    }
}
