//! The database: a writer for imports, a read-only reader for queries, and the catalogue of
//! imported sources.

use std::sync::Mutex;

use rusqlite::limits::Limit;
use rusqlite::{Connection, OpenFlags, params_from_iter};
use serde::Serialize;

use crate::error::DataSourceError;
use crate::import::{self, ColumnInfo, ColumnType};
use crate::query::{self, QueryLimits, QueryResult};

/// An imported CSV resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceInfo {
    /// The SQLite table.
    pub table: String,
    /// The MCP server it came from.
    pub server: String,
    /// The resource URI.
    pub uri: String,
    /// Rows imported.
    pub rows: usize,
    /// Columns and their types.
    pub columns: Vec<ColumnInfo>,
}

/// The data sources of one router: an embedded SQLite database in a private temporary directory
/// (0700, the database file 0600), created by the first import or query, not before: a router
/// whose model never reads a CSV writes nothing to disk.
pub struct DataSources {
    db: std::sync::OnceLock<Db>,
    /// Held while the database is created, so two first uses create one.
    creating: Mutex<()>,
    sources: Mutex<Vec<SourceInfo>>,
    limits: QueryLimits,
}

/// The database once created.
struct Db {
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
    // Declared last: dropped after the connections, removing the database files.
    _dir: tempfile::TempDir,
}

impl Db {
    fn create() -> Result<Self, DataSourceError> {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        let db = |e: &dyn std::fmt::Display| DataSourceError::Database(e.to_string());
        let dir = tempfile::Builder::new()
            .prefix("mcp-router-data-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| db(&e))?;
        let path = dir.path().join("sources.sqlite");
        // Made here with 0600, whatever the umask: SQLite gives its -wal and -shm files the
        // database file's permissions.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| db(&e))?;
        let writer = Connection::open(&path).map_err(|e| db(&e))?;
        writer
            .execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;")
            .map_err(|e| db(&e))?;
        let reader = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| db(&e))?;
        // Enforced by SQLite, whatever the query text says: no writes, no ATTACH.
        reader.execute_batch("PRAGMA query_only = ON;").map_err(|e| db(&e))?;
        reader.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0).map_err(|e| db(&e))?;
        Ok(Self { writer: Mutex::new(writer), reader: Mutex::new(reader), _dir: dir })
    }
}

impl DataSources {
    /// A fresh, empty set of sources; its database is created at first use.
    pub fn new(limits: QueryLimits) -> Result<Self, DataSourceError> {
        Ok(Self {
            db: std::sync::OnceLock::new(),
            creating: Mutex::new(()),
            sources: Mutex::default(),
            limits,
        })
    }

    /// The database's directory, once created (`None` before the first import or query).
    pub fn directory(&self) -> Option<&std::path::Path> {
        self.db.get().map(|db| db._dir.path())
    }

    fn db(&self) -> Result<&Db, DataSourceError> {
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        let _creating = self.creating.lock().map_err(|_| poisoned())?;
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        let db = Db::create()?;
        Ok(self.db.get_or_init(|| db))
    }

    /// Import (or re-import, replacing the table) the CSV `bytes` of `uri` on `server`.
    pub fn import_csv(
        &self,
        server: &str,
        uri: &str,
        bytes: &[u8],
    ) -> Result<SourceInfo, DataSourceError> {
        let parsed = import::parse(bytes)?;
        let mut sources = self.sources.lock().map_err(|_| poisoned())?;
        let table = match sources.iter().find(|s| s.server == server && s.uri == uri) {
            Some(existing) => existing.table.clone(),
            None => unique_table_name(server, uri, &sources),
        };
        let mut writer = self.db()?.writer.lock().map_err(|_| poisoned())?;
        write_table(&mut writer, &table, &parsed)
            .map_err(|e| DataSourceError::Database(e.to_string()))?;
        let info = SourceInfo {
            table,
            server: server.to_string(),
            uri: uri.to_string(),
            rows: parsed.rows.len(),
            columns: parsed.columns,
        };
        sources.retain(|s| !(s.server == server && s.uri == uri));
        sources.push(info.clone());
        Ok(info)
    }

    /// Every imported source, in import order.
    pub fn list(&self) -> Vec<SourceInfo> {
        self.sources.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The first `n` rows of a table, as JSON values (for summaries).
    pub fn sample(&self, table: &str, n: usize) -> Result<QueryResult, DataSourceError> {
        let limits = QueryLimits { max_rows: n, ..self.limits };
        self.query_with(&format!("SELECT * FROM {} LIMIT {n}", quote(table)), limits)
    }

    /// Run one read-only query within the configured limits.
    pub fn query(&self, sql: &str) -> Result<QueryResult, DataSourceError> {
        self.query_with(sql, self.limits)
    }

    fn query_with(&self, sql: &str, limits: QueryLimits) -> Result<QueryResult, DataSourceError> {
        let reader = self.db()?.reader.lock().map_err(|_| poisoned())?;
        query::run(&reader, sql, limits)
    }
}

fn poisoned() -> DataSourceError {
    DataSourceError::Database("a previous operation panicked".into())
}

/// `"name"` with inner quotes doubled.
pub(crate) fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

fn write_table(
    conn: &mut Connection,
    table: &str,
    parsed: &import::Parsed,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(&format!("DROP TABLE IF EXISTS {}", quote(table)))?;
    let columns: Vec<String> = parsed
        .columns
        .iter()
        .map(|c| format!("{} {}", quote(&c.name), c.column_type.sql()))
        .collect();
    tx.execute_batch(&format!("CREATE TABLE {} ({})", quote(table), columns.join(", ")))?;
    {
        let placeholders = vec!["?"; parsed.columns.len()].join(", ");
        let mut insert =
            tx.prepare(&format!("INSERT INTO {} VALUES ({placeholders})", quote(table)))?;
        for row in &parsed.rows {
            let values = row
                .iter()
                .zip(&parsed.columns)
                .map(|(cell, column)| sql_value(cell.as_deref(), column.column_type));
            insert.execute(params_from_iter(values))?;
        }
    }
    tx.commit()
}

fn sql_value(cell: Option<&str>, column_type: ColumnType) -> rusqlite::types::Value {
    use rusqlite::types::Value as Sql;
    let Some(text) = cell else { return Sql::Null };
    match column_type {
        ColumnType::Integer => {
            text.trim().parse().map(Sql::Integer).unwrap_or_else(|_| Sql::Text(text.to_string()))
        }
        ColumnType::Real => {
            text.trim().parse().map(Sql::Real).unwrap_or_else(|_| Sql::Text(text.to_string()))
        }
        ColumnType::Text => Sql::Text(text.to_string()),
    }
}

/// `{server}_{file stem}`, lower-case `[a-z0-9_]`, unique among other sources.
fn unique_table_name(server: &str, uri: &str, taken: &[SourceInfo]) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let last = path.trim_end_matches('/').rsplit(['/', ':']).next().unwrap_or(path);
    let stem = last.rsplit_once('.').map_or(last, |(stem, _)| stem);
    let mut base: String = format!("{server}_{stem}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
        .collect();
    while base.contains("__") {
        base = base.replace("__", "_");
    }
    let mut base = base.trim_matches('_').chars().take(48).collect::<String>();
    if base.is_empty() {
        base = "data".to_string();
    }
    if base.starts_with(|c: char| c.is_ascii_digit()) || base.starts_with("sqlite_") {
        base = format!("t_{base}");
    }
    let mut name = base.clone();
    let mut n = 2;
    while taken.iter().any(|s| s.table == name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn the_database_is_created_at_first_use_private_and_removed_with_the_sources() {
        use std::os::unix::fs::PermissionsExt as _;
        let sources = DataSources::new(QueryLimits::default()).expect("sources");
        assert_eq!(sources.directory(), None, "nothing on disk before a first use");
        sources.import_csv("s", "demo://a.csv", b"x,y\n1,2\n").expect("import");
        let dir = sources.directory().expect("created").to_path_buf();
        let mode = |p: &std::path::Path| {
            std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
        };
        assert_eq!(mode(&dir), 0o700);
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let path = entry.expect("entry").path();
            assert_eq!(mode(&path), 0o600, "{}", path.display());
        }
        assert_eq!(sources.query("SELECT y FROM s_a").expect("query").rows.len(), 1);
        drop(sources);
        assert!(!dir.exists(), "removed with the sources");
    }

    #[test]
    fn the_reader_connection_itself_refuses_writes_and_attach() {
        let db = DataSources::new(QueryLimits::default()).expect("db");
        db.import_csv("s", "a.csv", b"x\n1\n").expect("import");
        let reader = db.db().expect("created").reader.lock().expect("reader");
        for sql in [
            "CREATE TABLE z(a)",
            "DELETE FROM s_a",
            "ATTACH ':memory:' AS m",
            "PRAGMA query_only = OFF; DELETE FROM s_a",
        ] {
            assert!(reader.execute_batch(sql).is_err(), "{sql} must fail on the reader");
        }
        drop(reader);
        assert_eq!(
            db.query("SELECT count(*) FROM s_a").expect("intact").rows,
            vec![vec![Value::from(1)]]
        );
    }

    #[test]
    fn table_names() {
        let none: Vec<SourceInfo> = Vec::new();
        assert_eq!(unique_table_name("docs", "demo://data/cities.csv", &none), "docs_cities");
        assert_eq!(
            unique_table_name("my-srv", "file:///x/Sales 2024.CSV?v=2", &none),
            "my_srv_sales_2024"
        );
        assert_eq!(unique_table_name("1", "x://", &none), "t_1");
        let taken = vec![SourceInfo {
            table: "docs_cities".into(),
            server: "docs".into(),
            uri: "a".into(),
            rows: 0,
            columns: vec![],
        }];
        assert_eq!(unique_table_name("docs", "other://cities.csv", &taken), "docs_cities_2");
    }
}
