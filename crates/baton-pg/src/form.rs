//! The two shapes of the acquiring critical section. Both give the same
//! verdicts; they differ in round trips, which the benchmark measures.

/// How an acquisition talks to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// `BEGIN` and `SELECT … FOR UPDATE` (pipelined: one round trip), the
    /// judgement in the client with the row locked, then the grant and
    /// `COMMIT` (pipelined: a second round trip).
    Locking,
    /// One conditional `UPDATE … RETURNING` that takes a free row (with its
    /// occurrence claim) in a single round trip and a single implicit
    /// transaction. A row that is held (or absent) falls back to
    /// [`Form::Locking`], so that a holder is always judged by
    /// `baton_lease::decide`, never by a condition in SQL.
    #[default]
    Conditional,
}
