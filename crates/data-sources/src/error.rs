//! Why an import or a query failed, in words the model reads.

/// Why an import or a query failed. The text is model-visible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DataSourceError {
    /// The CSV could not be imported.
    #[error("CSV import failed: {0}")]
    Csv(String),
    /// The query is not a single read-only SELECT/WITH statement.
    #[error("query refused: {0}")]
    Refused(String),
    /// SQLite rejected or aborted the query.
    #[error("query failed: {0}")]
    Query(String),
    /// The database itself failed.
    #[error("data source database error: {0}")]
    Database(String),
}
