//! A PyPI package `add` installs itself: its wheel for that exact version is found in the
//! index's simple API (`{registry}/simple/{name}/`, PEP 503: each file's link carries its
//! `#sha256=`), fetched, and must have that SHA-256; it is installed with pip into a virtual
//! environment of its own in the package store, and run as `python -c` of its console script's
//! entry point (so the folder may move: no script's `#!` line is used), bytecode not written at
//! run time (the folder's digest is checked before every start).

use std::io::Read as _;
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, bail};

use crate::packages::{Installed, Staged};

/// The index when a package names none.
const PYPI: &str = "https://pypi.org";

/// A PyPI package to install: its index, name, exact version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PypiPlan {
    pub(crate) registry: Option<String>,
    pub(crate) name: String,
    pub(crate) version: String,
}

/// `name` as the simple API and wheel file names have it (PEP 503 / 427).
fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// `plan` fetched, checked, installed into a staging folder under `root`.
pub(crate) async fn install(
    plan: &PypiPlan,
    args: Vec<String>,
    root: &Path,
) -> anyhow::Result<Installed> {
    let base = plan.registry.as_deref().unwrap_or(PYPI).trim_end_matches('/');
    let (name, version) = (normalized(&plan.name), &plan.version);
    let client = reqwest::Client::new();
    let index = format!("{base}/simple/{name}/");
    let page = crate::packages::fetch(&client, &index).await?.text().await?;
    let (url, expected) = pure_wheel(&page, &index, &name, version).with_context(|| {
        format!("the index at {base} has no pure-Python wheel (py3-none-any) of {name} {version} with a sha256: not supported, nothing installed")
    })?;
    let bytes = crate::packages::fetch(&client, &url).await?.bytes().await?;
    let found = crate::packages::sha256_hex(&bytes);
    if !found.eq_ignore_ascii_case(&expected) {
        bail!(
            "the wheel of {name} {version} does not match the index's sha256 ({expected} published, {found} fetched): nothing installed"
        );
    }
    let entry = entry_point(&bytes, &name)?;
    let mut staged = Staged::new(&root.join("pypi"), &format!("{name}@{version}"))?;
    let wheel = staged.staging().join(url.rsplit('/').next().unwrap_or("package.whl"));
    std::fs::write(&wheel, &bytes)?;
    pip_install(staged.staging(), &wheel).await?;
    staged.seal()?;
    let python = staged.dir.join("venv/bin/python").to_string_lossy().into_owned();
    let (module, function) = entry;
    let call = format!("import sys; from {module} import {function} as main; sys.exit(main())");
    let all: Vec<String> = ["-c".to_string(), call].into_iter().chain(args).collect();
    let shown = vec![
        format!("command: {python} {}", all.join(" ")),
        format!(
            "package: pypi {name} {version}, its wheel matched the index's sha256 {}…; installed in {}",
            &expected[..16.min(expected.len())],
            staged.dir.display()
        ),
    ];
    let env = vec![("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string())];
    Ok(Installed { staged, command: python, args: all, env, passed: Vec::new(), shown })
}

/// The URL and sha256 of `name`'s `version` pure-Python wheel among the simple page's links.
fn pure_wheel(page: &str, index: &str, name: &str, version: &str) -> Option<(String, String)> {
    let prefix = format!("{}-{version}-", name.replace('-', "_"));
    page.split("href=\"").skip(1).find_map(|rest| {
        let href = &rest[..rest.find('"')?];
        let (link, fragment) = href.split_once('#')?;
        let sha256 = fragment.strip_prefix("sha256=")?;
        let file = link.rsplit('/').next()?;
        let pure = file.ends_with("-none-any.whl") && file.contains("py3");
        (file.to_ascii_lowercase().starts_with(&prefix) && pure)
            .then(|| (absolute(index, link), sha256.to_string()))
    })
}

/// `link` (as the page has it) made absolute against the page's URL.
fn absolute(page: &str, link: &str) -> String {
    if link.contains("://") {
        return link.to_string();
    }
    let origin = page.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
    match link.strip_prefix('/') {
        Some(path) => format!("{origin}/{path}"),
        None => format!("{}{link}", &page[..page.rfind('/').map_or(page.len(), |i| i + 1)]),
    }
}

/// The wheel's console script: the one named after the package, else its only one, as
/// (module, function).
fn entry_point(wheel: &[u8], name: &str) -> anyhow::Result<(String, String)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel)).context("not a wheel")?;
    let file = (0..archive.len())
        .filter_map(|i| archive.name_for_index(i).map(str::to_string))
        .find(|f| f.ends_with(".dist-info/entry_points.txt"))
        .context("the wheel declares no command (no entry_points.txt)")?;
    let mut text = String::new();
    archive.by_name(&file)?.take(1 << 20).read_to_string(&mut text)?;
    let mut in_scripts = false;
    let mut scripts = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_scripts = line == "[console_scripts]";
        } else if in_scripts && let Some((script, target)) = line.split_once('=') {
            scripts.push((script.trim().to_string(), target.trim().to_string()));
        }
    }
    let chosen = match scripts.iter().find(|(s, _)| normalized(s) == name) {
        Some(found) => found,
        None if scripts.len() == 1 => &scripts[0],
        None => bail!("the wheel declares {} commands and none is named {name}", scripts.len()),
    };
    let target = chosen.1.split_whitespace().next().unwrap_or_default();
    let (module, function) =
        target.split_once(':').context("a console script without `module:function`")?;
    let word = |s: &str| {
        !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    anyhow::ensure!(
        word(module) && word(function),
        "the console script `{target}` is not `module:function`"
    );
    Ok((module.to_string(), function.to_string()))
}

/// A virtual environment in `dir` with the checked `wheel` installed by pip (its dependencies
/// from the user's index).
async fn pip_install(dir: &Path, wheel: &Path) -> anyhow::Result<()> {
    let run = |program: &Path, args: &[&str]| {
        let mut command = tokio::process::Command::new(program);
        command.args(args).current_dir(dir).stdin(Stdio::null());
        command
    };
    let venv = run(Path::new("python3"), &["-m", "venv", "venv"]).output().await?;
    anyhow::ensure!(venv.status.success(), "python3 -m venv failed: {}", tail(&venv.stderr));
    let wheel = wheel.to_string_lossy();
    let args = ["-m", "pip", "install", "--no-input", "--disable-pip-version-check", &wheel];
    let pip = run(&dir.join("venv/bin/python"), &args).output().await?;
    anyhow::ensure!(pip.status.success(), "pip install failed: {}", tail(&pip.stderr));
    Ok(())
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pure_wheel_of_the_exact_version_is_found_with_its_digest() {
        let page = r#"<a href="../../packages/ada_greeter-1.0.0-py3-none-any.whl#sha256=aa">x</a>
            <a href="/files/ada_greeter-1.1.0-py3-none-any.whl#sha256=bb">y</a>
            <a href="https://cdn/ada_greeter-1.1.0-cp311-cp311-linux_x86_64.whl#sha256=cc">z</a>"#;
        let index = "http://127.0.0.1:9/simple/ada-greeter/";
        assert_eq!(
            pure_wheel(page, index, "ada-greeter", "1.0.0"),
            Some((
                "http://127.0.0.1:9/simple/ada-greeter/../../packages/ada_greeter-1.0.0-py3-none-any.whl".into(),
                "aa".into()
            ))
        );
        assert_eq!(
            pure_wheel(page, index, "ada-greeter", "1.1.0"),
            Some((
                "http://127.0.0.1:9/files/ada_greeter-1.1.0-py3-none-any.whl".into(),
                "bb".into()
            ))
        );
        assert_eq!(pure_wheel(page, index, "ada-greeter", "2.0.0"), None);
        assert_eq!(normalized("Ada_Greeter.x"), "ada-greeter-x");
    }
}
