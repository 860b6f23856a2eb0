//! Whether a token holds a job's lease, for a command the run's steps call
//! (`baton watermark settle`): the action runs only while it does.

/// What [`super::Store::while_held`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vouch {
    /// The lease is held with that token, with this fence and run id; the
    /// action ran.
    Holder {
        /// The lease's fence.
        fence: u64,
        /// The run the lease names.
        run: Option<String>,
    },
    /// It is not, and the action did not run: the text says what stands
    /// there instead.
    NotHolder(String),
    /// Nothing names the lease at all (`where` says where it would be): no
    /// run holds it, and the action did not run.
    Missing(String),
}
