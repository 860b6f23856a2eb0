//! Foreign lock files: v1 refused and untouched, v2 judged by v2's rule.

use crate::support::{Env, code, stderr};

fn plant(env: &Env, body: &str) {
    std::fs::create_dir_all(env.lock("job").parent().unwrap()).unwrap();
    std::fs::write(env.lock("job"), body).unwrap();
}

#[test]
fn a_v1_lock_file_refuses_with_75_and_is_left_untouched() {
    let env = Env::new();
    let body = "pid=1 at=2020-01-01T00:00:00+00:00\n";
    plant(&env, body);
    let marker = env.path("ran");
    let o = env.exec_sh("job", &[], &format!("touch {}", marker.display()));
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(!marker.exists());
    let err = stderr(&o);
    for needle in [
        "v1",
        "v3",
        "left untouched",
        "remedy",
        env.lock("job").to_str().unwrap(),
    ] {
        assert!(err.contains(needle), "{err:?} lacks {needle:?}");
    }
    assert_eq!(std::fs::read_to_string(env.lock("job")).unwrap(), body);
    assert_eq!(crate::support::verdict(&env, "job"), "foreign-version");
}

#[test]
fn a_v2_lease_is_judged_by_v2s_rule() {
    let env = Env::new();
    use baton_lease::Clock;
    let young = baton_lease::SystemClock
        .wall()
        .to_zoned_datetime(jiff::tz::TimeZone::fixed(jiff::tz::offset(5)))
        .strftime("%Y-%m-%dT%H:%M:%S%:z")
        .to_string();
    plant(
        &env,
        &format!("version=2 pid=1 at={young} token=9f3c1ab27de40518\n"),
    );
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    // With a 1 s threshold the same lease is stale a moment later.
    crate::support::pause(1100);
    let o = env.exec_sh("job", &["--v2-stale-after", "1s"], "true");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("expired"), "{}", stderr(&o));
}

#[test]
fn lock_break_force_clears_a_foreign_file() {
    let env = Env::new();
    plant(&env, "version=9 who=knows\n");
    let o = env.run(&["lock", "break", "job"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    let o = env.run(&["lock", "break", "job", "--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(crate::support::stdout(&o).contains("version=9 who=knows"));
    assert_eq!(code(&env.exec_sh("job", &[], "true")), 0);
}
