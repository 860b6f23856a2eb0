//! `baton history` without a job shows every job's runs, newest first; its
//! times are RFC 3339 in `--json` and on each job's wall clock in text.

use crate::friction::times::is_rfc3339;
use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

fn two_jobs() -> Sched {
    Sched::new(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"Asia/Kolkata\"\n\
         [jobs.alpha]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n\
         [jobs.beta]\nschedule = \"0 4 * * *\"\ntimezone = \"America/New_York\"\n\
         run = \"true\"\n",
    )
}

/// Whether `line` starts with the human form of a time:
/// `2026-12-01 21:24:51 +05:30`.
fn starts_human(line: &str) -> bool {
    let Some(head) = line.get(..26) else {
        return false;
    };
    let b = head.as_bytes();
    b[4] == b'-'
        && b[10] == b' '
        && b[13] == b':'
        && b[19] == b' '
        && matches!(b[20], b'+' | b'-')
        && b[23] == b':'
        && head.bytes().filter(u8::is_ascii_digit).count() == 18
}

#[test]
fn history_without_a_job_shows_every_jobs_runs_newest_first() {
    let s = two_jobs();
    for job in ["alpha", "beta", "alpha"] {
        let o = s.run(&["run", job]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let v = s.json(&["history", "--json"]);
    let runs = v.as_array().unwrap();
    let jobs: Vec<&str> = runs.iter().map(|r| r["job"].as_str().unwrap()).collect();
    assert_eq!(jobs, ["alpha", "beta", "alpha"], "{v:#}");
    let started: Vec<jiff::Timestamp> = runs
        .iter()
        .map(|r| {
            let t = r["started"].as_str().unwrap();
            assert!(is_rfc3339(t), "{t}");
            t.parse().unwrap()
        })
        .collect();
    assert!(started.windows(2).all(|w| w[0] >= w[1]), "{started:?}");
    // --limit counts runs in all.
    assert_eq!(
        s.json(&["history", "--json", "--limit", "2"])
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let o = s.run(&["history"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let heads: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads.len(), 3, "{text}");
    for (line, job) in heads.iter().zip(["alpha", "beta", "alpha"]) {
        assert!(starts_human(line), "not the human form: {line}");
        assert!(line[26..].starts_with(&format!("  {job}  ok")), "{line}");
    }
    // Each job's runs on its own wall clock.
    assert!(heads[0][20..26].eq("+05:30"), "{}", heads[0]);
    assert!(
        matches!(&heads[1][20..26], "-05:00" | "-04:00"),
        "{}",
        heads[1]
    );
}

#[test]
fn history_limit_0_is_refused_rather_than_saying_no_runs_yet() {
    let s = two_jobs();
    let o = s.run(&["run", "alpha"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for args in [
        &["history", "--limit", "0"][..],
        &["history", "alpha", "--limit", "0", "--json"][..],
    ] {
        let o = s.run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        assert!(stderr(&o).contains("--limit"), "{args:?}: {}", stderr(&o));
    }
    let o = s.run(&["history", "--limit", "1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("alpha"), "{}", stdout(&o));
}
