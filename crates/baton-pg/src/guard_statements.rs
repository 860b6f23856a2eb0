//! Every statement on the job guards' table, `baton.job_guards`: the only
//! SQL that reads or writes it. [`crate::guards`] runs them; besides, the
//! lease's conditional grant sends [`TAKE_WITH_GRANT`] behind itself
//! ([`crate::Leases::acquire_guarding`]), and a store value's first look
//! at a job's guard has [`SELECT`] ride behind the ledger's next read
//! (`crate::kept`).
//!
//! What these statements never do: make a guard name a lock whose holder
//! under that fence is held back after a switch of servers, or move a
//! guard that names another lock ([`SET`] is sent only once `guards` has
//! judged that lock's holder gone).

/// Whether the holder of lock `$1` under fence `$2` is held back after a
/// switch of servers: the switch's stamp and the hold's end (its TTL and
/// grace, from its row) when it is, else no row.
pub(crate) const HELD_BACK: &str = "
WITH hold AS MATERIALIZED (SELECT baton.switched() AS at)
SELECT baton.micros(hold.at),
       baton.micros(hold.at + (l.ttl_ms + coalesce(l.grace_ms, 0)) * interval '1 millisecond')
FROM baton.leases l, hold
WHERE l.name = $1 AND l.fence = $2 AND l.state = 'held'
  AND hold.at + (l.ttl_ms + coalesce(l.grace_ms, 0)) * interval '1 millisecond'
      > clock_timestamp()";

/// Makes the job's guard name lock `$2` and fence `$3` when it has none, or
/// when it names `$2` already (this lock's own lease excludes its other
/// runs by itself), unless the holder of `$2` under `$3` is held back after
/// a switch ([`HELD_BACK`]'s condition); a row when it did. A guard naming
/// another lock is left alone, to be judged
/// ([`Leases::elsewhere`](crate::Leases::elsewhere)). The conflict path
/// locks the row as `FOR UPDATE` would, and reads its newest commit.
pub(crate) const INSERT: &str = "
INSERT INTO baton.job_guards AS g (job, lock_name, fence, taken)
SELECT $1, $2, $3, clock_timestamp()
WHERE NOT EXISTS (
    SELECT 1 FROM baton.leases l
    WHERE l.name = $2 AND l.fence = $3 AND l.state = 'held'
      AND (SELECT baton.switched())
          + (l.ttl_ms + coalesce(l.grace_ms, 0)) * interval '1 millisecond'
          > clock_timestamp())
ON CONFLICT (job) DO UPDATE SET fence = EXCLUDED.fence, taken = EXCLUDED.taken
WHERE g.lock_name = EXCLUDED.lock_name
RETURNING job";

/// [`INSERT`] for the lease lock `$2` holds with token `$3`, at its fence,
/// sent behind its conditional grant
/// ([`crate::Leases::acquire_guarding`]): job `$1`'s guard is made, or
/// moved to that fence when it names `$2` already, only while the row
/// carries the token and its holder is not held back after a switch, as
/// [`INSERT`] decides for that fence; a row when it was. Nothing when the
/// grant was refused.
pub(crate) const TAKE_WITH_GRANT: &str = "
INSERT INTO baton.job_guards AS g (job, lock_name, fence, taken)
SELECT $1, $2, l.fence, clock_timestamp()
FROM baton.leases l
WHERE l.name = $2 AND l.state = 'held' AND l.token = $3
  AND (SELECT baton.switched())
      + (l.ttl_ms + coalesce(l.grace_ms, 0)) * interval '1 millisecond'
      <= clock_timestamp()
ON CONFLICT (job) DO UPDATE SET fence = EXCLUDED.fence, taken = EXCLUDED.taken
WHERE g.lock_name = EXCLUDED.lock_name
RETURNING job";

/// The lock and fence `$1`'s guard names; no row when it has none.
pub(crate) const SELECT: &str = "SELECT lock_name, fence FROM baton.job_guards WHERE job = $1";

/// Makes job `$1`'s guard name lock `$2` and fence `$3`, whatever it
/// named: sent only once the lock it named was judged (`crate::guards`).
pub(crate) const SET: &str = "
UPDATE baton.job_guards SET lock_name = $2, fence = $3, taken = clock_timestamp()
WHERE job = $1";
