//! What `ToolRouter` offers the host beside dispatch: prompts, apps, skills, and the notice of
//! resources that changed since the model read them.

pub(crate) mod apps;
pub(crate) mod notices;
pub(crate) mod prompts;
pub(crate) mod skills;
