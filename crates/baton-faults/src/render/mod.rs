//! The renderers: pure functions from the results to text.

pub(crate) mod json;
pub(crate) mod table;
