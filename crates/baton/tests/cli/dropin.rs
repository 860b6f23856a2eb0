//! `jobs.d/` drop-ins and `[daemon]` through the real binary: every command
//! that loads the configuration sees a drop-in's job, `baton config` says
//! which file each value came from, and a bad drop-in is a configuration
//! error (exit 2) naming its file.

use std::path::PathBuf;

use crate::sched::{Sched, lines};
use crate::support::{code, stderr, stdout};

fn dropin(s: &Sched, name: &str, text: &str) -> PathBuf {
    let d = s.env.path("jobs.d");
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn dropin_jobs_run_by_tick_and_run_and_show_in_config() {
    let s = Sched::new("[jobs.main]\nevery = \"1h\"\nrun = \"true\"\n");
    let counter = s.env.path("counter");
    // Due now whatever the minute: one occurrence a year, caught up for 400 days.
    dropin(
        &s,
        "count.toml",
        &format!(
            "# counts\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
             run = \"echo ran >> {}\"\n",
            counter.display()
        ),
    );
    crate::sched::known_since(&s, &["count"], crate::sched::before_new_year());
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&counter), 1, "the tick did not run the drop-in's job");
    let o = s.run(&["run", "count"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        lines(&counter),
        2,
        "baton run did not run the drop-in's job"
    );

    let o = s.run(&["config"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("[jobs.count]"), "{text}");
    assert!(text.contains("jobs.d/count.toml:2"), "{text}");
    assert!(text.contains("[daemon]"), "{text}");
    let v = s.json(&["config", "--json"]);
    let src = v["jobs"]["count"]["schedule"]["source"].as_str().unwrap();
    assert!(src.ends_with("jobs.d/count.toml:2"), "{src}");
    assert!(
        v["jobs"]["count"]["backoff"]["source"]
            .as_str()
            .unwrap()
            .starts_with("[scheduler]")
    );
    assert_eq!(v["jobs"]["main"]["every"]["value"], "1h");

    let o = s.run(&["status"]);
    assert!(stdout(&o).contains("count"), "{}", stdout(&o));
    let o = s.run(&["history", "count"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn dropin_mistakes_exit_2_name_the_file_and_create_nothing() {
    let cases = [
        ("main.toml", "every = \"1h\"\nrun = \"true\"\n", "jobs.main"),
        (
            "bad name.toml",
            "every = \"1h\"\nrun = \"true\"\n",
            "is not a job name",
        ),
        (
            "x.toml",
            "every = \"1h\"\nrun = \"true\"\nretires = 3\n",
            "jobs.x.retires",
        ),
        (
            "x.toml",
            "[scheduler]\nretries = 1\n",
            "belongs in baton.toml",
        ),
        (
            "x.toml",
            "[jobs.y]\nevery = \"1h\"\nrun = \"true\"\n",
            "jobs.y",
        ),
        ("x.toml", "every = \n", "not valid TOML"),
    ];
    for (file, toml, needle) in cases {
        let s = Sched::new("[jobs.main]\nevery = \"1h\"\nrun = \"true\"\n");
        dropin(&s, file, toml);
        for cmd in [&["tick"][..], &["run", "main"], &["status"], &["config"]] {
            let o = s.run(cmd);
            assert_eq!(code(&o), 2, "{cmd:?} {toml:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(err.contains(needle), "{cmd:?}: {err:?} lacks {needle:?}");
            assert!(
                err.contains(&format!("jobs.d/{file}")),
                "{err:?} names no file"
            );
            assert_eq!(err.lines().count(), 1, "{err:?}");
        }
        assert!(!s.env.state().exists(), "{toml:?}: something was created");
    }
    // A directory where a drop-in would be.
    let s = Sched::new("[jobs.main]\nevery = \"1h\"\nrun = \"true\"\n");
    std::fs::create_dir_all(s.env.path("jobs.d/dir.toml")).unwrap();
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("jobs.d/dir.toml"), "{}", stderr(&o));
}

#[test]
fn dropin_daemon_settings_show_with_their_source_and_bad_ones_exit_2() {
    let s = Sched::new(
        "[daemon]\nlisten = \"[::1]:9000\"\ntoken_file = \"secret/token\"\n\n\
         [jobs.main]\nevery = \"1h\"\nrun = \"true\"\n",
    );
    let v = s.json(&["config", "--json"]);
    let d = &v["daemon"];
    assert_eq!(d["listen"]["value"], "[::1]:9000", "{v}");
    assert!(
        d["listen"]["source"]
            .as_str()
            .unwrap()
            .ends_with("baton.toml:5")
    );
    let token = s.env.path("secret/token");
    assert_eq!(d["token_file"]["value"], token.to_str().unwrap());
    assert_eq!(d["shutdown_grace"]["value"], "1m");
    assert_eq!(d["shutdown_grace"]["source"], "default");
    let text = stdout(&s.run(&["config"]));
    assert!(text.contains("listen = \"[::1]:9000\""), "{text}");

    s.write("[daemon]\nlisten = \"localhost\"\n[jobs.main]\nevery = \"1h\"\nrun = \"true\"\n");
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("baton.toml:5: daemon.listen"), "{err}");
    assert!(err.contains("IP:PORT"), "{err}");
}

/// A `baton.toml` that says nothing (as while it is rewritten in place)
/// is refused, exit 2, by every command: read as every default it would
/// name another state directory, and a drop-in's job would run beside its
/// own run there. Nothing runs.
#[test]
fn an_empty_main_file_is_refused_and_nothing_runs() {
    let s = Sched::new("");
    let counter = s.env.path("counter");
    dropin(
        &s,
        "count.toml",
        &format!(
            "schedule = \"0 0 1 1 *\"\nrun = \"echo ran >> {}\"\n",
            counter.display()
        ),
    );
    for text in ["", "\n  \n# being rewritten\n"] {
        std::fs::write(s.config(), text).unwrap();
        for args in [&["run", "count"][..], &["tick"], &["config"], &["status"]] {
            let o = s.run(args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(err.contains("is empty"), "{args:?}: {err}");
        }
    }
    assert!(!counter.exists(), "a job ran on an empty configuration");
}
