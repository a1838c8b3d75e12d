//! What `ToolRouter` offers the host beside dispatch: prompts and apps.

pub(crate) mod apps;
pub(crate) mod prompts;
