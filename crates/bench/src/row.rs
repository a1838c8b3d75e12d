//! One row of the benchmark table.

/// One line of the report.
pub(crate) struct Row {
    pub(crate) name: &'static str,
    pub(crate) baseline: String,
    pub(crate) router: String,
    /// router / baseline (or baseline / router for throughput); see `target`.
    pub(crate) ratio: f64,
    pub(crate) target: &'static str,
    pub(crate) met: Option<bool>,
}
