//! CSV resources as queryable data sources (as an agent run retrieves them): a CSV is imported
//! into an embedded SQLite database as a table, and the model queries it read-only.
//!
//! - One database per [`DataSources`], in a private temporary directory removed on drop.
//! - Imports go through a writer connection; queries through a second connection opened
//!   `SQLITE_OPEN_READ_ONLY` with `PRAGMA query_only`, `ATTACH` disabled (limit 0), one statement
//!   per call (anything after the first statement is refused) that SQLite itself reports as
//!   read-only, and which must start with `SELECT`, `WITH` or `VALUES`. Queries are interrupted
//!   after a time limit and return at most a row cap.
//! - Tables are named after the resource (sanitised, unique per server and URI); importing the
//!   same server and URI again replaces its table.
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod error;
mod import;
mod query;
mod store;

pub use error::DataSourceError;
pub use import::{ColumnInfo, ColumnType};
pub use query::{QueryLimits, QueryResult};
pub use store::{DataSources, SourceInfo};
