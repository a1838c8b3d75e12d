//! What a call's result becomes before the model and the host see it: the content policy
//! (budgets, images, blobs), tool results kept past the budget and paged as resources, their
//! parts and links, and the bounds on what an event carries.

pub(crate) mod budget;
pub(crate) mod content;
pub(crate) mod event_bounds;
pub(crate) mod json_text;
pub mod kept;
pub(crate) mod links;
pub(crate) mod parts;
