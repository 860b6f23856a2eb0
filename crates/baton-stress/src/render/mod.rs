//! Renderers: pure functions from a [`crate::results::Campaign`] to text,
//! one format per file. Writing the text anywhere is [`crate::out`]'s job.

pub(crate) mod json;
pub(crate) mod table;
