//! `baton lock show` and `baton lock break` on their own.

use crate::support::{Env, code, stderr, stdout};

#[test]
fn show_describes_each_state() {
    let env = Env::new();
    // An absent lock is shown, and exits 3: a typo must be visible to a script.
    let o = env.run(&["lock", "show", "never"]);
    assert_eq!(code(&o), 3);
    assert!(stdout(&o).contains("never  absent"), "{}", stdout(&o));
    assert_eq!(code(&env.exec_sh("job", &[], "true")), 0);
    let b = env.hold("busy", &[], 60);
    let o = env.run(&["lock", "show", "--all", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let by_name = |n: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|x| x["lock"] == n)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_name("job")["verdict"], "free");
    assert!(by_name("job")["fence"].as_u64().unwrap() > 0);
    let busy = by_name("busy");
    assert_eq!(busy["verdict"], "live");
    assert_eq!(busy["pid"].as_u64(), Some(u64::from(b.id())));
    assert!(busy["pgid"].as_u64().is_some());
    assert_eq!(env.end(b), 143);
}

#[test]
fn break_refuses_a_live_lease_and_a_name_that_is_a_path() {
    let env = Env::new();
    let b = env.hold("job", &[], 60);
    let o = env.run(&["lock", "break", "job"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("not provably dead"), "{}", stderr(&o));
    assert_eq!(env.end(b), 143);
    let o = env.run(&["lock", "break", "../etc"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = env.run(&["lock", "show"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}
