//! Property tests: matching the expansion of generated values gives those values back.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use uri_template::UriTemplate;

/// Operators and the characters their generated values may use. `+` and `#` pass reserved
/// characters through, so their values avoid the separator literal `[` and `%` (a lone `%`
/// comes back as the `%25` the expansion wrote: see the crate docs).
fn op_and_value() -> impl Strategy<Value = (&'static str, String)> {
    let plain = "[a-zA-Z0-9 ._~%/é,;=!:@-]{1,12}";
    let reserved = "[a-zA-Z0-9 ._~/é,;=!:@?&$()*+-]{1,12}";
    prop_oneof![
        plain.prop_map(|v| ("", v)),
        reserved.prop_map(|v| ("+", v)),
        reserved.prop_map(|v| ("#", v)),
        plain.prop_map(|v| (".", v)),
        plain.prop_map(|v| ("/", v)),
        plain.prop_map(|v| (";", v)),
        plain.prop_map(|v| ("?", v)),
        plain.prop_map(|v| ("&", v)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn one_variable_per_expression_round_trips(parts in proptest::collection::vec(op_and_value(), 1..5)) {
        // Fragment expansion may appear once and last (a URI has one fragment); literals `[n]`
        // keep expressions apart.
        let mut parts = parts;
        if let Some(pos) = parts.iter().position(|(op, _)| *op == "#") {
            let fragment = parts.remove(pos);
            parts.retain(|(op, _)| *op != "#");
            parts.push(fragment);
        }
        let mut template = String::from("demo://x");
        let mut values = Map::new();
        for (i, (op, value)) in parts.iter().enumerate() {
            template.push_str(&format!("[{i}]{{{op}v{i}}}"));
            values.insert(format!("v{i}"), json!(value));
        }
        let parsed = UriTemplate::parse(&template).expect("valid template");
        let uri = parsed.expand(&values).expect("expands");
        let found = parsed.match_uri(&uri);
        prop_assert_eq!(found, Some(values), "template {} uri {}", template, uri);
    }

    #[test]
    fn exploded_path_lists_round_trip(items in proptest::collection::vec("[a-zA-Z0-9 é%,._-]{1,8}", 1..6), tail in "[a-z]{1,6}") {
        let template = UriTemplate::parse("file://{host}{/segments*}{?q}").expect("valid");
        let values: Map<String, Value> = [("host".to_string(), json!(tail)), ("segments".to_string(), json!(items))].into_iter().collect();
        let uri = template.expand(&values).expect("expands");
        prop_assert_eq!(template.match_uri(&uri), Some(values));
    }

    #[test]
    fn query_variables_round_trip_in_any_order(a in "[a-zA-Z0-9 é/?&=]{0,8}", b in "[a-zA-Z0-9 é]{1,8}") {
        let template = UriTemplate::parse("search://items{?a,b}").expect("valid");
        let values: Map<String, Value> = [("a".to_string(), json!(a)), ("b".to_string(), json!(b))].into_iter().collect();
        let uri = template.expand(&values).expect("expands");
        prop_assert_eq!(template.match_uri(&uri), Some(values.clone()));
        // The same variables in the other order also match.
        let swapped = uri.split_once('?').map(|(base, q)| {
            let mut pairs: Vec<&str> = q.split('&').collect();
            pairs.reverse();
            format!("{base}?{}", pairs.join("&"))
        }).unwrap_or_default();
        prop_assert_eq!(template.match_uri(&swapped), Some(values));
    }

    #[test]
    fn matching_never_panics(template in "[a-z:/{}+#.;?&,*0-9]{0,24}", uri in "\\PC{0,40}") {
        if let Ok(t) = UriTemplate::parse(&template) {
            let _ = t.match_uri(&uri);
        }
    }
}

#[test]
fn documented_examples() {
    let t = UriTemplate::parse("org://{filename}/headline/{+path}").expect("valid");
    assert_eq!(t.variables(), ["filename", "path"]);
    let vars = t.match_uri("org://projects.org/headline/Tasks/Urgent").expect("match");
    assert_eq!(Value::Object(vars), json!({"filename": "projects.org", "path": "Tasks/Urgent"}));
    assert_eq!(t.match_uri("other://projects.org/headline/x"), None);

    let t = UriTemplate::parse("demo://notes/{id}{?lines}").expect("valid");
    assert_eq!(t.optional_variables(), ["lines"]);
    assert_eq!(Value::Object(t.match_uri("demo://notes/42").expect("match")), json!({"id": "42"}));
    assert_eq!(
        Value::Object(t.match_uri("demo://notes/42?lines=1-3").expect("match")),
        json!({"id": "42", "lines": "1-3"})
    );

    // Leftmost-longest where the template is ambiguous.
    let t = UriTemplate::parse("x://{a}{b}").expect("valid");
    assert_eq!(Value::Object(t.match_uri("x://ab").expect("match")), json!({"a": "ab"}));

    let err = UriTemplate::parse("demo://{bad name}").expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "invalid URI template \"demo://{bad name}\" at byte 7: invalid variable name \"bad name\""
    );
    let err = UriTemplate::parse("demo://{id").expect_err("invalid");
    assert_eq!(err.to_string(), "invalid URI template \"demo://{id\" at byte 7: unclosed `{`");

    let too_deep = Map::from_iter([("id".to_string(), json!([["nested"]]))]);
    let t = UriTemplate::parse("demo://{id}").expect("valid");
    assert_eq!(
        t.expand(&too_deep).expect_err("nested").to_string(),
        "variable `id`: list items must be strings, numbers or booleans"
    );
}

#[test]
fn raw_non_ascii_uris_match() {
    let t = UriTemplate::parse("file:///{name}/{+rest}").expect("valid");
    let vars = t.match_uri("file:///café/ünï/cödé").expect("IRI matches");
    assert_eq!(Value::Object(vars), json!({"name": "café", "rest": "ünï/cödé"}));
}
