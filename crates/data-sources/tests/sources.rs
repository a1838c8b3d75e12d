//! Imports and queries against the real embedded SQLite database.

use std::time::Duration;

use data_sources::{DataSourceError, DataSources, QueryLimits};
use serde_json::json;

const CITIES: &[u8] = b"city,country,population,area_km2\nTokyo,Japan,13960000,2194.07\nDelhi,India,16787941,1484.0\nOsaka,Japan,2752412,225.21\n";

fn sources() -> DataSources {
    DataSources::new(QueryLimits { max_rows: 2, timeout: Duration::from_millis(500) })
        .expect("database")
}

#[test]
fn import_then_query() {
    let db = sources();
    let info = db.import_csv("docs", "demo://data/cities.csv", CITIES).expect("import");
    assert_eq!(info.table, "docs_cities");
    assert_eq!(info.rows, 3);
    assert_eq!(
        serde_json::to_value(&info.columns).expect("json"),
        json!([{"name": "city", "type": "text"}, {"name": "country", "type": "text"}, {"name": "population", "type": "integer"}, {"name": "area_km2", "type": "real"}])
    );
    let result = db.query("SELECT city, population FROM docs_cities WHERE country = 'Japan' ORDER BY population DESC").expect("query");
    assert_eq!(
        serde_json::to_value(&result).expect("json"),
        json!({"columns": ["city", "population"], "rows": [["Tokyo", 13960000], ["Osaka", 2752412]], "rowCount": 2, "truncated": false})
    );
    // Row cap.
    let all = db.query("SELECT * FROM docs_cities").expect("query");
    assert_eq!((all.row_count, all.truncated), (2, true));
    let with = db
        .query("WITH j AS (SELECT * FROM docs_cities) SELECT count(*) AS n FROM j")
        .expect("with");
    assert_eq!(with.rows, vec![vec![json!(3)]]);
}

#[test]
fn writes_attach_and_multiple_statements_are_refused_and_data_stays() {
    let db = sources();
    db.import_csv("docs", "demo://data/cities.csv", CITIES).expect("import");
    let refused = |sql: &str| db.query(sql).expect_err(sql).to_string();
    assert_eq!(
        refused("DROP TABLE docs_cities"),
        "query refused: only a single SELECT or WITH statement is allowed, not DROP"
    );
    assert_eq!(
        refused("INSERT INTO docs_cities VALUES ('x','y',1,1)"),
        "query refused: only a single SELECT or WITH statement is allowed, not INSERT"
    );
    assert_eq!(
        refused("ATTACH DATABASE '/tmp/x.db' AS x"),
        "query refused: only a single SELECT or WITH statement is allowed, not ATTACH"
    );
    assert_eq!(
        refused("SELECT 1; DROP TABLE docs_cities"),
        "query refused: only one statement is allowed (remove what follows the first `;`)"
    );
    assert_eq!(refused("   "), "query refused: the query is empty");
    // A write hidden behind a WITH: SQLite itself says it is not read-only.
    assert_eq!(
        refused("WITH x AS (SELECT 1) DELETE FROM docs_cities"),
        "query refused: the statement would modify the database"
    );
    // Even a function that writes cannot: the connection is read-only.
    assert!(
        refused("SELECT * FROM pragma_user_version() ; PRAGMA user_version = 3")
            .starts_with("query refused")
    );
    assert_eq!(refused("SELECT * FROM nope"), "query failed: no such table: nope");
    let still = db.query("SELECT count(*) FROM docs_cities").expect("intact");
    assert_eq!(still.rows, vec![vec![json!(3)]]);
}

#[test]
fn runaway_queries_are_interrupted() {
    let db = sources();
    let started = std::time::Instant::now();
    let err = db
        .query("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r")
        .expect_err("interrupted");
    assert_eq!(err, DataSourceError::Query("interrupted after 500ms (time limit)".into()));
    assert!(started.elapsed() < Duration::from_secs(3));
    // The connection still works afterwards.
    assert_eq!(db.query("SELECT 1 AS one").expect("ok").rows, vec![vec![json!(1)]]);
}

#[test]
fn reimport_replaces_and_names_stay_unique() {
    let db = sources();
    db.import_csv("docs", "demo://data/cities.csv", CITIES).expect("import");
    db.import_csv("docs", "demo://data/cities.csv", b"city\nParis\n").expect("re-import");
    let other = db.import_csv("web", "demo://data/cities.csv", CITIES).expect("other server");
    assert_eq!(other.table, "web_cities");
    let again = db.import_csv("docs", "other://cities.csv", CITIES).expect("other uri");
    assert_eq!(again.table, "docs_cities_2");
    let list = db.list();
    assert_eq!(
        list.iter().map(|s| (s.table.as_str(), s.rows)).collect::<Vec<_>>(),
        [("docs_cities", 1), ("web_cities", 3), ("docs_cities_2", 3)]
    );
    assert_eq!(
        db.query("SELECT city FROM docs_cities").expect("q").rows,
        vec![vec![json!("Paris")]]
    );
}

#[test]
fn failed_imports_leave_no_table() {
    let db = sources();
    let err = db.import_csv("docs", "x.csv", b"a,b\n1\n").expect_err("ragged");
    assert_eq!(err.to_string(), "CSV import failed: line 2 has 1 fields, but the header has 2");
    assert!(db.list().is_empty());
    assert!(db.query("SELECT * FROM docs_x").is_err());
}
