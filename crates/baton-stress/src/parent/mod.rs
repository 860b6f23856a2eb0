//! The parent's side of a trial: spawning contenders, talking to them,
//! signalling and killing them ([`pool`]), and running one trial of one
//! scenario against one implementation ([`trial`]).

pub(crate) mod pool;
pub(crate) mod trial;
