//! Every rule of the judgement, with a scripted liveness and fixed clocks.

use super::*;
use crate::liveness::GroupState;
use crate::record::Free;
use std::sync::Mutex;

struct Script {
    process: ProcessState,
    group: GroupState,
    /// The job group's leader (pid 43), when it answers otherwise than
    /// the holder.
    leader: Option<ProcessState>,
    /// Who the group's members run as.
    owners: Option<Vec<u32>>,
    asked: Mutex<Vec<String>>,
}

impl Script {
    fn new(process: ProcessState, group: GroupState) -> Self {
        Self {
            process,
            group,
            leader: None,
            owners: None,
            asked: Mutex::new(Vec::new()),
        }
    }

    fn leader(mut self, state: ProcessState) -> Self {
        self.leader = Some(state);
        self
    }

    fn owners(mut self, uids: &[u32]) -> Self {
        self.owners = Some(uids.to_vec());
        self
    }
}

impl Liveness for Script {
    fn process(&self, pid: u32, start: u64) -> ProcessState {
        self.asked
            .lock()
            .unwrap()
            .push(format!("process {pid} {start}"));
        match self.leader {
            Some(state) if pid == 43 => state,
            _ => self.process,
        }
    }
    fn group(&self, pgid: u32, _leader_start: Option<u64>) -> GroupState {
        self.asked.lock().unwrap().push(format!("group {pgid}"));
        self.group
    }
    fn group_owners(&self, _pgid: u32) -> Option<Vec<u32>> {
        self.owners.clone()
    }
    fn user_name(&self, uid: u32) -> Option<String> {
        (uid == 1001).then(|| "mallory".to_owned())
    }
}

fn here() -> Observer {
    Observer {
        host: "h1".into(),
        machine: Some("m1".into()),
        boot: Some("b1".into()),
        pidns: Some(7),
    }
}

const T0: i64 = 1_800_000_000;

fn now(secs_after: i64) -> Now {
    Now {
        wall: Timestamp::from_second(T0 + secs_after).unwrap(),
        boot: Duration::from_secs((1000 + secs_after) as u64),
    }
}

/// A lease taken and last renewed at T0 (boot clock 1000 s) by pid 42 on h1.
fn held() -> Held {
    Held {
        fence: Fence::new(10),
        token: "0123456789abcdef".parse().unwrap(),
        pid: 42,
        host: "h1".into(),
        acquired: Timestamp::from_second(T0).unwrap(),
        renewed: Timestamp::from_second(T0).unwrap(),
        ttl: Duration::from_secs(30),
        run: None,
        machine: Some("m1".into()),
        boot: Some("b1".into()),
        pidns: Some(7),
        pstart: Some(555),
        renewed_boot: Some(Duration::from_secs(1000)),
        pgid: None,
        jstart: None,
        leader: crate::record::Leader::Command,
        uid: None,
        grace: None,
        occ: None,
        exe: None,
        budget: None,
        claims: crate::Claims::default(),
    }
}

fn judge(body: &Body, at: i64, live: &dyn Liveness) -> Verdict {
    decide(Some(body), None, &here(), now(at), &Policy::default(), live)
}

#[test]
fn no_file_and_free_markers_are_free() {
    let live = Script::new(ProcessState::Alive, GroupState::Empty);
    assert_eq!(
        decide(None, None, &here(), now(0), &Policy::default(), &live),
        Verdict::Absent
    );
    let free = Free {
        version: 3,
        fence: Some(Fence::new(3)),
        released: None,
        occ: None,
        claims: crate::Claims::default(),
    };
    assert!(judge(&Body::Free(free), 0, &live).claimable());
}

#[test]
fn a_live_renewing_holder_is_respected_at_any_age() {
    let live = Script::new(ProcessState::Alive, GroupState::Empty);
    let mut h = held();
    // Renewed one second ago, after running for a week: live.
    h.renewed_boot = Some(Duration::from_secs(1000 + 7 * 86_400 - 1));
    let v = judge(&Body::Held(h), 7 * 86_400, &live);
    assert!(matches!(v, Verdict::Live { skew: None, .. }), "{v:?}");
    assert_eq!(
        *live.asked.lock().unwrap(),
        vec!["process 42 555".to_string()]
    );
}

#[test]
fn a_live_holder_that_stopped_renewing_is_hung_never_broken() {
    let live = Script::new(ProcessState::Alive, GroupState::Empty);
    for secs in [31, 3600, 86_400 * 365] {
        let v = judge(&Body::Held(held()), secs, &live);
        assert!(matches!(v, Verdict::Hung { .. }), "{secs}: {v:?}");
        assert!(!v.claimable());
    }
    // At exactly the TTL it is still live.
    assert!(matches!(
        judge(&Body::Held(held()), 30, &live),
        Verdict::Live { .. }
    ));
}

#[test]
fn an_unreadable_process_counts_as_alive() {
    let live = Script::new(ProcessState::Unknown, GroupState::Empty);
    assert!(matches!(
        judge(&Body::Held(held()), 10, &live),
        Verdict::Live { .. }
    ));
    assert!(matches!(
        judge(&Body::Held(held()), 100, &live),
        Verdict::Hung { .. }
    ));
}

#[test]
fn a_dead_holder_is_broken_at_once_even_when_its_renewal_is_fresh() {
    for (state, death) in [
        (ProcessState::Gone, Death::ProcessGone),
        (ProcessState::Zombie, Death::Zombie),
        (ProcessState::Reused, Death::PidReused),
    ] {
        let live = Script::new(state, GroupState::Empty);
        let v = judge(&Body::Held(held()), 1, &live);
        assert_eq!(
            v,
            Verdict::Dead {
                holder: Holder::V3(held()),
                evidence: death
            }
        );
        assert!(v.claimable());
    }
}

#[test]
fn a_dead_holder_whose_job_group_lives_is_orphaned() {
    let mut h = held();
    h.pgid = Some(43);
    for group in [GroupState::Members, GroupState::Unknown] {
        let live = Script::new(ProcessState::Gone, group);
        let v = judge(&Body::Held(h.clone()), 5000, &live);
        assert_eq!(
            v,
            Verdict::Orphaned {
                holder: Holder::V3(h.clone()),
                pgid: 43,
                strangers: None,
            }
        );
        assert!(!v.claimable());
    }
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    assert!(matches!(
        judge(&Body::Held(h), 1, &live),
        Verdict::Dead { .. }
    ));
}

#[test]
fn a_contained_jobs_group_whose_init_is_gone_holds_nothing_of_the_job() {
    use crate::record::Leader;
    let mut h = held();
    h.pgid = Some(43);
    h.jstart = Some(777);
    h.leader = Leader::NamespaceInit;
    // The init the record names is gone (or a zombie, or its pid another
    // process's): whatever now runs in group 43 is not the step. Dead.
    for init in [
        ProcessState::Gone,
        ProcessState::Zombie,
        ProcessState::Reused,
    ] {
        for group in [GroupState::Members, GroupState::Unknown] {
            let live = Script::new(ProcessState::Gone, group).leader(init);
            let v = judge(&Body::Held(h.clone()), 1, &live);
            assert!(
                matches!(
                    v,
                    Verdict::Dead {
                        evidence: Death::ProcessGone,
                        ..
                    }
                ),
                "{init:?} {group:?}: {v:?}"
            );
        }
    }
    // Init alive (the command exited, init reaps what is left), or not
    // readable: the step may run. Orphaned, never dead.
    for init in [ProcessState::Alive, ProcessState::Unknown] {
        let live = Script::new(ProcessState::Gone, GroupState::Members).leader(init);
        let v = judge(&Body::Held(h.clone()), 1, &live);
        assert!(matches!(v, Verdict::Orphaned { pgid: 43, .. }), "{v:?}");
    }
    // A live holder is never asked about its group.
    let live = Script::new(ProcessState::Alive, GroupState::Members).leader(ProcessState::Gone);
    assert!(matches!(
        judge(&Body::Held(h.clone()), 1, &live),
        Verdict::Live { .. }
    ));
    // Without the leader's start time nothing verifies it: the group counts.
    h.jstart = None;
    let live = Script::new(ProcessState::Gone, GroupState::Members).leader(ProcessState::Gone);
    assert!(matches!(
        judge(&Body::Held(h), 1, &live),
        Verdict::Orphaned { .. }
    ));
}

#[test]
fn an_uncontained_group_of_other_users_stays_orphaned_and_says_so() {
    let mut h = held();
    h.pgid = Some(43);
    h.jstart = Some(777);
    h.uid = Some(0);
    let live = Script::new(ProcessState::Gone, GroupState::Members)
        .leader(ProcessState::Gone)
        .owners(&[1001]);
    let v = judge(&Body::Held(h.clone()), 1, &live);
    let Verdict::Orphaned {
        strangers: Some(s), ..
    } = &v
    else {
        panic!("{v:?}");
    };
    assert!(!v.claimable());
    let text = s.to_string();
    assert!(text.contains("uid 1001 (mallory)"), "{text}");
    assert!(text.contains("holder's uid 0"), "{text}");
    assert!(text.contains("reusing the group id"), "{text}");
    // One member of the holder's own, a live leader, an unknown owner, or
    // a record without the holder's uid: no such report.
    let cases = [
        Script::new(ProcessState::Gone, GroupState::Members)
            .leader(ProcessState::Gone)
            .owners(&[0, 1001]),
        Script::new(ProcessState::Gone, GroupState::Members)
            .leader(ProcessState::Alive)
            .owners(&[1001]),
        Script::new(ProcessState::Gone, GroupState::Members).leader(ProcessState::Gone),
    ];
    for live in cases {
        let v = judge(&Body::Held(h.clone()), 1, &live);
        assert!(
            matches!(
                v,
                Verdict::Orphaned {
                    strangers: None,
                    ..
                }
            ),
            "{v:?}"
        );
    }
    h.uid = None;
    let live = Script::new(ProcessState::Gone, GroupState::Members)
        .leader(ProcessState::Gone)
        .owners(&[1001]);
    assert!(matches!(
        judge(&Body::Held(h), 1, &live),
        Verdict::Orphaned {
            strangers: None,
            ..
        }
    ));
}

/// A lease of this host name and machine id, boot `b0`, last renewed
/// `secs` after this boot began (this boot began at T0 - 1000 s: `now(0)`'s
/// boot clock reads 1000 s).
fn from_boot_b0(secs_after_boot: i64) -> Held {
    let mut h = held();
    h.boot = Some("b0".into());
    let t = Timestamp::from_second(T0 - 1000 + secs_after_boot).unwrap();
    h.acquired = t;
    h.renewed = t;
    h.renewed_boot = Some(Duration::from_secs(5));
    h
}

#[test]
fn a_lease_from_an_earlier_boot_of_this_machine_is_dead() {
    let live = Script::new(ProcessState::Alive, GroupState::Members);
    // Renewed a minute before this boot began, judged at once after it.
    let h = from_boot_b0(-60);
    let v = judge(&Body::Held(h), -990, &live);
    assert!(
        matches!(
            v,
            Verdict::Dead {
                evidence: Death::Rebooted,
                ..
            }
        ),
        "{v:?}"
    );
    assert!(
        live.asked.lock().unwrap().is_empty(),
        "a pid from another boot means nothing"
    );
}

#[test]
fn a_cloned_machine_renewing_since_this_boot_is_judged_like_another_host() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    // Same host name and machine id, another boot id, renewed after this
    // boot began (or less than the tolerance before it): a clone of this
    // machine, alive as far as anyone here can tell. Judged by TTL + grace
    // on the wall clock (30 s + 30 s), never broken at once.
    for renewed in [1000, 0, -1] {
        let h = from_boot_b0(renewed);
        // Judged from this boot's first second on.
        let at = renewed - 1000;
        let v = judge(&Body::Held(h.clone()), at.max(-1000), &live);
        assert!(matches!(v, Verdict::Live { .. }), "{renewed}: {v:?}");
        let v = judge(&Body::Held(h.clone()), at + 60, &live);
        assert!(matches!(v, Verdict::Live { .. }), "{renewed}: {v:?}");
        let v = judge(&Body::Held(h), at + 61, &live);
        assert!(matches!(v, Verdict::Expired { .. }), "{renewed}: {v:?}");
    }
    // Just past the tolerance before this boot: an earlier boot's.
    let v = judge(&Body::Held(from_boot_b0(-2)), -990, &live);
    assert!(
        matches!(
            v,
            Verdict::Dead {
                evidence: Death::Rebooted,
                ..
            }
        ),
        "{v:?}"
    );
    // The same lease judged later, by a boot clock that counted a suspend
    // as the wall clock did: still this boot's, still a clone's.
    let h = from_boot_b0(100);
    let n = Now {
        wall: Timestamp::from_second(T0 - 1000 + 130).unwrap(),
        boot: Duration::from_secs(130),
    };
    let v = decide(
        Some(&Body::Held(h)),
        None,
        &here(),
        n,
        &Policy::default(),
        &live,
    );
    assert!(matches!(v, Verdict::Live { .. }), "{v:?}");
    assert!(live.asked.lock().unwrap().is_empty());
}

#[test]
fn a_holder_that_cannot_be_checked_waits_out_ttl_plus_grace_by_the_wall_clock() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    let mut other_host = held();
    other_host.host = "h2".into();
    other_host.machine = Some("m2".into());
    other_host.boot = Some("b2".into());
    let mut other_ns = held();
    other_ns.pidns = Some(8);
    let mut no_machine = held();
    no_machine.boot = Some("b0".into());
    no_machine.machine = None;
    let mut no_pstart = held();
    no_pstart.pstart = None;
    for h in [other_host, other_ns, no_machine, no_pstart] {
        // TTL 30 s + grace 30 s.
        assert!(
            matches!(
                judge(&Body::Held(h.clone()), 60, &live),
                Verdict::Live { .. }
            ),
            "{h:?}"
        );
        let v = judge(&Body::Held(h.clone()), 61, &live);
        assert!(matches!(v, Verdict::Expired { .. }), "{v:?}");
        assert!(v.claimable());
    }
    assert!(live.asked.lock().unwrap().is_empty());
}

#[test]
fn a_stamp_from_the_future_is_respected_and_reported() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    let mut h = held();
    h.host = "h2".into();
    h.boot = Some("b2".into());
    let v = judge(&Body::Held(h), -3600, &live);
    match v {
        Verdict::Live { skew: Some(s), .. } => assert_eq!(s, SignedDuration::from_secs(3600)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wall_clock_step_does_not_move_a_same_host_judgement() {
    let live = Script::new(ProcessState::Alive, GroupState::Empty);
    // The wall clock jumps an hour ahead; the boot clock says 5 s passed.
    let n = Now {
        wall: Timestamp::from_second(T0 + 3600).unwrap(),
        boot: Duration::from_secs(1005),
    };
    let v = decide(
        Some(&Body::Held(held())),
        None,
        &here(),
        n,
        &Policy::default(),
        &live,
    );
    assert!(matches!(v, Verdict::Live { .. }), "{v:?}");
}

#[test]
fn v2_leases_are_judged_by_v2s_rule() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    let v2 = |at: Option<i64>| {
        Body::V2(V2Lease {
            pid: Some(1),
            at: at.map(|s| Timestamp::from_second(T0 + s).unwrap()),
            token: None,
        })
    };
    assert!(matches!(
        judge(&v2(Some(0)), 7200, &live),
        Verdict::Live { .. }
    ));
    assert!(matches!(
        judge(&v2(Some(0)), 7201, &live),
        Verdict::Expired { .. }
    ));
    assert!(matches!(
        judge(&v2(Some(60)), 0, &live),
        Verdict::Live { skew: Some(_), .. }
    ));
    // No readable stamp: the file's mtime.
    let mtime = Some(Timestamp::from_second(T0).unwrap());
    let p = Policy::default();
    assert!(matches!(
        decide(Some(&v2(None)), mtime, &here(), now(100), &p, &live),
        Verdict::Live { .. }
    ));
    assert!(matches!(
        decide(Some(&v2(None)), mtime, &here(), now(7201), &p, &live),
        Verdict::Expired { .. }
    ));
    assert!(live.asked.lock().unwrap().is_empty());
}

#[test]
fn an_empty_file_is_a_record_being_written_for_seconds_then_abandoned() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    let mtime = Some(Timestamp::from_second(T0).unwrap());
    let p = Policy::default();
    assert_eq!(p.empty_grace, Duration::from_secs(5));
    let judge = |at: i64, m| decide(Some(&Body::Empty), m, &here(), now(at), &p, &live);
    assert!(matches!(judge(0, mtime), Verdict::Writing { .. }));
    assert!(matches!(judge(5, mtime), Verdict::Writing { .. }));
    assert!(matches!(judge(-5, mtime), Verdict::Writing { .. }));
    // What flock(1) leaves behind: empty, its mutex free, minutes old.
    let v = judge(6, mtime);
    assert!(matches!(v, Verdict::Abandoned { .. }) && v.claimable());
    assert!(matches!(judge(7200, mtime), Verdict::Abandoned { .. }));
    // A stamp far in the future is no writer at work either.
    assert!(matches!(judge(-3600, mtime), Verdict::Abandoned { .. }));
    assert!(matches!(judge(0, None), Verdict::Abandoned { .. }));
    assert!(live.asked.lock().unwrap().is_empty());
}

#[test]
fn a_holder_in_another_pid_namespace_of_this_kernel_is_judged_by_the_boot_clock() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    let mut h = held();
    h.pidns = Some(8);
    // The wall clock jumps a day ahead; by the boot clock 50 s passed.
    let n = Now {
        wall: Timestamp::from_second(T0 + 86_400).unwrap(),
        boot: Duration::from_secs(1050),
    };
    let v = decide(
        Some(&Body::Held(h.clone())),
        None,
        &here(),
        n,
        &Policy::default(),
        &live,
    );
    assert!(matches!(v, Verdict::Live { .. }), "{v:?}");
    assert!(matches!(
        judge(&Body::Held(h), 61, &live),
        Verdict::Expired { .. }
    ));
    assert!(live.asked.lock().unwrap().is_empty());
}

#[test]
fn the_holders_declared_grace_is_respected_when_longer() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    let mut h = held();
    h.host = "h2".into();
    h.boot = Some("b2".into());
    h.grace = Some(Duration::from_secs(300));
    assert!(matches!(
        judge(&Body::Held(h.clone()), 300, &live),
        Verdict::Live { .. }
    ));
    assert!(matches!(
        judge(&Body::Held(h.clone()), 331, &live),
        Verdict::Expired { .. }
    ));
    // A shorter declared grace never shortens the judge's own.
    h.grace = Some(Duration::from_secs(1));
    assert!(matches!(
        judge(&Body::Held(h), 60, &live),
        Verdict::Live { .. }
    ));
}

#[test]
fn foreign_and_unreadable_records_are_refused_at_any_age() {
    let live = Script::new(ProcessState::Gone, GroupState::Empty);
    let mtime = Some(Timestamp::from_second(0).unwrap());
    for body in [
        Body::Foreign(ForeignVersion::InferredV1),
        Body::Foreign(ForeignVersion::Declared(4)),
        Body::Foreign(ForeignVersion::Unreadable("next".into())),
        Body::Unreadable("garbage".into()),
    ] {
        let v = decide(
            Some(&body),
            mtime,
            &here(),
            now(86_400 * 3650),
            &Policy::default(),
            &live,
        );
        assert!(matches!(v, Verdict::Refused(_)) && !v.claimable(), "{v:?}");
    }
}
