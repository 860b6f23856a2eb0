//! Drop-ins made from a job's JSON table, checked, written and deleted:
//! the text reads back as the same job, a check says what `baton config`
//! would, and writers at once leave one whole file and no temporary ones.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::config::{Action, Command, load};

const MAIN: &str =
    "[scheduler]\ntimezone = \"UTC\"\n\n[jobs.main]\nevery = \"1h\"\nrun = \"true\"\n";

fn setup() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("baton.toml");
    std::fs::write(&path, MAIN).unwrap();
    (tmp, path)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_json_table_becomes_canonical_toml_that_reads_back_as_the_same_job() {
    let table = json!({
        "schedule": "*/5 * * * *",
        "timezone": "Europe/Berlin",
        "retries": 2,
        "no_retry_exit_codes": [2, 3],
        "enabled": false,
        "env": {"K": "V", "QUOTE": "a \"b\"\n"},
        "steps": [
            {"name": "a", "run": ["x", "y"], "env": {"S": "1"}},
            {"name": "b", "run": "echo hi", "timeout": "5m"}
        ],
        "checks": [{"name": "c", "run": "true"}]
    });
    let text = job_toml("web", &table).unwrap();
    assert!(!text.contains("[jobs"), "{text}");
    assert!(text.contains("[[steps]]"), "{text}");
    let (_tmp, path) = setup();
    let c = check_put(&path, &Overrides::default(), "web", &text).unwrap();
    let j = &c.jobs["web"];
    assert_eq!(j.when.value.text, "*/5 * * * *");
    assert_eq!(j.timezone.value.name, "Europe/Berlin");
    assert_eq!(j.policy.retries.value, 2);
    assert_eq!(j.policy.no_retry_exit_codes.value, vec![2, 3]);
    assert!(!j.enabled.value);
    assert_eq!(j.steps.len(), 2);
    assert_eq!(
        j.steps[0].action.value,
        Action::Command(Command::Argv(vec!["x".into(), "y".into()]))
    );
    assert_eq!(
        j.steps[0].env,
        vec![
            ("K".into(), "V".into()),
            ("QUOTE".into(), "a \"b\"\n".into()),
            ("S".into(), "1".into())
        ]
    );
    assert_eq!(
        j.steps[1].action.value,
        Action::Command(Command::Shell("echo hi".into()))
    );
    assert_eq!(j.checks[0].name, "c");
    // Written and loaded, it is the same job, from the drop-in's lines.
    write(&path, "web", &text).unwrap();
    let loaded = load(&path, &Overrides::default()).unwrap();
    assert_eq!(loaded.jobs["web"], *j);
    assert!(
        loaded.jobs["web"]
            .when
            .provenance()
            .contains("jobs.d/web.toml:")
    );
    // The simplest body.
    let text = job_toml("hi", &json!({"schedule": "*/5 * * * *", "run": "echo hi"})).unwrap();
    assert_eq!(text, "run = \"echo hi\"\nschedule = \"*/5 * * * *\"\n");
}

#[test]
fn a_table_toml_cannot_hold_is_refused_with_the_key() {
    let cases = [
        (json!("run"), "jobs.j: is a string: expected an object"),
        (json!(null), "jobs.j: is null: expected an object"),
        (json!([1]), "jobs.j: is an array"),
        (
            json!({"run": "x", "timeout": null}),
            "jobs.j.timeout: is null",
        ),
        (
            json!({"steps": [{"run": "x", "env": {"A": null}}]}),
            "jobs.j.steps[0].env.A: is null",
        ),
        (
            json!({"run": "x", "output_limit": u64::MAX}),
            "jobs.j.output_limit: = 18446744073709551615: TOML integers are at most",
        ),
        (
            json!({"jobs": {"j": {"run": "x"}}}),
            "jobs.j.jobs: is not a job's key",
        ),
    ];
    for (v, needle) in cases {
        let msg = job_toml("j", &v).unwrap_err().to_string();
        assert!(msg.contains(needle), "{v}: {msg:?} lacks {needle:?}");
    }
    let msg = job_toml("a/b", &json!({})).unwrap_err().to_string();
    assert!(msg.contains("\"a/b\" is not a job name"), "{msg}");
    // A float is TOML's; the reader then says what it thinks of it.
    let text = job_toml("j", &json!({"every": "1h", "run": "x", "retries": 1.5})).unwrap();
    let (_tmp, path) = setup();
    let msg = check_put(&path, &Overrides::default(), "j", &text)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("jobs.j.retries"), "{msg}");
}

#[test]
fn check_put_refuses_with_the_message_baton_config_gives() {
    let bad = "every = \"1h\"\nrun = \"true\"\nretires = 3\n";
    let (tmp, path) = setup();
    let checked = check_put(&path, &Overrides::default(), "x", bad)
        .unwrap_err()
        .to_string();
    assert!(!tmp.path().join("jobs.d").exists(), "a check wrote");
    std::fs::create_dir(tmp.path().join("jobs.d")).unwrap();
    std::fs::write(tmp.path().join("jobs.d/x.toml"), bad).unwrap();
    let loaded = load(&path, &Overrides::default()).unwrap_err().to_string();
    assert_eq!(checked, loaded);
    assert!(
        checked.contains("jobs.d/x.toml:3: jobs.x.retires"),
        "{checked}"
    );
    // A good text replaces the bad file in the check, not on disk.
    let good = "every = \"1h\"\nrun = \"true\"\n";
    let c = check_put(&path, &Overrides::default(), "x", good).unwrap();
    assert!(c.jobs.contains_key("x") && c.jobs.contains_key("main"));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("jobs.d/x.toml")).unwrap(),
        bad
    );
    // Another broken drop-in makes every put fail, as it fails every load.
    let msg = check_put(&path, &Overrides::default(), "y", good)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("jobs.d/x.toml:3"), "{msg}");
}

#[test]
fn a_job_of_baton_toml_cannot_be_put_or_deleted() {
    let (tmp, path) = setup();
    let text = "every = \"1h\"\nrun = \"true\"\n";
    let msgs = [
        check_put(&path, &Overrides::default(), "main", text)
            .unwrap_err()
            .to_string(),
        check_delete(&path, &Overrides::default(), "main")
            .unwrap_err()
            .to_string(),
        write(&path, "main", text).unwrap_err().to_string(),
        delete(&path, "main").unwrap_err().to_string(),
    ];
    for m in &msgs {
        assert!(m.contains(&format!("{}:4", path.display())), "{m}");
        assert!(m.contains("lives in baton.toml"), "{m}");
        assert!(m.contains("over HTTP"), "{m}");
    }
    assert!(msgs[0].contains("cannot be replaced"));
    assert!(msgs[1].contains("cannot be deleted"));
    assert!(!tmp.path().join("jobs.d").exists());
    for bad in ["", "../x", "a/b", ".hidden/../../x"] {
        assert!(check_put(&path, &Overrides::default(), bad, text).is_err());
        assert!(write(&path, bad, text).is_err());
        assert!(delete(&path, bad).is_err());
    }
    assert!(!tmp.path().join("jobs.d").exists());
}

#[test]
fn write_replaces_whole_and_delete_removes() {
    let (tmp, path) = setup();
    let d = tmp.path().join("jobs.d");
    let first = "every = \"1h\"\nrun = \"one\"\n";
    let written = write(&path, "x", first).unwrap();
    assert_eq!(written, d.join("x.toml"));
    assert_eq!(std::fs::read_to_string(&written).unwrap(), first);
    write(&path, "x", "every = \"2h\"\nrun = \"two\"\n").unwrap();
    let c = load(&path, &Overrides::default()).unwrap();
    assert_eq!(
        c.jobs["x"].steps[0].action.value,
        Action::Command(Command::Shell("two".into()))
    );
    assert_eq!(names_in(&d), ["x.toml"]);
    let without = check_delete(&path, &Overrides::default(), "x").unwrap();
    assert!(!without.jobs.contains_key("x"));
    assert!(written.exists(), "a check removed the file");
    assert!(delete(&path, "x").unwrap());
    assert!(!delete(&path, "x").unwrap());
    assert!(names_in(&d).is_empty());
    assert!(
        !load(&path, &Overrides::default())
            .unwrap()
            .jobs
            .contains_key("x")
    );
}

/// A drop-in may hold secrets (`env`, an HTTP step's headers): like the
/// ledger, it is readable by its owner alone, rewritten or not.
#[test]
fn a_dropin_is_written_owner_only_and_stays_so_when_rewritten() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, path) = setup();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let text = "every = \"1h\"\nrun = \"true\"\n[env]\nTOKEN = \"s3cret\"\n";
    let written = write(&path, "x", text).unwrap();
    assert_eq!(mode(&written), 0o600);
    // One written by an older baton, readable by others, becomes private.
    std::fs::set_permissions(&written, std::fs::Permissions::from_mode(0o644)).unwrap();
    write(&path, "x", text).unwrap();
    assert_eq!(mode(&written), 0o600);
}

#[test]
fn writers_at_once_leave_one_whole_file_and_no_temporary_ones() {
    let (tmp, path) = setup();
    let texts: Vec<String> = (0..8)
        .map(|i| {
            // Each writer's text is distinct and long enough to be written
            // in more than one piece if it were not whole.
            let pad = format!("{i}").repeat(64 * 1024);
            format!("every = \"1h\"\nrun = \"echo {i}\"\nenv = {{ PAD = \"{pad}\" }}\n")
        })
        .collect();
    for round in 0..5 {
        std::thread::scope(|s| {
            for t in &texts {
                let path = &path;
                s.spawn(move || write(path, "x", t).unwrap());
            }
        });
        let d = tmp.path().join("jobs.d");
        assert_eq!(names_in(&d), ["x.toml"], "round {round}");
        let on_disk = std::fs::read_to_string(d.join("x.toml")).unwrap();
        assert!(
            texts.contains(&on_disk),
            "round {round}: the file is no writer's whole text"
        );
        assert!(load(&path, &Overrides::default()).is_ok());
    }
}
