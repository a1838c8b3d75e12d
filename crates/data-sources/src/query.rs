//! Read-only queries with a row cap and a time limit.

use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;

use crate::error::DataSourceError;

/// Bounds on a query.
#[derive(Debug, Clone, Copy)]
pub struct QueryLimits {
    /// Most rows returned; more are reported as `truncated`.
    pub max_rows: usize,
    /// A query running longer is interrupted.
    pub timeout: Duration,
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self { max_rows: 200, timeout: Duration::from_secs(5) }
    }
}

/// JSON for a SQLite value: numbers, strings, null; blobs are described.
pub(crate) fn json_value(value: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(bytes) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) => Value::String(format!("<blob of {} bytes>", bytes.len())),
    }
}

/// Rows of a query, as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryResult {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows as arrays aligned with `columns`.
    pub rows: Vec<Vec<Value>>,
    /// Rows returned.
    pub row_count: usize,
    /// More rows exist beyond the row cap.
    pub truncated: bool,
}

pub(crate) fn run(
    conn: &Connection,
    sql: &str,
    limits: QueryLimits,
) -> Result<QueryResult, DataSourceError> {
    let keyword = first_keyword(sql);
    if keyword.is_empty() {
        return Err(DataSourceError::Refused("the query is empty".into()));
    }
    if !matches!(keyword.as_str(), "select" | "with" | "values") {
        return Err(DataSourceError::Refused(format!(
            "only a single SELECT or WITH statement is allowed, not {}",
            keyword.to_uppercase()
        )));
    }
    let mut stmt = conn.prepare(sql).map_err(|e| match e {
        rusqlite::Error::MultipleStatement => DataSourceError::Refused(
            "only one statement is allowed (remove what follows the first `;`)".into(),
        ),
        other => DataSourceError::Query(message(&other)),
    })?;
    // SQLite's own verdict, whatever the text looked like.
    if !stmt.readonly() {
        return Err(DataSourceError::Refused("the statement would modify the database".into()));
    }
    let columns: Vec<String> = stmt.column_names().map(String::from).collect();
    let _watchdog = Watchdog::start(conn.get_interrupt_handle(), limits.timeout);
    let mut rows = stmt.query([]).map_err(|e| DataSourceError::Query(message(&e)))?;
    let mut out = Vec::new();
    let mut truncated = false;
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::OperationInterrupted =>
            {
                return Err(DataSourceError::Query(format!(
                    "interrupted after {:?} (time limit)",
                    limits.timeout
                )));
            }
            Err(e) => return Err(DataSourceError::Query(message(&e))),
        };
        if out.len() == limits.max_rows {
            truncated = true;
            break;
        }
        let values = (0..columns.len())
            .map(|i| row.get_ref(i).map(json_value).unwrap_or(Value::Null))
            .collect();
        out.push(values);
    }
    Ok(QueryResult { columns, row_count: out.len(), rows: out, truncated })
}

/// The first keyword after whitespace and SQL comments, lower-case.
fn first_keyword(sql: &str) -> String {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect::<String>().to_ascii_lowercase()
}

fn message(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        other => other.to_string(),
    }
}

/// Interrupts the connection if the query outlives `timeout`; stops when dropped.
struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
}

impl Watchdog {
    fn start(handle: rusqlite::InterruptHandle, timeout: Duration) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timeout) {
                handle.interrupt();
            }
        });
        Self { stop: Some(stop) }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
