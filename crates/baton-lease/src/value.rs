//! What a value in a lock record may be: which characters, and how many
//! bytes. [`crate::record`] reads and writes every field by these rules, and
//! the claims ([`crate::Claims`]) keep their keys and their field within
//! them. This module owns the rules and nothing else: it never reads,
//! writes or judges a record.

/// The longest value a field may have, but `claims=`.
pub const MAX_VALUE_BYTES: usize = 256;
/// The longest value `claims=` may have: one claim per job sharing the lock.
/// (Builds before it could grow allowed 256 bytes here, like any field: a
/// longer one makes the record unreadable to them, which they refuse and
/// never break on their own.)
pub const MAX_CLAIMS_BYTES: usize = 61_440;

/// Whether `s` may be written as a field value: 1 to [`MAX_VALUE_BYTES`]
/// printable ASCII characters, no space.
pub fn is_valid_value(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_VALUE_BYTES && s.bytes().all(|b| b.is_ascii_graphic())
}
