//! Skills from MCP servers (SEP-2640) through `exec` and the command line, as a new user meets
//! them: demo servers serving skill folders (rmcp's `SkillCatalog`) as child processes.

use std::path::Path;

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::support::{DEMO, exec_command, router_command, write_config};

const SKILL_MD: &str = "---\nname: release-notes\ndescription: Write release notes.\n---\n\n# Release notes\n\nFill in templates/TEMPLATE.md.\n";

/// A skills folder with `release-notes` (SKILL.md, templates/TEMPLATE.md, and NOTES.md, which a
/// test adds after listing).
fn skills_folder(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("skills");
    std::fs::create_dir_all(root.join("release-notes/templates")).expect("mkdir");
    std::fs::write(root.join("release-notes/SKILL.md"), SKILL_MD).expect("write");
    std::fs::write(root.join("release-notes/templates/TEMPLATE.md"), "# {version}\n")
        .expect("write");
    root
}

/// `a` serves `folder`, `b` the bundled demo skills; both log the methods they handle.
fn config(dir: &tempfile::TempDir, folder: &Path) -> std::path::PathBuf {
    let log = |name: &str| dir.path().join(format!("{name}.log"));
    let text = format!(
        "[mcp_servers.a]\ncommand = {DEMO:?}\nargs = [\"--name\", \"a\", \"--skills\", {:?}, \"--request-log\", {:?}]\n[mcp_servers.b]\ncommand = {DEMO:?}\nargs = [\"--name\", \"b\", \"--demo-skills\", \"--request-log\", {:?}]\n",
        folder.display().to_string(),
        log("a").display().to_string(),
        log("b").display().to_string(),
    );
    write_config(dir, "skills.toml", &text)
}

fn methods(dir: &tempfile::TempDir, server: &str) -> Vec<String> {
    let text =
        std::fs::read_to_string(dir.path().join(format!("{server}.log"))).unwrap_or_default();
    text.lines().map(str::to_string).collect()
}

fn call(exec: &mut ExecSession, id: &str, name: &str, arguments: Value) -> Value {
    exec.send(&json!({"call_id": id, "name": name, "arguments": arguments}));
    exec.output(id)
}

fn content(output: &Value) -> String {
    output["content"].as_str().expect("function content").to_string()
}

#[test]
fn skills_are_listed_without_fetching_then_loaded_and_their_files_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = skills_folder(dir.path());
    let config = config(&dir, &folder);

    // The command line lists both servers' skills, one line each.
    let mut command = router_command();
    let listed = command.args(["skills", "--config"]).arg(&config).output().expect("skills");
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "a\trelease-notes\tWrite release notes.",
            "b\tcsv-report\tSummarize a CSV resource as a short report with totals per group.",
            "b\trelease-notes\tWrite release notes for a version from a list of changes, in the project's house style.",
        ]
    );

    let mut exec = ExecSession::spawn(exec_command(&config));
    exec.send(&json!({"type": "list_skills"}));
    let skills = exec.line("the skills answer", |v| v["type"] == "skills");
    assert_eq!(skills["skills"].as_array().expect("skills").len(), 3, "{skills}");
    for server in ["a", "b"] {
        let methods = methods(&dir, server);
        assert!(methods.contains(&"skills/list".to_string()), "{server}: {methods:?}");
        assert!(!methods.contains(&"resources/read".to_string()), "nothing fetched: {methods:?}");
    }

    // Two servers offer `release-notes`: by name alone it is ambiguous, never shadowed.
    let ambiguous = call(&mut exec, "l0", "load_mcp_skill", json!({"name": "release-notes"}));
    let text = content(&ambiguous);
    assert!(text.contains("several skills are named \"release-notes\""), "{text}");
    assert!(text.contains("server \"a\"") && text.contains("server \"b\""), "{text}");

    // Each loads by its server.
    let loaded =
        call(&mut exec, "l1", "load_mcp_skill", json!({"server": "a", "name": "release-notes"}));
    let payload: Value = serde_json::from_str(&content(&loaded)).expect("payload");
    assert_eq!(payload["body"], "\n# Release notes\n\nFill in templates/TEMPLATE.md.\n");
    assert_eq!(
        payload["files"],
        json!([{"path": "templates/TEMPLATE.md", "uri": "skill://release-notes/templates/TEMPLATE.md", "size": 12, "mime_type": "text/markdown"}])
    );
    let other =
        call(&mut exec, "l2", "load_mcp_skill", json!({"server": "b", "name": "release-notes"}));
    assert_eq!(other["success"], true, "{other}");

    // A listed file reads; a file of the folder that the manifest does not list is refused
    // without asking the server.
    let read = |exec: &mut ExecSession, id: &str, uri: &str| {
        call(exec, id, "read_mcp_resource", json!({"server": "a", "uri": uri}))
    };
    let template = read(&mut exec, "r1", "skill://release-notes/templates/TEMPLATE.md");
    assert!(content(&template).contains("# {version}"), "{template}");
    std::fs::write(folder.join("release-notes/NOTES.md"), "added later\n").expect("write");
    let reads_before = methods(&dir, "a").iter().filter(|m| *m == "resources/read").count();
    let unlisted = read(&mut exec, "r2", "skill://release-notes/NOTES.md");
    let text = content(&unlisted);
    assert!(
        text.contains("resources/read refused: skill://release-notes/NOTES.md is not in the manifest of skill \"release-notes\" (server \"a\")"),
        "{text}"
    );
    let reads_after = methods(&dir, "a").iter().filter(|m| *m == "resources/read").count();
    assert_eq!(reads_after, reads_before, "the refused read never reached the server");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let rejected = lines.iter().find(|l| l["type"] == "mcp_skill_rejected").expect("event");
    assert_eq!(rejected["uri"], "skill://release-notes/NOTES.md");
    assert_eq!(rejected["skill"], "release-notes");
}

#[test]
fn a_file_changed_after_listing_is_refused_until_the_server_says_so_and_the_skill_is_loaded_again()
{
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = skills_folder(dir.path());
    let config = config(&dir, &folder);
    let mut exec = ExecSession::spawn(exec_command(&config));
    let load = json!({"server": "a", "name": "release-notes"});
    let loaded = call(&mut exec, "l1", "load_mcp_skill", load.clone());
    assert_eq!(loaded["success"], true, "{loaded}");

    let file = "skill://release-notes/templates/TEMPLATE.md";
    std::fs::write(folder.join("release-notes/templates/TEMPLATE.md"), "# {version} (changed)\n")
        .expect("write");
    let changed = call(&mut exec, "r1", "read_mcp_resource", json!({"server": "a", "uri": file}));
    let text = content(&changed);
    assert!(text.starts_with("resources/read refused: skill://release-notes/templates/TEMPLATE.md is 22 bytes, the manifest says 12"), "{text}");
    assert!(text.contains("its content was not used"), "{text}");
    assert!(!text.contains("(changed)"), "the content is not shown: {text}");
    let rejected = exec.line("the rejection", |v| v["type"] == "mcp_skill_rejected");
    assert_eq!(rejected["uri"], file);

    // The server announced the change; a new load takes the new manifest and the read works.
    exec.line("the list change", |v| v["type"] == "mcp_resources_changed" && v["server"] == "a");
    let again = call(&mut exec, "l2", "load_mcp_skill", load);
    assert_eq!(again["success"], true, "{again}");
    let read = call(&mut exec, "r2", "read_mcp_resource", json!({"server": "a", "uri": file}));
    assert!(content(&read).contains("(changed)"), "{read}");
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

/// A server we did not write: the TypeScript SDK's skills extension, beside the demo server,
/// both offering a skill of the same name.
#[test]
fn a_typescript_sdk_skills_server_and_ours_are_listed_and_each_loaded_by_its_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = skills_folder(dir.path());
    let script = crate::interop::harness_dir().join("ts/skills_server.mjs");
    let text = format!(
        "[mcp_servers.ours]\ncommand = {DEMO:?}\nargs = [\"--skills\", {folder:?}]\n[mcp_servers.ts]\ncommand = {:?}\nargs = [{:?}, {folder:?}]\n",
        crate::interop::node(),
        script.display().to_string(),
        folder = folder.display().to_string(),
    );
    let config = write_config(&dir, "ts.toml", &text);
    let mut command = router_command();
    let listed = command.args(["skills", "--config"]).arg(&config).output().expect("skills");
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["ours\trelease-notes\tWrite release notes.", "ts\trelease-notes\tWrite release notes."]
    );
    let mut exec = ExecSession::spawn(exec_command(&config));
    for server in ["ts", "ours"] {
        let id = format!("l-{server}");
        let loaded = call(
            &mut exec,
            &id,
            "load_mcp_skill",
            json!({"server": server, "name": "release-notes"}),
        );
        let payload: Value = serde_json::from_str(&content(&loaded)).expect("loaded");
        assert_eq!(payload["server"], server);
        assert_eq!(payload["body"], "\n# Release notes\n\nFill in templates/TEMPLATE.md.\n");
        let file = payload["files"][0]["uri"].as_str().expect("a file").to_string();
        let id = format!("r-{server}");
        let read =
            call(&mut exec, &id, "read_mcp_resource", json!({"server": server, "uri": file}));
        assert!(content(&read).contains("# {version}"), "{server}: {read}");
    }
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

/// Tampered skills from a server spoken by hand (each fault exact): the entry that breaks the
/// spec is left out and named; the others are refused on load or on read, the reason named.
#[test]
fn tampered_skills_are_refused_with_what_did_not_match() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = crate::interop::python_script("tampered_skills.py");
    let text = format!(
        "[mcp_servers.bad]\ncommand = {:?}\nargs = [{script:?}]\nprotocol = \"2025-11-25\"\n",
        crate::interop::python()
    );
    let config = write_config(&dir, "bad.toml", &text);
    let mut command = router_command();
    let listed = command.args(["skills", "--config"]).arg(&config).output().expect("skills");
    let (stdout, stderr) =
        (String::from_utf8_lossy(&listed.stdout), String::from_utf8_lossy(&listed.stderr));
    assert_eq!(listed.status.code(), Some(1), "a left-out entry is an error: {stderr}");
    let names: Vec<&str> = stdout.lines().filter_map(|l| l.split('\t').nth(1)).collect();
    assert_eq!(names, ["wrong-digest", "extra-bytes", "drift", "missing-file"]);
    assert!(
        stderr.contains("bad: skill left out: skill://other-path/SKILL.md:"),
        "the name-mismatch entry is named: {stderr}"
    );

    let mut exec = ExecSession::spawn(exec_command(&config));
    let load = |exec: &mut ExecSession, name: &str| {
        content(&call(
            exec,
            &format!("l-{name}"),
            "load_mcp_skill",
            json!({"server": "bad", "name": name}),
        ))
    };
    for (name, reason) in [
        ("wrong-digest", "skill://wrong-digest/SKILL.md has digest sha256:"),
        ("extra-bytes", "skill://extra-bytes/SKILL.md is 100 bytes, the manifest says 94"),
        (
            "drift",
            "its frontmatter differs from the listed entry (description: the file has 19 bytes (sha256 c2540ca60268…), the entry 17 bytes (sha256 eb7c5d784677…))",
        ),
    ] {
        let text = load(&mut exec, name);
        assert!(text.starts_with(&format!("load_mcp_skill refused skill \"{name}\": ")), "{text}");
        assert!(text.contains(reason), "{name}: {text}");
        assert!(!text.contains("Body of"), "{name}: the content is not shown: {text}");
        assert!(!text.contains("tampered"), "{name}: what was refused is not quoted: {text}");
    }
    let loaded: Value = serde_json::from_str(&load(&mut exec, "missing-file")).expect("loaded");
    assert_eq!(loaded["files"][0]["path"], "refs/A.md");
    let read = |exec: &mut ExecSession, uri: &str| {
        content(&call(exec, uri, "read_mcp_resource", json!({"server": "bad", "uri": uri})))
    };
    assert!(read(&mut exec, "skill://missing-file/refs/A.md").contains("listed"));
    let refused = read(&mut exec, "skill://missing-file/refs/B.md");
    assert!(refused.contains("is not in the manifest of skill \"missing-file\""), "{refused}");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let rejected: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "mcp_skill_rejected")
        .filter_map(|l| l["skill"].as_str())
        .collect();
    assert_eq!(rejected, ["wrong-digest", "extra-bytes", "drift", "missing-file"]);
}
