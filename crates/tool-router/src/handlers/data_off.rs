//! Data sources left out of the build (the `data-sources` feature off): no SQLite, no data
//! tools, and a CSV resource is read as the text it is. The names stay, so a host's code that
//! mentions the tools builds either way.

use std::sync::Arc;

use rmcp::model::ResourceContents;

use crate::handler::ToolHandler;
use crate::handlers::{Failed, Produced};
use crate::spec::ToolSpec;

/// Name of the query tool (not offered in this build).
pub const QUERY_MCP_DATA: &str = "query_mcp_data";
/// Name of the listing tool (not offered in this build).
pub const LIST_MCP_DATA_SOURCES: &str = "list_mcp_data_sources";

/// Never made in this build: a router's data sources are always `None`.
pub(crate) enum DataSources {}

/// No tools.
pub(crate) fn data_tools(_: Option<Arc<DataSources>>) -> Vec<(ToolSpec, Arc<dyn ToolHandler>)> {
    Vec::new()
}

/// Never asked (no data sources), and nothing is CSV to this build.
pub(crate) fn is_csv(_: &ResourceContents, _: &str) -> bool {
    false
}

/// Never reached: there are no data sources to import into.
pub(crate) async fn import_csv(
    data: Arc<DataSources>,
    _: &str,
    _: &str,
    _: Vec<ResourceContents>,
) -> Result<Produced, Failed> {
    match *data {}
}
