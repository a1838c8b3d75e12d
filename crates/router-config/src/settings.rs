//! The `[mcp_router]` section: the router's settings (budgets, search, events, results, the
//! ledger), the manager's (times, caches, rounds) and the switches (`tool_cache`, `apps_ui`,
//! `pin_tools`), each key checked and named in its error.

use std::path::Path;
use std::time::Duration;

use mcp_connection_manager::ManagerOptions;
use serde_json::Value;
use tool_router::{RouterSettings, SearchVia as Via, ToolSearchMode as Mode};

use crate::errors::ConfigError;

/// A number of seconds from `min` to `max`.
fn seconds(value: &Value, min: f64, max: f64) -> Option<Duration> {
    let secs = value.as_f64().filter(|s| s.is_finite() && *s >= min && *s <= max)?;
    Some(Duration::from_secs_f64(secs))
}

/// A setting that names one of `choices`: its value, or the error's `expected …` words.
fn one_of<T: Copy>(value: &Value, choices: &[(&str, T)]) -> Result<T, String> {
    let found = choices.iter().find(|(name, _)| value.as_str() == Some(name));
    found.map(|(_, choice)| *choice).ok_or_else(|| {
        let names: Vec<String> = choices.iter().map(|(name, _)| format!("\"{name}\"")).collect();
        let (last, rest) = names.split_last().map_or(("", &[][..]), |(l, r)| (l.as_str(), r));
        format!("expected {} or {last}, found {value}", rest.join(", "))
    })
}

/// Settings of time (`…_sec`, `…_ms`).
const TIMED_SETTINGS: [&str; 5] = [
    "progress_interval_ms",
    "list_cache_sec",
    "query_timeout_sec",
    "task_timeout_sec",
    "background_tasks_after_sec",
];

/// A setting parsed on its own — one of time, one of the ledger's, or `registry`: `None` when `key` is
/// not one, else whether `value` could be used (the error's `expected …` words).
fn own_setting(
    key: &str,
    value: &Value,
    settings: &mut RouterSettings,
    manager: &mut ManagerOptions,
) -> Option<Result<(), String>> {
    if ["ledger", "context_window_tokens", "spec_share_warning"].contains(&key) {
        return Some(ledger_setting(key, value, &mut settings.ledger));
    }
    // The MCP registry `mcp-router add` asks (read by the command; nothing runs by it).
    if key == "registry" {
        let url = value.as_str().filter(|u| u.starts_with("http://") || u.starts_with("https://"));
        return Some(
            url.map(drop).ok_or_else(|| format!("expected an http(s) URL, found {value}")),
        );
    }
    TIMED_SETTINGS.contains(&key).then(|| set_timed(key, value, settings, manager))
}

fn set_timed(
    key: &str,
    value: &Value,
    settings: &mut RouterSettings,
    manager: &mut ManagerOptions,
) -> Result<(), String> {
    const DAY: f64 = 86_400.0;
    let within = |min: f64, max: f64| {
        seconds(value, min, max).ok_or_else(|| match min {
            0.0 => format!("expected a number of seconds from 0 to {max}, found {value}"),
            _ => format!("expected a positive number of seconds, found {value}"),
        })
    };
    match key {
        "progress_interval_ms" => {
            let ms = value
                .as_u64()
                .ok_or_else(|| format!("expected a whole number of at least 0, found {value}"))?;
            manager.requests.progress_interval = Duration::from_millis(ms);
        }
        "list_cache_sec" => manager.lists.cache = within(0.0, DAY)?,
        "query_timeout_sec" => settings.data.timeout = within(f64::MIN_POSITIVE, 3600.0)?,
        "task_timeout_sec" => manager.tasks.timeout = within(f64::MIN_POSITIVE, 7.0 * DAY)?,
        "background_tasks_after_sec" => {
            manager.tasks.background_after = Some(within(0.0, DAY)?);
        }
        _ => {}
    }
    Ok(())
}

/// The tool-search settings and the manager's keys of `[mcp_router]`: whether `key` was one.
fn search_or_manager(
    key: &str,
    value: &Value,
    (settings, manager): (&mut RouterSettings, &mut ManagerOptions),
    bytes: &dyn Fn(u64) -> Result<usize, ConfigError>,
    flag: &dyn Fn() -> Result<bool, ConfigError>,
    err: &dyn Fn(String) -> ConfigError,
) -> Result<bool, ConfigError> {
    match key {
        "tool_search" => {
            let choices = [("auto", Mode::Auto), ("on", Mode::On), ("off", Mode::Off)];
            settings.search.mode = one_of(value, &choices).map_err(err)?;
        }
        "tool_search_threshold_bytes" => settings.search.threshold_bytes = bytes(0)?,
        "tool_search_model" => settings.search.model = flag()?,
        "tool_search_via" => {
            let choices = [("router", Via::Router), ("api", Via::Api), ("both", Via::Both)];
            settings.search.via = one_of(value, &choices).map_err(err)?;
        }
        "list_cache_bytes" => manager.lists.cache_bytes = bytes(0)?,
        "max_input_rounds" => manager.requests.max_input_rounds = bytes(1)?,
        "response_cache" => manager.requests.response_cache = flag()?,
        "reset_timeout_on_progress" => manager.requests.reset_timeout_on_progress = flag()?,
        "max_watched_resources" => manager.watching.max_resources = bytes(0)?,
        "sandbox" => manager.sandbox = crate::sandbox::sandbox(value).map_err(err)?,
        "destructive_tools" => {
            let text = value.as_str().unwrap_or_default();
            manager.trust.destructive = mcp_connection_manager::ApprovalPolicy::parse(text)
                .ok_or_else(|| {
                    err(format!("expected \"run\", \"ask\" or \"refuse\", found {value}"))
                })?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `tool_cache`, `apps_ui` and `pin_tools`, in that order.
type Switches = (bool, bool, bool);

pub(crate) fn parse_settings(
    path: &Path,
    section: &str,
    value: &Value,
) -> Result<(RouterSettings, ManagerOptions, Switches), ConfigError> {
    let Value::Object(table) = value else {
        return Err(ConfigError::new(path, format!("`{section}` must be a table")));
    };
    let err = |key: &str, message: String| {
        ConfigError::new(path, format!("`{section}`: key `{key}`: {message}"))
    };
    let mut settings = RouterSettings::default();
    let mut manager = ManagerOptions::default();
    let mut switches = (true, false, true);
    for (key, value) in table {
        if let Some(timed) = own_setting(key, value, &mut settings, &mut manager) {
            timed.map_err(|e| err(key, e))?;
            continue;
        }
        let bytes = |min: u64| {
            value.as_u64().filter(|n| *n >= min).and_then(|n| usize::try_from(n).ok()).ok_or_else(
                || err(key, format!("expected a whole number of at least {min}, found {value}")),
            )
        };
        let flag = || {
            value
                .as_bool()
                .ok_or_else(|| err(key, format!("expected true or false, found {value}")))
        };
        let named = |e: String| err(key, e);
        if search_or_manager(key, value, (&mut settings, &mut manager), &bytes, &flag, &named)? {
            continue;
        }
        match key.as_str() {
            "read_budget_bytes" => settings.reads.budget_bytes = bytes(256)?,
            "image_max_bytes" => settings.reads.image_max_bytes = bytes(0)?,
            "raw_blobs" => settings.reads.raw_blobs = flag()?,
            "data_sources" => settings.data.enabled = flag()?,
            "query_max_rows" => settings.data.max_rows = bytes(1)?,
            "list_budget_bytes" => settings.lists.budget_bytes = bytes(1024)?,
            "show_user_audience" => settings.lists.show_user_audience = flag()?,
            "event_result_text" => settings.events.result_text = flag()?,
            "event_payload_bytes" => settings.events.payload_bytes = bytes(1024)?,
            "tool_result_budget_bytes" => settings.results.budget_bytes = bytes(256)?,
            "kept_results_max" => settings.results.kept.max_results = bytes(0)?,
            "kept_results_bytes" => settings.results.kept.max_bytes = bytes(0)?,
            "kept_results_memory_bytes" => settings.results.kept.memory_bytes = bytes(0)?,
            "inline_resource_links_bytes" => settings.results.inline_links_bytes = bytes(0)?,
            "tool_cache" => switches.0 = flag()?,
            "apps_ui" => switches.1 = flag()?,
            "pin_tools" => switches.2 = flag()?,
            "list_skills_tool" => settings.tools.list_skills = flag()?,
            "prompt_tool" => settings.tools.get_prompt = flag()?,
            other => {
                tracing::warn!(file = %path.display(), section, key = other, "unknown setting ignored")
            }
        }
    }
    Ok((settings, manager, switches))
}

/// One of the ledger's keys (`ledger`, `context_window_tokens`, `spec_share_warning`).
fn ledger_setting(
    key: &str,
    value: &Value,
    ledger: &mut tool_router::LedgerSettings,
) -> Result<(), String> {
    match key {
        "ledger" => {
            ledger.keep =
                value.as_bool().ok_or_else(|| format!("expected true or false, found {value}"))?
        }
        "context_window_tokens" => {
            ledger.context_tokens = value
                .as_u64()
                .filter(|n| *n >= 1000)
                .ok_or_else(|| format!("expected a whole number of at least 1000, found {value}"))?
        }
        _ => {
            ledger.spec_share_warning =
                value
                    .as_f64()
                    .filter(|share| (0.0..=1.0).contains(share))
                    .ok_or_else(|| format!("expected a share between 0 and 1, found {value}"))?
        }
    }
    Ok(())
}
