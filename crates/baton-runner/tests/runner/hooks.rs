//! Helper commands (`hook::run`): they read their input, see their
//! environment, run in a process group of their own, and are bounded in
//! time: past their limit their whole group is stopped, SIGKILL following
//! SIGTERM. Their failures are told, never raised.

use std::process::Stdio;
use std::time::Duration;

use baton_runner::hook::run;
use baton_runner::{HookCommand, HookOutcome};

use crate::support::{
    Dir, PATIENCE, alive, background, eventually, read_pid, wait_file, write_pid,
};

listed!(TESTS:
    a_hook_reads_its_input_and_environment_and_its_end_is_told,
    a_hook_runs_in_a_process_group_of_its_own,
    a_hook_past_its_limit_is_stopped_with_its_whole_group,
);

fn shell(script: String) -> HookCommand {
    HookCommand::Shell(script)
}

fn a_hook_reads_its_input_and_environment_and_its_end_is_told() {
    let dir = Dir::new();
    let (input, env, out) = (dir.path("input"), dir.path("env"), dir.path("out"));
    let o = run(
        &shell(format!(
            "cat > {}; printf %s \"$WHO\" > {}; echo said",
            input.display(),
            env.display()
        )),
        b"{\"kind\":\"failed\"}",
        &[("WHO".into(), "baton".into())],
        Stdio::from(std::fs::File::create(&out).unwrap()),
        PATIENCE,
    );
    assert_eq!(o, HookOutcome::Done);
    assert_eq!(std::fs::read(&input).unwrap(), b"{\"kind\":\"failed\"}");
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "baton");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "said\n");
    let quiet = || Stdio::null();
    match run(&shell("exit 3".into()), b"", &[], quiet(), PATIENCE) {
        HookOutcome::Failed(how) => assert!(how.contains('3'), "{how}"),
        other => panic!("a hook that exits 3 {other:?}"),
    }
    let argv = |a: &[&str]| HookCommand::Argv(a.iter().map(|s| (*s).to_owned()).collect());
    assert_eq!(
        run(&argv(&["sh", "-c", "exit 0"]), b"", &[], quiet(), PATIENCE),
        HookOutcome::Done
    );
    for missing in [argv(&[]), argv(&["/nonexistent/hook"])] {
        assert!(
            matches!(
                run(&missing, b"", &[], quiet(), PATIENCE),
                HookOutcome::NotStarted(_)
            ),
            "{missing}"
        );
    }
}

fn a_hook_runs_in_a_process_group_of_its_own() {
    let dir = Dir::new();
    let ids = dir.path("ids");
    let o = run(
        &shell(format!(
            "read -r p _ _ _ pg _ < /proc/self/stat; echo \"$p $pg\" > {}",
            ids.display()
        )),
        b"",
        &[],
        Stdio::null(),
        PATIENCE,
    );
    assert_eq!(o, HookOutcome::Done);
    let ids = std::fs::read_to_string(&ids).unwrap();
    let (pid, group) = ids.trim().split_once(' ').unwrap();
    assert_eq!(pid, group, "the hook does not lead a group of its own");
    let ours = rustix::process::getpgrp()
        .as_raw_nonzero()
        .get()
        .to_string();
    assert_ne!(group, ours, "the hook runs in its caller's group");
}

fn a_hook_past_its_limit_is_stopped_with_its_whole_group() {
    let dir = Dir::new();
    let (me, child) = (dir.path("hook"), dir.path("child"));
    let limit = Duration::from_millis(1500);
    // The hook and the process it starts are both deaf to SIGTERM.
    let o = run(
        &shell(format!(
            "{} {}; trap '' TERM; {}; while :; do sleep 0.05; done",
            background("sleep 120", &child, false, true),
            wait_file(&child),
            write_pid(&me)
        )),
        b"",
        &[],
        Stdio::null(),
        limit,
    );
    assert_eq!(o, HookOutcome::TimedOut(limit));
    assert!(!alive(read_pid(&me)), "the hook outlived its limit");
    let child = read_pid(&child);
    eventually("the hook's child to die with its group", || !alive(child));
}
