use rmcp::model::{ResourceContents, Skill, SkillFrontmatter, SkillResource, SkillResources};
use router_protocol::EventMsg;
use serde_json::{Value, json};

use crate::ToolRouter;
use crate::invocation::{ToolCall, ToolOutput};
use crate::test_support::{FakeBackend, FakeServer, context, drain};

const SKILL_MD: &str =
    "---\nname: pdf\ndescription: Work with PDFs\n---\n\n# PDF\n\nRead ref/FORMS.md.\n";
const FORMS: &str = "Forms.\n";

/// A server offering skill `pdf` whose SKILL.md answers `served` (the entry lists `SKILL_MD`).
fn server(served: &str, frontmatter: SkillFrontmatter) -> FakeServer {
    let files = vec![
        SkillResource::from_bytes("skill://pdf/SKILL.md", SKILL_MD.as_bytes()),
        SkillResource::from_bytes("skill://pdf/ref/FORMS.md", FORMS.as_bytes()),
    ];
    let skill = Skill::new("skill://pdf/SKILL.md", frontmatter, SkillResources::Files(files));
    FakeServer {
        skills: Some(vec![skill]),
        reads: vec![
            (
                "skill://pdf/SKILL.md".into(),
                vec![ResourceContents::text(served, "skill://pdf/SKILL.md")],
            ),
            (
                "skill://pdf/ref/FORMS.md".into(),
                vec![ResourceContents::text(FORMS, "skill://pdf/ref/FORMS.md")],
            ),
            (
                "skill://pdf/ref/OTHER.md".into(),
                vec![ResourceContents::text("other", "skill://pdf/ref/OTHER.md")],
            ),
        ],
        ..Default::default()
    }
}

fn listed() -> SkillFrontmatter {
    SkillFrontmatter::new("pdf", "Work with PDFs")
}

fn router(servers: Vec<(&str, FakeServer)>) -> ToolRouter {
    ToolRouter::with_mcp(FakeBackend::with(servers))
}

async fn call(router: &ToolRouter, name: &str, arguments: Value) -> (ToolOutput, Vec<EventMsg>) {
    let (ctx, mut rx) = context();
    let call = ToolCall {
        call_id: "k1".into(),
        name: name.into(),
        arguments: arguments.to_string().into(),
    };
    let output = router.dispatch_to_output(&ctx, call).await.expect("not fatal");
    (output, drain(&mut rx))
}

fn text(output: &ToolOutput) -> (bool, String) {
    let ToolOutput::Function { content, success, .. } = output else { panic!("{output:?}") };
    (*success == Some(true), content.to_string())
}

#[tokio::test]
async fn a_loaded_skill_answers_its_body_and_manifest_and_checks_its_files() {
    let router = router(vec![("docs", server(SKILL_MD, listed()))]);
    let names: Vec<String> = router.specs().await.into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"load_mcp_skill".to_string()), "{names:?}");
    let (output, _) = call(&router, "load_mcp_skill", json!({"name": "pdf"})).await;
    let (ok, payload) = text(&output);
    assert!(ok, "{payload}");
    let payload: Value = serde_json::from_str(&payload).expect("json");
    insta::assert_json_snapshot!("load_mcp_skill", payload);
    let read = |uri: &'static str| {
        let router = &router;
        async move { call(router, "read_mcp_resource", json!({"server": "docs", "uri": uri})).await }
    };
    let (forms, _) = read("skill://pdf/ref/FORMS.md").await;
    assert!(text(&forms).0, "{forms:?}");
    let (other, events) = read("skill://pdf/ref/OTHER.md").await;
    let (ok, message) = text(&other);
    assert!(!ok);
    assert_eq!(
        message,
        "resources/read refused: skill://pdf/ref/OTHER.md is not in the manifest of skill \"pdf\" (server \"docs\"), which is loaded; its files are listed by load_mcp_skill, which also fetches a newer manifest"
    );
    assert!(events.iter().any(
        |e| matches!(e, EventMsg::McpSkillRejected(r) if r.uri == "skill://pdf/ref/OTHER.md")
    ));
}

#[tokio::test]
async fn a_skill_md_that_does_not_match_its_entry_is_refused_and_not_shown() {
    let tampered = SKILL_MD.replace("# PDF", "# PDX");
    let extra = format!("{SKILL_MD}extra\n");
    let drifted = listed().with_field("license", "MIT");
    let cases = [
        (server(&tampered, listed()), "skill://pdf/SKILL.md has digest sha256:"),
        (server(&extra, listed()), "skill://pdf/SKILL.md is 79 bytes, the manifest says 73"),
        (
            server(SKILL_MD, drifted),
            "skill://pdf/SKILL.md: its frontmatter differs from the listed entry (license: the file has absent, the entry 5 bytes (sha256 529fc91e3f97…))",
        ),
    ];
    for (server, expected) in cases {
        let router = router(vec![("docs", server)]);
        let (output, events) =
            call(&router, "load_mcp_skill", json!({"server": "docs", "name": "pdf"})).await;
        let (ok, message) = text(&output);
        assert!(!ok);
        assert!(message.starts_with("load_mcp_skill refused skill \"pdf\": "), "{message}");
        assert!(message.contains(expected), "{message}");
        assert!(message.ends_with("; its content was not used"), "{message}");
        assert!(!message.contains("# PDF"), "the body is not shown: {message}");
        assert!(!message.contains("MIT"), "what was refused is not quoted: {message}");
        let rejected = events.iter().find_map(|e| match e {
            EventMsg::McpSkillRejected(r) => Some(r),
            _ => None,
        });
        assert_eq!(rejected.expect("event").uri, "skill://pdf/SKILL.md");
    }
}

#[tokio::test]
async fn the_host_can_refuse_and_names_are_never_shadowed() {
    let mut refused = server(SKILL_MD, listed());
    refused.refuse_skills = Some("skills from this server are off".into());
    let router = router(vec![("a", refused), ("b", server(SKILL_MD, listed()))]);
    let (output, _) = call(&router, "load_mcp_skill", json!({"name": "pdf"})).await;
    assert_eq!(
        text(&output).1,
        "several skills are named \"pdf\" (server \"a\" at skill://pdf/SKILL.md, server \"b\" at skill://pdf/SKILL.md); say which with server, or with server and uri"
    );
    let (output, _) = call(&router, "load_mcp_skill", json!({"server": "a", "name": "pdf"})).await;
    assert_eq!(
        text(&output).1,
        "the host did not allow loading skill \"pdf\" of server \"a\": skills from this server are off"
    );
    let (output, _) =
        call(&router, "load_mcp_skill", json!({"server": "b", "uri": "skill://pdf/SKILL.md"}))
            .await;
    assert!(text(&output).0);
    for (arguments, expected) in [
        (json!({}), "name (or server and uri) must be provided"),
        (
            json!({"name": "pdf", "uri": "skill://pdf/SKILL.md"}),
            "provide either name or uri, not both",
        ),
        (json!({"uri": "skill://pdf/SKILL.md"}), "server must be provided with uri"),
        (
            json!({"server": "b", "name": "nope"}),
            "no skill named \"nope\"; the skills offered are: pdf (b)",
        ),
    ] {
        let (output, _) = call(&router, "load_mcp_skill", arguments).await;
        assert_eq!(text(&output).1, expected);
    }
}

#[tokio::test]
async fn without_a_skills_server_the_tool_is_not_offered() {
    let router = router(vec![("docs", FakeServer::default())]);
    let names: Vec<String> = router.specs().await.into_iter().map(|s| s.name).collect();
    assert!(!names.contains(&"load_mcp_skill".to_string()), "{names:?}");
}

#[tokio::test]
async fn list_mcp_skills_is_offered_with_its_setting_and_lists_every_server() {
    let settings = crate::RouterSettings::default().with(|s| s.tools.list_skills = true);
    let backend =
        FakeBackend::with(vec![("a", server(SKILL_MD, listed())), ("b", FakeServer::default())]);
    let router = ToolRouter::with_mcp_settings(backend, &settings).expect("router");
    let names: Vec<String> = router.specs().await.into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"list_mcp_skills".to_string()), "{names:?}");
    let (output, _) = call(&router, "list_mcp_skills", json!({})).await;
    let (ok, payload) = text(&output);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&payload).expect("json"),
        json!({"skills": [{"server": "a", "name": "pdf", "description": "Work with PDFs", "uri": "skill://pdf/SKILL.md"}]})
    );
    let default = ToolRouter::with_mcp(FakeBackend::with(vec![("a", server(SKILL_MD, listed()))]));
    let names: Vec<String> = default.specs().await.into_iter().map(|s| s.name).collect();
    assert!(!names.contains(&"list_mcp_skills".to_string()), "off by default: {names:?}");
}
