//! Sandboxed stdio servers as a user meets them: a probe server (`sandbox_probe.py`) tries to
//! read credentials and the router's state, write outside its work, reach the network and do
//! the same through a child, under the default profile, `offline` and `off`, with no
//! `[mcp_router]` section. Its home directory is a made-up one outside the router's temp
//! (where everything may be written), so what is protected there is really protected.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::interop::{python, python_script};
use crate::support::{exec_command, write_config};

/// This kernel's Landlock ABI (0: none). Without it the filesystem cannot be restricted: the
/// tests then check that the tier says so, and what needs it is not asserted.
fn landlock_abi() -> i64 {
    // SAFETY: a query: no ruleset, size 0, the version flag.
    #[allow(unsafe_code)]
    let abi = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32)
    };
    abi.max(0)
}

/// A made-up home with a key, a token store and pins, a workspace and a temp directory
/// (`$TMPDIR`) beside it. (Whatever lies in temp may be written by every server, so the home
/// must not: the router and its servers get this `$TMPDIR`, wherever the checkout is.)
struct Machine {
    _root: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    temp: PathBuf,
}

impl Machine {
    fn new() -> Self {
        // Under the system's temp on purpose: the router's `$TMPDIR` is made another, so
        // `/tmp` is not temp to it, as in a checkout anywhere.
        let root = tempfile::Builder::new().prefix("sandbox-").tempdir().expect("a directory");
        let home = root.path().join("home");
        let work = root.path().join("work");
        for (path, text) in [
            (".ssh/id_ed25519", "PRIVATE KEY CANARY"),
            (".config/mcp-router/credentials.json", "{\"token\": \"TOKEN CANARY\"}"),
            (".cache/mcp-router/pins/calc.json", "{\"format\": 1}"),
            ("notes.txt", "readable notes"),
        ] {
            let path = home.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
            std::fs::write(path, text).expect("a file");
        }
        let temp = root.path().join("tmp");
        std::fs::create_dir_all(&work).expect("work");
        std::fs::create_dir_all(&temp).expect("temp");
        Self { _root: root, home, work, temp }
    }

    /// An exec session over `config` with this home, run in the workspace.
    fn exec(&self, config: &Path) -> ExecSession {
        ExecSession::spawn(self.command(config))
    }

    /// The exec command of [`Machine::exec`].
    fn command(&self, config: &Path) -> std::process::Command {
        let mut command = exec_command(config);
        command
            .current_dir(&self.work)
            .env("HOME", &self.home)
            .env("TMPDIR", &self.temp)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("MCP_ROUTER_HOME")
            .env("MCP_ROUTER_CACHE_DIR", self.home.join(".cache/mcp-router"));
        command
    }
}

/// Whether this kernel lets a process make a user and a mount namespace and mount in them
/// (what the namespaces tier needs), asked of util-linux's `unshare`, not of the router.
fn namespaces_work() -> bool {
    let args = ["--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "none", "/"];
    let status = std::process::Command::new("unshare").args(args).status();
    status.is_ok_and(|s| s.success())
}

fn probe_config(dir: &tempfile::TempDir, servers: &[(&str, &str)]) -> PathBuf {
    let mut text = String::new();
    for (name, extra) in servers {
        text.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{:?}]\n{extra}\n",
            python(),
            python_script("sandbox_probe.py")
        ));
    }
    write_config(dir, "config.toml", &text)
}

fn call(session: &mut ExecSession, id: &str, tool: &str, arguments: Value) -> String {
    let arguments = arguments.to_string();
    session.send(&json!({"call_id": id, "name": tool, "arguments": arguments}));
    let output = session.output(id);
    let text = output["result"]["Ok"]["content"][0]["text"].as_str();
    text.map(str::to_string).unwrap_or_else(|| output.to_string())
}

/// A loopback listener that greets whoever connects.
fn listener() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = (&stream).write_all(b"hello");
        }
    });
    port
}

#[test]
fn the_default_profile_keeps_secrets_and_writes_in_and_the_server_working() {
    let machine = Machine::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = probe_config(&dir, &[("probe", ""), ("open", "sandbox = \"off\"")]);
    let mut session = machine.exec(&config);
    let ready =
        session.line("probe ready", |v| v["type"] == "mcp_server_ready" && v["server"] == "probe");
    let tier = ready["sandbox"].as_str().expect("the sandbox in the ready event").to_string();
    if landlock_abi() == 0 {
        assert!(tier.starts_with("none: this kernel has no Landlock"), "{tier}");
        return;
    }
    assert!(tier.contains("landlock ABI "), "{tier}");
    if namespaces_work() {
        assert!(tier.starts_with("namespaces + landlock ABI "), "{tier}");
    }
    assert!(
        tier.contains("router state unreadable")
            || tier.contains("router state hidden and unreadable"),
        "{tier}"
    );
    let open =
        session.line("open ready", |v| v["type"] == "mcp_server_ready" && v["server"] == "open");
    assert_eq!(open["sandbox"], "off (sandbox = \"off\")");

    let home = |p: &str| machine.home.join(p).display().to_string();
    let key = home(".ssh/id_ed25519");
    let denied = [
        ("read", json!({"path": key})),
        ("child_read", json!({"path": key})),
        ("read", json!({"path": home(".config/mcp-router/credentials.json")})),
        ("read", json!({"path": home(".cache/mcp-router/pins/calc.json")})),
        ("write", json!({"path": home("planted.txt")})),
        (
            "write",
            json!({"path": machine.work.parent().expect("root").join("beside.txt").display().to_string()}),
        ),
    ];
    for (n, (tool, arguments)) in denied.iter().enumerate() {
        let answer =
            call(&mut session, &format!("d{n}"), &format!("mcp__probe__{tool}"), arguments.clone());
        assert!(answer.starts_with("denied: "), "{tool} {arguments}: {answer}");
        assert!(!answer.contains("CANARY"), "{answer}");
    }
    assert!(!machine.home.join("planted.txt").exists());
    if tier.starts_with("namespaces + ") {
        // Hidden: the folder is an empty one in the server's view.
        let hidden = call(&mut session, "h", "mcp__probe__read", json!({"path": key}));
        assert!(hidden.contains("No such file or directory"), "{hidden}");
    }
    let temp = tempfile::tempdir_in(&machine.temp).expect("temp");
    let allowed = [
        ("read", json!({"path": home("notes.txt")}), "ok: readable notes"),
        (
            "write",
            json!({"path": machine.work.join("out.txt").display().to_string()}),
            "ok: written",
        ),
        ("write", json!({"path": temp.path().join("t.txt").display().to_string()}), "ok: written"),
        ("read", json!({"path": "/etc/hostname"}), "ok: "),
        ("connect", json!({"port": listener()}), "ok: hello"),
        ("udp", json!({}), "ok: a UDP socket"),
    ];
    for (n, (tool, arguments, expected)) in allowed.iter().enumerate() {
        let answer =
            call(&mut session, &format!("a{n}"), &format!("mcp__probe__{tool}"), arguments.clone());
        assert!(answer.starts_with(expected), "{tool} {arguments}: {answer}");
    }
    assert_eq!(std::fs::read_to_string(machine.work.join("out.txt")).expect("written"), "written");
    // The environment is the allow-list's: no secret of the router's.
    let env = call(&mut session, "e", "mcp__probe__env", json!({}));
    assert!(!env.contains("MCP_ROUTER_CACHE_DIR"), "{env}");
    // `sandbox = "off"` reads what the default keeps away.
    let off = call(&mut session, "o", "mcp__open__read", json!({"path": key}));
    assert_eq!(off, "ok: PRIVATE KEY CANARY");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

#[test]
fn offline_and_strict_profiles_take_the_network_and_writing_away() {
    let machine = Machine::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = probe_config(
        &dir,
        &[("offline", "sandbox = \"offline\""), ("strict", "sandbox = \"strict\"")],
    );
    let mut session = machine.exec(&config);
    for server in ["offline", "strict"] {
        let ready =
            session.line("ready", |v| v["type"] == "mcp_server_ready" && v["server"] == server);
        let tier = ready["sandbox"].as_str().expect("a tier").to_string();
        assert!(tier.contains("network off (") && tier.ends_with("seccomp)"), "{tier}");
    }
    let port = listener();
    for (n, server) in ["offline", "strict"].iter().enumerate() {
        let connect = call(
            &mut session,
            &format!("c{n}"),
            &format!("mcp__{server}__connect"),
            json!({"port": port}),
        );
        assert!(connect.starts_with("denied: "), "{server}: {connect}");
        let udp = call(&mut session, &format!("u{n}"), &format!("mcp__{server}__udp"), json!({}));
        assert!(udp.starts_with("denied: "), "{server}: {udp}");
    }
    let out = |name: &str| json!({"path": machine.work.join(name).display().to_string()});
    assert_eq!(call(&mut session, "w1", "mcp__offline__write", out("a.txt")), "ok: written");
    if landlock_abi() == 0 {
        return;
    }
    let strict = call(&mut session, "w2", "mcp__strict__write", out("b.txt"));
    assert!(strict.starts_with("denied: "), "read-only: {strict}");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_port_list_lets_tcp_reach_those_ports_only() {
    let machine = Machine::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let (allowed, other) = (listener(), listener());
    if landlock_abi() < 4 {
        return; // TCP ports need Landlock ABI 4; the tier says "NOT restricted" then.
    }
    let profile = format!("sandbox = {{ network = [{allowed}] }}");
    let config = probe_config(&dir, &[("ports", &profile)]);
    let mut session = machine.exec(&config);
    let ready =
        session.line("ready", |v| v["type"] == "mcp_server_ready" && v["server"] == "ports");
    let tier = ready["sandbox"].as_str().expect("a tier").to_string();
    assert!(tier.ends_with(&format!("TCP to ports {allowed} only")), "{tier}");
    let to = |port: u16| json!({"port": port});
    assert_eq!(call(&mut session, "p1", "mcp__ports__connect", to(allowed)), "ok: hello");
    let refused = call(&mut session, "p2", "mcp__ports__connect", to(other));
    assert!(refused.starts_with("denied: "), "{refused}");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

/// A host that names no helper: the sandbox is applied in the forked child before `exec`.
#[tokio::test]
async fn a_host_without_a_helper_sandboxes_the_child_before_exec() {
    use mcp_backend::McpBackend as _;
    use mcp_connection_manager::{ManagerOptions, McpConnectionManager, Sandbox, ServerConfig};
    let mut config =
        ServerConfig::stdio("probe", python(), vec![python_script("sandbox_probe.py")]);
    config.sandbox = Sandbox::named("strict");
    let options = ManagerOptions::default();
    assert_eq!(options.sandbox.helper, None, "a host's default: no helper");
    let events = router_protocol::EventSender::discard();
    let manager = McpConnectionManager::start(vec![config], events, options);
    manager.wait_until_started().await;
    let tiers = manager.sandboxes();
    assert_eq!(tiers.len(), 1);
    if landlock_abi() == 0 {
        manager.shutdown().await;
        return;
    }
    assert!(tiers[0].1.contains("landlock ABI ") && tiers[0].1.ends_with("seccomp)"));
    let temp = tempfile::tempdir().expect("temp");
    let call = |tool: &'static str, arguments: Value| {
        let manager = &manager;
        async move {
            let arguments = arguments.as_object().cloned();
            let result = manager.call_tool("probe", tool, arguments).await.expect("answered");
            let content = serde_json::to_value(&result.content).expect("content");
            content[0]["text"].as_str().unwrap_or_default().to_string()
        }
    };
    let path = temp.path().join("x.txt").display().to_string();
    let written = call("write", json!({"path": path})).await;
    assert!(written.starts_with("denied: "), "read-only, temp too: {written}");
    let udp = call("udp", json!({})).await;
    assert!(udp.starts_with("denied: "), "{udp}");
    assert!(call("read", json!({"path": "/etc/hostname"})).await.starts_with("ok: "));
    manager.shutdown().await;
}

/// The bundled demo servers (skills written where a sandboxed server may write) start under the
/// default profile with the router's cache protected, as `mcp-router demo` runs for a user.
#[test]
fn the_demo_servers_run_sandboxed_with_the_routers_cache_protected() {
    let machine = Machine::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[mcp_servers.docs]\ncommand = {:?}\nargs = [\"--name\", \"docs\", \"--demo-skills\"]\n",
        crate::support::DEMO
    );
    let config = write_config(&dir, "config.toml", &text);
    let mut session = machine.exec(&config);
    let ready = session.line("docs started", |v| {
        (v["type"] == "mcp_server_ready" || v["type"] == "mcp_server_failed")
            && v["server"] == "docs"
    });
    assert_eq!(ready["type"], "mcp_server_ready", "{ready}");
    session.send(&json!({"type": "list_skills"}));
    let skills = session.line("the skills", |v| v["type"] == "skills");
    assert!(!skills["skills"].as_array().expect("skills").is_empty(), "{skills}");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

/// A folder a server's arguments name (a filesystem server's) is its to write; its neighbour is
/// not.
#[test]
fn the_folder_a_server_is_given_is_writable_and_nothing_beside_it() {
    if landlock_abi() == 0 {
        return;
    }
    let machine = Machine::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = machine.home.parent().expect("the root").to_path_buf();
    let data = root.join("data");
    std::fs::create_dir_all(&data).expect("data");
    let text = format!(
        "[mcp_servers.files]\ncommand = {:?}\nargs = [{:?}, {:?}]\n",
        python(),
        python_script("sandbox_probe.py"),
        data.display().to_string()
    );
    let config = write_config(&dir, "config.toml", &text);
    let mut session = machine.exec(&config);
    let path = |p: &Path| json!({"path": p.display().to_string()});
    let inside = call(&mut session, "1", "mcp__files__write", path(&data.join("note.txt")));
    assert_eq!(inside, "ok: written");
    let beside = call(&mut session, "2", "mcp__files__write", path(&root.join("beside.txt")));
    assert!(beside.starts_with("denied: "), "{beside}");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

/// A seccomp filter that refuses user namespaces as container runtimes' default profiles do:
/// `unshare` and `clone` with `CLONE_NEWUSER` fail with `EPERM`.
fn no_user_namespaces() -> seccompiler::BpfProgram {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let newuser = u64::try_from(libc::CLONE_NEWUSER).expect("a flag");
    let with_newuser = || {
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(newuser),
            newuser,
        )
        .expect("a condition");
        vec![SeccompRule::new(vec![condition]).expect("a rule")]
    };
    let rules = [(libc::SYS_unshare, with_newuser()), (libc::SYS_clone, with_newuser())];
    let arch = TargetArch::try_from(std::env::consts::ARCH).expect("a known arch");
    let refuse = SeccompAction::Errno(libc::EPERM.unsigned_abs());
    let filter =
        SeccompFilter::new(rules.into_iter().collect(), SeccompAction::Allow, refuse, arch)
            .expect("a filter");
    filter.try_into().expect("a program")
}

/// Where user namespaces are refused (a container's seccomp profile, here put on the router
/// itself), the tier is Landlock's and seccomp's, and it holds all the same: the key is refused
/// rather than hidden, nothing is written beside the work, the offline server reaches nothing.
#[test]
fn where_user_namespaces_are_refused_the_landlock_tier_holds() {
    use std::os::unix::process::CommandExt as _;
    if landlock_abi() == 0 {
        return; // no Landlock: the default test checks that the tier says "none".
    }
    let machine = Machine::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = probe_config(&dir, &[("probe", ""), ("offline", "sandbox = \"offline\"")]);
    let mut command = machine.command(&config);
    let filter = no_user_namespaces();
    // SAFETY: between fork and exec, two system calls on a filter made before the fork.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            seccompiler::apply_filter(&filter).map_err(|_| std::io::Error::other("seccomp"))
        });
    }
    let mut session = ExecSession::spawn(command);
    for (server, ending) in [("probe", "network on"), ("offline", "network off (seccomp)")] {
        let ready =
            session.line("ready", |v| v["type"] == "mcp_server_ready" && v["server"] == server);
        let tier = ready["sandbox"].as_str().expect("a tier").to_string();
        assert!(tier.starts_with("landlock ABI "), "{server}: {tier}");
        assert!(tier.ends_with(ending), "{server}: {tier}");
    }
    let key = machine.home.join(".ssh/id_ed25519").display().to_string();
    let read = call(&mut session, "r", "mcp__probe__read", json!({"path": key}));
    assert!(read.starts_with("denied: ") && read.contains("Permission denied"), "{read}");
    let child = call(&mut session, "c", "mcp__probe__child_read", json!({"path": key}));
    assert!(child.starts_with("denied: ") && !child.contains("CANARY"), "{child}");
    let planted = machine.home.join("planted.txt").display().to_string();
    let write = call(&mut session, "w", "mcp__probe__write", json!({"path": planted}));
    assert!(write.starts_with("denied: "), "{write}");
    let connect = call(&mut session, "n", "mcp__offline__connect", json!({"port": listener()}));
    assert!(connect.starts_with("denied: "), "{connect}");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

/// Run by an unprivileged user (the router as `nobody`, with a home of its own), the default
/// profile keeps the same: the key unreadable, writes only in the work and temp.
#[test]
fn an_unprivileged_user_gets_the_same_sandbox() {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let root = unsafe { libc::geteuid() } == 0;
    // The system's Python (the harness's venv points into root's home, which `nobody` cannot
    // enter); the probe needs only its standard library.
    let python = Path::new("/usr/bin/python3");
    if !root || landlock_abi() == 0 || !python.exists() {
        return; // only root can run the router as another user here.
    }
    const NOBODY: u32 = 65534;
    let machine = Machine::new();
    let top = machine.home.parent().expect("the machine's root").to_path_buf();
    let text = format!(
        "[mcp_servers.probe]\ncommand = {python:?}\nargs = [{:?}]\n",
        python_script("sandbox_probe.py")
    );
    let config = top.join("config.toml");
    std::fs::write(&config, text).expect("the config");
    chown_all(&top, NOBODY);
    let mut command = machine.command(&config);
    // SAFETY: between fork and exec, three system calls.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(NOBODY) != 0
                || libc::setuid(NOBODY) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut session = ExecSession::spawn(command);
    let ready =
        session.line("probe ready", |v| v["type"] == "mcp_server_ready" && v["server"] == "probe");
    let tier = ready["sandbox"].as_str().expect("a tier").to_string();
    assert!(tier.contains("landlock ABI "), "{tier}");
    let key = machine.home.join(".ssh/id_ed25519").display().to_string();
    let read = call(&mut session, "r", "mcp__probe__read", json!({"path": key}));
    assert!(read.starts_with("denied: ") && !read.contains("CANARY"), "{read}");
    let token = machine.home.join(".config/mcp-router/credentials.json").display().to_string();
    let read = call(&mut session, "t", "mcp__probe__read", json!({"path": token}));
    assert!(read.starts_with("denied: ") && !read.contains("CANARY"), "{read}");
    let planted = machine.home.join("planted.txt").display().to_string();
    let write = call(&mut session, "w", "mcp__probe__write", json!({"path": planted}));
    assert!(write.starts_with("denied: "), "{write}");
    let out = machine.work.join("out.txt").display().to_string();
    assert_eq!(call(&mut session, "o", "mcp__probe__write", json!({"path": out})), "ok: written");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

/// `path` and everything under it owned by `uid` (and its group).
fn chown_all(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).expect("chown");
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).expect("a folder").flatten() {
            chown_all(&entry.path(), uid);
        }
    }
}

/// A host that keeps the router's state elsewhere (`Assembly::state_dir`, outside temp and the
/// default places) finds its catalogs and pins there, and its sandboxed servers cannot read
/// them, nor the token store's folder.
#[tokio::test]
async fn a_hosts_own_state_dir_holds_the_state_and_servers_cannot_read_it() {
    use mcp_backend::McpBackend as _;
    let state = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a folder outside temp");
    let text = format!(
        "[mcp_servers.probe]\ncommand = {:?}\nargs = [{:?}]\n",
        python(),
        python_script("sandbox_probe.py")
    );
    let assembly = mcp_host::Assembly::from_text(&text, mcp_host::ConfigFormat::CodexToml)
        .expect("a config")
        .state_dir(state.path());
    let running = assembly.start().expect("started");
    running.manager.wait_until_started().await;
    let specs = running.router.specs().await;
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"mcp__probe__read"), "{names:?} {:?}", running.manager.status("probe"));
    let files = |dir: &str| -> Vec<PathBuf> {
        let entries = std::fs::read_dir(state.path().join(dir)).map(|d| d.flatten().collect());
        entries.unwrap_or_else(|_| Vec::new()).iter().map(std::fs::DirEntry::path).collect()
    };
    let json = |dir: &str| -> Vec<PathBuf> {
        files(dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")).collect()
    };
    let pins = json("pins");
    assert_eq!(pins.len(), 1, "the probe's pins under the state folder: {pins:?}");
    std::fs::write(state.path().join("canary.txt"), "STATE CANARY").expect("a canary");
    // Kept from the server wherever it is: by Landlock outside temp, by the namespaces tier
    // (a tmpfs over it) anywhere — a checkout under /tmp puts this folder in temp.
    let tier = running.manager.sandboxes().into_iter().map(|(_, t)| t).next().unwrap_or_default();
    let temp = std::env::temp_dir().canonicalize().expect("temp");
    let in_temp = state.path().canonicalize().expect("the state").starts_with(&temp);
    if landlock_abi() > 0 && (tier.starts_with("namespaces + ") || !in_temp) {
        for path in [&pins[0], &state.path().join("canary.txt")] {
            let arguments = json!({"path": path.display().to_string()});
            let result = running
                .manager
                .call_tool("probe", "read", arguments.as_object().cloned())
                .await
                .expect("answered");
            let text = serde_json::to_value(&result.content).expect("content")[0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(text.starts_with("denied: ") && !text.contains("CANARY"), "{text}");
        }
    }
    running.shutdown().await;
    // The catalog is written when the servers stop.
    assert_eq!(json("tools").len(), 1, "the probe's catalog under the state folder");
}
