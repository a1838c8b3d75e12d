//! The public RFC 6570 vectors (uritemplate-test, Apache-2.0, see tests/vectors/LICENSE):
//! every expansion case, every negative case, and matching checked as a round trip — the
//! variables `match_uri` finds for an expansion expand to that same URI.

use serde_json::{Map, Value};
use uri_template::UriTemplate;

struct Outcome {
    passed: usize,
    failed: Vec<String>,
    round_trips: usize,
}

fn run(file: &str) -> Outcome {
    let path = format!("{}/tests/vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    let suites: Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    let mut outcome = Outcome { passed: 0, failed: Vec::new(), round_trips: 0 };
    for (suite, body) in &suites {
        let variables = body["variables"].as_object().cloned().unwrap_or_default();
        for case in body["testcases"].as_array().expect("testcases") {
            let template = case[0].as_str().expect("template");
            let expected = &case[1];
            let result = UriTemplate::parse(template)
                .map_err(|e| e.to_string())
                .and_then(|t| t.expand(&variables).map(|s| (t, s)).map_err(|e| e.to_string()));
            let ok = match (expected, &result) {
                (Value::Bool(false), Err(_)) => true,
                (Value::String(want), Ok((_, got))) => want == got,
                (Value::Array(options), Ok((_, got))) => {
                    options.iter().any(|o| o.as_str() == Some(got))
                }
                _ => false,
            };
            if !ok {
                outcome.failed.push(format!(
                    "{suite}: {template} expected {expected} got {result:?}",
                    result = result.as_ref().map(|r| &r.1)
                ));
                continue;
            }
            outcome.passed += 1;
            if let Ok((t, uri)) = &result {
                let found = t.match_uri(uri).unwrap_or_else(|| {
                    panic!("{suite}: {template} does not match its expansion {uri}")
                });
                let again = t.expand(&found).expect("re-expand");
                // Object key order is not kept by every expansion; allow any listed option.
                let acceptable = match expected {
                    Value::Array(options) => options.iter().any(|o| o.as_str() == Some(&again)),
                    _ => &again == uri,
                };
                assert!(
                    acceptable,
                    "{suite}: {template}: {uri} matched {found:?}, which expands to {again}"
                );
                outcome.round_trips += 1;
            }
        }
    }
    println!(
        "{file}: {} passed, {} failed, {} match round trips",
        outcome.passed,
        outcome.failed.len(),
        outcome.round_trips
    );
    outcome
}

fn check(file: &str) {
    let outcome = run(file);
    assert!(outcome.failed.is_empty(), "{file} failures:\n{}", outcome.failed.join("\n"));
}

#[test]
fn spec_examples() {
    check("spec-examples.json");
}

#[test]
fn spec_examples_by_section() {
    check("spec-examples-by-section.json");
}

#[test]
fn extended_tests() {
    check("extended-tests.json");
}

#[test]
fn negative_tests() {
    check("negative-tests.json");
}
