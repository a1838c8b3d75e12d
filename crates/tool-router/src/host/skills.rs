//! Every server's skills, as a host shows them (the model's side is `crate::skills`).

use router_protocol::Skills;

use crate::router::ToolRouter;

impl ToolRouter {
    /// Every server's skills (SEP-2640): name, description, server and `SKILL.md` uri — what a
    /// host puts in its system prompt so the model knows to `load_mcp_skill` one. Lists each
    /// server that declares the extension (waiting for the ones starting; an idle one is
    /// started unless its catalog says it has none); nothing of a skill is fetched.
    pub async fn skills(&self) -> Skills {
        match self.backend() {
            Some(backend) => crate::skills::gather(backend.as_ref()).await,
            None => Skills::default(),
        }
    }
}
