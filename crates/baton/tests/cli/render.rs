//! `baton render` through the real binary: the committed renders of the
//! example are fresh, systemd accepts the units, per-job entries fire when
//! `baton calendar` says the jobs do, and refusals render nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::sched::Sched;
use crate::support::{BATON, Env, code, stderr, stdout};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example_config() -> PathBuf {
    root().join("examples/capture-scheduler/baton.toml")
}

fn render(args: &[&str]) -> Output {
    Command::new(BATON)
        .arg("render")
        .args(args)
        .env_remove("BATON_CONFIG")
        .env_remove("BATON_STATE_DIR")
        .output()
        .unwrap()
}

/// Every file under `dir`, by path relative to it, with its text.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_owned();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn render_deploy_is_fresh() {
    let env = Env::new();
    let out = env.path("deploy");
    let o = Command::new("bash")
        .arg(root().join("deploy/capture-scheduler/render.sh"))
        .arg(&out)
        .env("BATON", BATON)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let committed: Vec<_> = files(&root().join("deploy/capture-scheduler"))
        .into_iter()
        .filter(|(p, _)| p != Path::new("render.sh"))
        .collect();
    let fresh = files(&out);
    let names = |v: &[(PathBuf, String)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    let regenerate = "cargo build -p baton && deploy/capture-scheduler/render.sh";
    assert_eq!(
        names(&committed),
        names(&fresh),
        "deploy/capture-scheduler/ does not hold the renders of the example: run `{regenerate}`"
    );
    for ((path, old), (_, new)) in committed.iter().zip(&fresh) {
        assert_eq!(
            old,
            new,
            "deploy/capture-scheduler/{} differs from a fresh render: run `{regenerate}`",
            path.display()
        );
    }
}

#[test]
fn render_systemd_units_pass_systemd_analyze_verify() {
    need_systemd_analyze();
    let env = Env::new();
    let config = example_config();
    let mut units = Vec::new();
    // Each form in its own directory: a render removes the other form's
    // units from its --out.
    for (dir, extra) in [("daemon", &[][..]), ("per-job", &["--per-job"][..])] {
        let out = env.path(dir);
        let mut args = vec!["systemd", "--config", config.to_str().unwrap()];
        args.extend(["--bin", BATON, "--out", out.to_str().unwrap()]);
        args.extend(extra);
        let o = render(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        units.extend(files(&out).into_iter().map(|(p, _)| out.join(p)));
    }
    assert_eq!(units.len(), 5, "{units:?}");
    let out = env.path("daemon");
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .args(&units)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "systemd-analyze verify complained");
    for unit in &units {
        let text = std::fs::read_to_string(unit).unwrap();
        assert!(
            !text.contains("BATON_STATE_DIR"),
            "{}: {text}",
            unit.display()
        );
    }
    let service = std::fs::read_to_string(out.join("baton.service")).unwrap();
    for line in [
        "Type=notify\n",
        "Restart=on-failure\n",
        "KillMode=mixed\n",
        // shutdown_grace 60 s + kill_grace 10 s + 30 s.
        "TimeoutStopSec=100s\n",
        "ExecReload=/bin/kill -HUP $MAINPID\n",
        // The sandbox (the package's unit is this one).
        "User=baton\n",
        "ProtectSystem=strict\n",
        "NoNewPrivileges=yes\n",
    ] {
        assert!(service.contains(line), "{line}: {service}");
    }
}

/// `baton calendar --job NAME`'s next `n` instants (UTC, RFC 3339).
fn calendar(job: &str, from: &str, n: usize) -> Vec<String> {
    let o = Command::new(BATON)
        .args(["calendar", "--job", job, "--config"])
        .arg(example_config())
        .args(["--from", from, "--count", &n.to_string(), "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["utc"].as_str().unwrap().to_owned())
        .collect()
}

const FROM: &str = "2026-01-01T00:00:07Z";

#[test]
fn render_per_job_cron_lines_fire_as_baton_calendar_says() {
    let o = render(&[
        "cron",
        "--per-job",
        "--config",
        example_config().to_str().unwrap(),
        "--host-tz",
        "UTC",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Each job's lines, read back in the zone CRON_TZ= says.
    let mut zone = "UTC".to_owned();
    let mut jobs: std::collections::BTreeMap<String, Vec<(String, String)>> = Default::default();
    for line in stdout(&o).lines() {
        if let Some(z) = line.strip_prefix("CRON_TZ=") {
            zone = z.to_owned();
        } else if !line.starts_with('#') && !line.contains('=') && !line.is_empty() {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[6], "tick", "{line}");
            assert_eq!(words[words.len() - 2], "--", "{line}");
            jobs.entry(words[words.len() - 1].to_owned())
                .or_default()
                .push((words[..5].join(" "), zone.clone()));
        }
    }
    assert_eq!(jobs.keys().collect::<Vec<_>>(), ["daily", "weekly"]);
    let from: jiff::Timestamp = FROM.parse().unwrap();
    for (job, lines) in jobs {
        let mut all = BTreeSet::new();
        for (expr, zone) in &lines {
            let s = baton_cron::Schedule::parse(expr).unwrap();
            let tz = jiff::tz::TimeZone::get(zone).unwrap();
            all.extend(s.iter_after(from, &tz).take(50).map(|t| t.to_string()));
        }
        let got: Vec<String> = all.into_iter().take(50).collect();
        assert_eq!(got, calendar(&job, FROM, 50), "{job}: {lines:?}");
    }
}

#[test]
fn render_per_job_on_calendar_fires_as_baton_calendar_says() {
    need_systemd_analyze();
    let env = Env::new();
    let out = env.path("units");
    let o = render(&[
        "systemd",
        "--per-job",
        "--config",
        example_config().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for job in ["daily", "weekly"] {
        let timer = std::fs::read_to_string(out.join(format!("baton-{job}.timer"))).unwrap();
        let specs: Vec<&str> = timer
            .lines()
            .filter_map(|l| l.strip_prefix("OnCalendar="))
            .collect();
        assert!(!specs.is_empty(), "{timer}");
        let mut all = BTreeSet::new();
        for spec in specs {
            let o = Command::new("systemd-analyze")
                .args(["calendar", "--iterations", "50", "--base-time"])
                .arg("2026-01-01 00:00:07 UTC")
                .arg(spec)
                .env("TZ", "UTC")
                .output()
                .unwrap();
            assert_eq!(code(&o), 0, "{spec}: {}", stderr(&o));
            for line in stdout(&o).lines() {
                let line = line.trim();
                let Some((label, when)) = line.split_once(": ") else {
                    continue;
                };
                if label == "Next elapse" || label.starts_with("Iter. #") {
                    // "Sat 2026-01-03 13:30:00 UTC"
                    let words: Vec<&str> = when.split_whitespace().collect();
                    assert_eq!(words[3], "UTC", "{line}");
                    all.insert(format!("{}T{}Z", words[1], words[2]));
                }
            }
        }
        let got: Vec<String> = all.into_iter().take(50).collect();
        assert_eq!(got, calendar(job, FROM, 50), "{job}: {timer}");
    }
}

#[test]
fn render_refuses_what_a_target_cannot_express_and_renders_nothing() {
    let s = Sched::new(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"Europe/Berlin\"\n\
         [jobs.berlin]\nschedule = \"30 2 * * *\"\nrun = \"true\"\n\
         [jobs.fine]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n\
         [jobs.seconds]\nschedule = \"*/10 * * * * *\"\ntimezone = \"UTC\"\nrun = \"true\"\n",
    );
    let config = s.config();
    let config = config.to_str().unwrap();
    let out = s.env.path("out");

    let o = render(&[
        "github",
        "--config",
        config,
        "--config-path-as",
        "baton.toml",
        "--bin",
        "/usr/local/bin/baton",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(!out.exists(), "something was written");
    let e = stderr(&o);
    // 02:30 repeats when Berlin's clocks go back: GitHub does not say how
    // it runs it.
    assert!(e.contains("job \"berlin\""), "{e}");
    assert!(e.contains("the clocks go back from 03:00 to 02:00"), "{e}");
    assert!(e.contains("job \"seconds\""), "{e}");
    assert!(!e.contains("\"fine\""), "{e}");

    let o = render(&["cron", "--per-job", "--config", config]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let e = stderr(&o);
    assert!(
        e.contains("job \"seconds\"") && e.contains("smallest unit is a minute"),
        "{e}"
    );
    assert!(e.contains("default form"), "{e}");
    assert!(e.contains("job \"berlin\""), "{e}");
    assert!(!e.contains("\"fine\""), "{e}");

    // The default forms run every job at the right time.
    for target in ["cron", "systemd"] {
        let o = render(&[target, "--config", config]);
        assert_eq!(code(&o), 0, "{target}: {}", stderr(&o));
    }
}

#[test]
fn render_writes_one_file_per_artefact_under_out() {
    let env = Env::new();
    let out = env.path("out");
    let config = example_config();
    let o = render(&[
        "github",
        "--config",
        config.to_str().unwrap(),
        "--bin",
        "/usr/local/bin/baton",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let names: Vec<_> = files(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        names,
        [PathBuf::from("baton-daily.yml"), "baton-weekly.yml".into()]
    );
    // On stdout, the same artefacts, each under its name.
    let o = render(&[
        "github",
        "--config",
        config.to_str().unwrap(),
        "--bin",
        "/usr/local/bin/baton",
    ]);
    let text = stdout(&o);
    assert!(text.starts_with("# ==> baton-daily.yml <==\n"), "{text}");
    assert!(text.contains("\n# ==> baton-weekly.yml <==\n"), "{text}");
}

#[test]
fn render_default_cron_is_one_tick_line_with_absolute_paths() {
    let config = example_config();
    let o = render(&["cron", "--config", config.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    // No BATON_STATE_DIR= line: it would beat the file's state_dir.
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("PATH=/"), "{text}");
    assert!(
        lines[1].starts_with(&format!("* * * * * {BATON} tick --config /")),
        "{text}"
    );
    // Same input, same bytes.
    let again = render(&["cron", "--config", config.to_str().unwrap()]);
    assert_eq!(stdout(&again), text);
}

#[test]
fn render_bad_arguments_exit_2() {
    let config = example_config();
    let config = config.to_str().unwrap();
    for args in [
        &["cron", "--config", config, "--bin", "baton"][..],
        &["cron", "--config", config, "--config-path-as", "baton.toml"][..],
        &["cron", "--config", config, "--host-tz", "Mars/Olympus"][..],
        &["crontab", "--config", config][..],
        &["cron", "--config", "/nonexistent/baton.toml"][..],
        &["env", "--per-job", "--config", config][..],
        &[
            "github",
            "--config",
            config,
            "--config-path-as",
            "/etc/baton/baton.toml",
        ][..],
    ] {
        let o = render(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
    }
}

/// The crontab and the units run `baton` with `--config` only, so the
/// file's `state_dir` decides on the host: a render for another directory
/// (`--state-dir`, `BATON_STATE_DIR`) is refused, naming both and what to
/// do, and writes nothing; the file's own directory is no conflict.
#[test]
fn render_refuses_a_state_directory_the_host_would_not_use() {
    let env = Env::new();
    let config = env.path("baton.toml");
    std::fs::write(
        &config,
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let out = env.path("out");
    let out = out.to_str().unwrap();
    for target in ["systemd", "cron"] {
        let o = render(&[
            target,
            "--config",
            config,
            "--state-dir",
            "/srv/elsewhere",
            "--out",
            out,
        ]);
        assert_eq!(code(&o), 2, "{target}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "--state-dir /srv/elsewhere is not the state directory of {config} \
                 (/var/lib/baton, state_dir at {config}:2)"
            )),
            "{target}: {err}"
        );
        assert!(err.contains("set state_dir there"), "{err}");
        assert!(err.contains("leave out --state-dir"), "{err}");
        let o = Command::new(BATON)
            .args(["render", target, "--config", config, "--out", out])
            .env_remove("BATON_CONFIG")
            .env("BATON_STATE_DIR", "/srv/elsewhere")
            .output()
            .unwrap();
        assert_eq!(code(&o), 2, "{target}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("BATON_STATE_DIR /srv/elsewhere is not the state directory"),
            "{}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("unset BATON_STATE_DIR"),
            "{}",
            stderr(&o)
        );
        assert!(!Path::new(out).exists(), "{target}: a refused render wrote");
    }
    let o = render(&[
        "systemd",
        "--config",
        config,
        "--state-dir",
        "/var/lib/baton",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let unit = stdout(&o);
    assert!(unit.contains("\nStateDirectory=baton\n"), "{unit}");
    assert!(!unit.contains("--state-dir"), "{unit}");
}

#[test]
fn render_env_per_job_says_it_has_no_meaning() {
    let config = example_config();
    let o = render(&["env", "--per-job", "--config", config.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--per-job has no meaning for env"),
        "{}",
        stderr(&o)
    );
}

/// `baton calendar --job NAME`'s next `n` instants of the configuration
/// `config`.
fn calendar_of(config: &Path, job: &str, from: &str, n: usize) -> Vec<String> {
    let o = Command::new(BATON)
        .args(["calendar", "--config"])
        .arg(config)
        .args(["--from", from, "--count", &n.to_string(), "--json"])
        .arg(format!("--job={job}"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    occurrences(&o)
}

fn occurrences(o: &Output) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["utc"].as_str().unwrap().to_owned())
        .collect()
}

/// `systemd-analyze calendar`'s next `n` instants of `spec` after `base`
/// (`YYYY-MM-DD HH:MM:SS UTC`), as RFC 3339.
fn analyze_calendar(spec: &str, base: &str, n: usize) -> Vec<String> {
    let o = Command::new("systemd-analyze")
        .args([
            "calendar",
            "--iterations",
            &n.to_string(),
            "--base-time",
            base,
            spec,
        ])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{spec}: {}", stderr(&o));
    let mut out = Vec::new();
    for line in stdout(&o).lines() {
        let Some((label, when)) = line.trim().split_once(": ") else {
            continue;
        };
        if label == "Next elapse" || label.starts_with("Iter. #") {
            let words: Vec<&str> = when.split_whitespace().collect();
            assert_eq!(words[3], "UTC", "{line}");
            out.push(format!("{}T{}Z", words[1], words[2]));
        }
    }
    out
}

#[test]
fn render_systemd_intervals_that_divide_a_day_load_and_fire_as_baton_calendar_says() {
    need_systemd_analyze();
    // Every interval that divides a day and that a calendar expression can
    // repeat: 1s to 30s dividing a minute, and whole minutes dividing a day.
    let every: Vec<u64> = (1..=86_400u64)
        .filter(|s| 86_400 % s == 0 && (60 % s == 0 || s % 60 == 0))
        .collect();
    assert_eq!(every.len(), 47);
    let mut toml =
        String::from("[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"UTC\"\n");
    for secs in &every {
        toml.push_str(&format!(
            "[jobs.e{secs}]\nevery = \"{secs}s\"\nrun = \"true\"\n"
        ));
    }
    let s = Sched::new(&toml);
    let config = s.config();
    let out = s.env.path("units");
    let o = render(&[
        "systemd",
        "--per-job",
        "--config",
        config.to_str().unwrap(),
        "--bin",
        BATON,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let units: Vec<PathBuf> = files(&out).into_iter().map(|(p, _)| out.join(p)).collect();
    assert_eq!(units.len(), 2 * every.len());
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .args(&units)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "systemd-analyze verify complained");
    for secs in &every {
        let job = format!("e{secs}");
        let timer = std::fs::read_to_string(out.join(format!("baton-{job}.timer"))).unwrap();
        let mut all = BTreeSet::new();
        for spec in timer.lines().filter_map(|l| l.strip_prefix("OnCalendar=")) {
            all.extend(analyze_calendar(spec, "2026-03-08 00:00:07 UTC", 20));
        }
        let got: Vec<String> = all.into_iter().take(20).collect();
        assert_eq!(
            got,
            calendar_of(&config, &job, "2026-03-08T00:00:07Z", 20),
            "{timer}"
        );
    }
}

#[test]
fn render_systemd_units_with_odd_characters_in_paths_pass_systemd_analyze_verify() {
    need_systemd_analyze();
    let env = Env::new();
    let weird = env.path(r#"we ird%d$HOME'x"q\b"#);
    std::fs::create_dir_all(&weird).unwrap();
    // systemd refuses quotes and backslashes in an executable's name.
    let bin_dir = env.path("my bin%d$HOME");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let bin = bin_dir.join("baton");
    std::fs::copy(BATON, &bin).unwrap();
    let config = weird.join("baton.toml");
    std::fs::write(
        &config,
        "[scheduler]\nstate_dir = \"state\"\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
    )
    .unwrap();
    let mut units = Vec::new();
    for (dir, extra) in [("daemon", &[][..]), ("per-job", &["--per-job"][..])] {
        let out = env.path(dir);
        let mut args = vec!["systemd", "--config", config.to_str().unwrap()];
        args.extend(["--bin", bin.to_str().unwrap()]);
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(extra);
        let o = render(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        units.extend(files(&out).into_iter().map(|(p, _)| out.join(p)));
    }
    // The binary is found at its odd path only when ExecStart= is escaped
    // right: systemd-analyze verify checks that it exists.
    assert_eq!(units.len(), 3, "{units:?}");
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .args(&units)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "systemd-analyze verify complained");
    let service = std::fs::read_to_string(env.path("per-job").join("baton-j.service")).unwrap();
    assert!(!service.contains("BATON_STATE_DIR"), "{service}");
}

#[test]
fn render_job_names_that_start_with_a_dash_run_through_tick() {
    // Due at once: one occurrence a year, caught up for 400 days, to a
    // ledger that knows the job since before it.
    let s = Sched::new(
        "[jobs.\"-a\"]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = [\"sh\", \"-c\", \"echo ran >> ran\"]\n\
         [jobs.\"--help\"]\nevery = \"1m\"\nrun = \"true\"\n",
    );
    crate::sched::known_since(&s, &["-a"], crate::sched::before_new_year());
    let o = render(&[
        "cron",
        "--per-job",
        "--config",
        s.config().to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let line = text.lines().find(|l| l.ends_with(" -- -a")).expect(&text);
    assert!(text.lines().any(|l| l.ends_with(" -- --help")), "{text}");
    // The rendered command, as cron's shell runs it.
    let command = line.splitn(6, ' ').nth(5).unwrap();
    let o = Command::new("sh")
        .args(["-c", command])
        .current_dir(s.env.tmp.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
    let ran = std::fs::read_to_string(s.env.path("ran")).unwrap_or_default();
    assert_eq!(ran, "ran\n", "{command}: {}", stderr(&o));
}

#[test]
fn render_to_a_full_stdout_exits_125_and_says_so() {
    let config = example_config();
    let o = Command::new(BATON)
        .args(["render", "cron", "--config", config.to_str().unwrap()])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("baton render: failed to write standard output: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn render_out_removes_its_own_stale_artefacts_and_nothing_else() {
    let s = Sched::new(
        "[jobs.kept]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n\
         [jobs.old]\nschedule = \"0 10 * * *\"\nrun = \"true\"\n",
    );
    let config = s.config();
    let out = s.env.path("out");
    let args = [
        "systemd",
        "--per-job",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    assert_eq!(code(&render(&args)), 0);
    for other in ["notes.txt", "baton.cron", "other.timer", "baton-x.yml"] {
        std::fs::write(out.join(other), "mine\n").unwrap();
    }
    s.write("[jobs.kept]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n");
    let o = render(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let names: Vec<_> = files(&out).into_iter().map(|(p, _)| p).collect();
    let want: Vec<PathBuf> = [
        "baton-kept.service",
        "baton-kept.timer",
        "baton-x.yml",
        "baton.cron",
        "notes.txt",
        "other.timer",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(names, want);
    let e = stderr(&o);
    for gone in ["baton-old.service", "baton-old.timer"] {
        assert!(
            e.contains(&format!("removed {}", out.join(gone).display())),
            "{e}"
        );
    }
}

#[test]
fn render_normalises_the_configuration_path() {
    let s = Sched::new("[jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n");
    let dir = s.env.tmp.path();
    let name = dir.file_name().unwrap().to_str().unwrap();
    let winding = dir.join("..").join(name).join(".").join("baton.toml");
    let o = render(&["cron", "--config", winding.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(&format!("--config {}\n", dir.join("baton.toml").display())),
        "{text}"
    );
    assert!(!text.contains("/./") && !text.contains("/../"), "{text}");
}

#[test]
fn render_per_job_cron_refuses_a_daylight_saving_gap_in_the_hosts_zone() {
    let s = Sched::new(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"America/New_York\"\n\
         [jobs.gap]\nschedule = \"30 2 * * *\"\nrun = \"true\"\n\
         [jobs.fold]\nschedule = \"30 1 * * *\"\nrun = \"true\"\n\
         [jobs.fine]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
    );
    let config = s.config();
    for host in ["America/New_York", "UTC"] {
        let o = render(&[
            "cron",
            "--per-job",
            "--config",
            config.to_str().unwrap(),
            "--host-tz",
            host,
        ]);
        assert_eq!(code(&o), 2, "{host}: {}", stderr(&o));
        assert_eq!(stdout(&o), "");
        let e = stderr(&o);
        assert!(e.contains("job \"gap\"") && e.contains("02:30"), "{e}");
        // A repeated time fired twice runs once: the second `baton tick --
        // fold` finds the occurrence decided.
        assert!(!e.contains("\"fold\""), "{e}");
        assert!(!e.contains("\"fine\""), "{e}");
    }
}

/// A fixed time the clocks repeat, rendered per job for cron, runs once
/// however many times cron fires it: the line runs `baton tick -- JOB`, and
/// a tick at the second 01:30 finds the first's occurrence decided.
#[test]
fn render_per_job_cron_keeps_a_repeated_time_and_a_second_tick_runs_nothing() {
    let s = Sched::new("");
    let ran = s.env.path("ran.txt");
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"America/New_York\"\n\
         [jobs.fold]\nschedule = \"30 1 * * *\"\nrun = \"echo ran >> {}\"\n",
        ran.display()
    ));
    let config = s.config();
    let o = render(&[
        "cron",
        "--per-job",
        "--config",
        config.to_str().unwrap(),
        "--host-tz",
        "America/New_York",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(" -- fold"), "{}", stdout(&o));
    // First sighting the evening before, then cron's two 01:30s of
    // 2027-11-07 (EDT, then EST).
    for at in [
        "2027-11-06 22:00:00",
        "2027-11-07 05:30:00",
        "2027-11-07 06:30:00",
    ] {
        let o = crate::first_seen::at(&s, at, &["tick", "--", "fold"]);
        assert_eq!(code(&o), 0, "{at}: {}", stderr(&o));
    }
    let ran = std::fs::read_to_string(&ran).unwrap_or_default();
    assert_eq!(ran.lines().count(), 1, "{ran}");
    let h = s.json(&["history", "fold", "--json"]);
    assert_eq!(h.as_array().map(Vec::len), Some(1), "{h}");
    assert_eq!(h[0]["occurrence"], "2027-11-07T05:30:00Z", "{h}");
}

#[test]
fn render_github_names_the_configuration_inside_the_checkout() {
    let config = example_config();
    let bin = "/usr/local/bin/baton";
    let o = render(&["github", "--config", config.to_str().unwrap(), "--bin", bin]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            r#"--config "${{ github.workspace }}"/examples/capture-scheduler/baton.toml -- daily'"#
        ),
        "{text}"
    );
    assert!(
        text.contains("BATON_STATE_DIR: '${{ runner.temp }}/baton-state'"),
        "{text}"
    );
    assert!(
        !text.contains(root().canonicalize().unwrap().to_str().unwrap()),
        "{text}"
    );
    // Outside a repository, its path inside one must be given.
    let s = Sched::new("[jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n");
    let o = render(&[
        "github",
        "--config",
        s.config().to_str().unwrap(),
        "--bin",
        bin,
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--config-path-as"), "{}", stderr(&o));
    let o = render(&[
        "github",
        "--config",
        s.config().to_str().unwrap(),
        "--config-path-as",
        "ci/./baton.toml",
        "--bin",
        bin,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(r#""${{ github.workspace }}"/ci/baton.toml -- j'"#));
}

/// The rendered units are checked by systemd itself: a machine without
/// `systemd-analyze` fails here, naming the package (`.ci/run` installs it).
pub(crate) fn need_systemd_analyze() {
    let have = Command::new("systemd-analyze").arg("--version").output();
    assert!(
        have.is_ok_and(|o| o.status.success()),
        "systemd-analyze is not installed: install Debian's `systemd` package \
         (`apt-get install systemd`) to run the rendered units' checks"
    );
}

/// `systemd-analyze calendar`'s next `n` instants of each of `specs` after
/// `base` (`YYYY-MM-DD HH:MM:SS UTC`), together, as RFC 3339: one call,
/// which fails when systemd refuses any of them.
fn analyze_union(specs: &[&str], base: &str, n: usize) -> BTreeSet<String> {
    let o = Command::new("systemd-analyze")
        .args([
            "calendar",
            "--iterations",
            &n.to_string(),
            "--base-time",
            base,
        ])
        .args(specs)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{specs:?}: {}", stderr(&o));
    let mut out = BTreeSet::new();
    for line in stdout(&o).lines() {
        let Some((label, when)) = line.trim().split_once(": ") else {
            continue;
        };
        if label == "Next elapse" || label.starts_with("Iter. #") {
            let words: Vec<&str> = when.split_whitespace().collect();
            assert_eq!(words[3], "UTC", "{line}");
            out.insert(format!("{}T{}Z", words[1], words[2]));
        }
    }
    out
}

/// The `OnCalendar=` lines of a timer.
fn on_calendar(timer: &str) -> Vec<&str> {
    timer
        .lines()
        .filter_map(|l| l.strip_prefix("OnCalendar="))
        .collect()
}

#[test]
fn render_systemd_every_weekday_set_fires_as_baton_calendar_says_for_a_year() {
    need_systemd_analyze();
    // All 127 non-empty sets of weekdays, alone and beside a day of the
    // month (cron's rule: either day field may match).
    let sets: Vec<String> = (1u32..128)
        .map(|bits| {
            (0..7)
                .filter(|d| bits & (1 << d) != 0)
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let mut toml =
        String::from("[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"Europe/Berlin\"\n");
    for (i, set) in sets.iter().enumerate() {
        toml.push_str(&format!(
            "[jobs.w{i}]\nschedule = \"30 9 * * {set}\"\nrun = \"true\"\n\
             [jobs.d{i}]\nschedule = \"30 9 1 * {set}\"\nrun = \"true\"\n"
        ));
    }
    let s = Sched::new(&toml);
    let config = s.config();
    let out = s.env.path("units");
    let o = render(&[
        "systemd",
        "--per-job",
        "--config",
        config.to_str().unwrap(),
        "--bin",
        BATON,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let units: Vec<PathBuf> = files(&out).into_iter().map(|(p, _)| out.join(p)).collect();
    assert_eq!(units.len(), 4 * sets.len());
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .args(&units)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "systemd-analyze verify complained");
    let year_end = "2027-01-01T00:00:00Z";
    for (i, set) in sets.iter().enumerate() {
        for job in [format!("w{i}"), format!("d{i}")] {
            let timer = std::fs::read_to_string(out.join(format!("baton-{job}.timer"))).unwrap();
            let got: Vec<String> =
                analyze_union(&on_calendar(&timer), "2026-01-01 00:00:07 UTC", 400)
                    .into_iter()
                    .filter(|t| t.as_str() < year_end)
                    .collect();
            let want: Vec<String> = calendar_of(&config, &job, "2026-01-01T00:00:07Z", 400)
                .into_iter()
                .filter(|t| t.as_str() < year_end)
                .collect();
            assert!(!want.is_empty(), "{job}");
            assert_eq!(got, want, "{job} ({set}): {timer}");
        }
    }
}

/// The offset changes of `zone` in 2026, each less a day and a half, as
/// `systemd-analyze --base-time` and `baton calendar --from` read them.
fn around_changes(zone: &str) -> Vec<(String, String)> {
    changes_of(zone, 2026, 36)
}

/// The offset changes of `zone` in `year`, each less `lead` hours, as
/// `systemd-analyze --base-time` and `baton calendar --from` read them.
fn changes_of(zone: &str, year: i16, lead: i64) -> Vec<(String, String)> {
    let tz = jiff::tz::TimeZone::get(zone).unwrap();
    let from: jiff::Timestamp = format!("{year}-01-01T00:00:00Z").parse().unwrap();
    tz.following(from)
        .take(2)
        .map(|t| {
            let base = t
                .timestamp()
                .checked_sub(jiff::SignedDuration::from_hours(lead))
                .unwrap();
            let utc = jiff::tz::TimeZone::UTC.to_datetime(base);
            (
                format!("{} UTC", utc.strftime("%Y-%m-%d %H:%M:%S")),
                format!("{}Z", utc.strftime("%Y-%m-%dT%H:%M:%S")),
            )
        })
        .collect()
}

/// `baton render systemd --per-job --out DIR` of one job, `job`, at `text`
/// in `zone`: its scheduler, the render's output and DIR.
fn per_job_systemd(zone: &str, job: &str, text: &str) -> (Sched, Output, PathBuf) {
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"{zone}\"\n\
         [jobs.{job}]\nschedule = \"{text}\"\nrun = \"true\"\n"
    ));
    let out = s.env.path("units");
    let o = render(&[
        "systemd",
        "--per-job",
        "--config",
        s.config().to_str().unwrap(),
        "--bin",
        BATON,
        "--out",
        out.to_str().unwrap(),
    ]);
    (s, o, out)
}

#[test]
fn render_systemd_per_job_fires_as_baton_calendar_says_at_clock_changes_or_names_the_date() {
    need_systemd_analyze();
    let schedules = [
        "30 2 * * 2",
        "30 2 * * 1-6",
        "30 1 * * *",
        "15 1,2 * * *",
        "30 2 * * *",
        "0 9 * * *",
        "0 0 * * *",
        "30 0 * * *",
        "*/15 * * * *",
        "*/15 * * * 1-5",
        "0 * * * *",
        "30 * * * *",
        "0 1 * * 0",
    ];
    let mut kept = BTreeSet::new();
    let mut refused = BTreeSet::new();
    for zone in [
        "America/New_York",
        "Europe/Berlin",
        "Australia/Lord_Howe",
        "America/Santiago",
    ] {
        for text in schedules {
            let (s, o, out) = per_job_systemd(zone, "j", text);
            let config = s.config();
            if code(&o) == 2 {
                let e = stderr(&o);
                assert!(
                    e.contains("fires at ") && e.contains(" the clocks go "),
                    "{text} in {zone}: {e}"
                );
                refused.insert((zone, text));
                continue;
            }
            assert_eq!(code(&o), 0, "{text} in {zone}: {}", stderr(&o));
            kept.insert((zone, text));
            let timer = std::fs::read_to_string(out.join("baton-j.timer")).unwrap();
            for (base, from) in around_changes(zone) {
                let got: Vec<String> = analyze_union(&on_calendar(&timer), &base, 300)
                    .into_iter()
                    .take(300)
                    .collect();
                let want = calendar_of(&config, "j", &from, 300);
                assert_eq!(got, want, "{text} in {zone} from {from}: {timer}");
            }
        }
    }
    // Tuesdays and Monday to Saturday never meet New York's changes, which
    // fall on Sundays; a fixed time in a fold runs once, the first time, as
    // baton runs it.
    for zone_text in [
        ("America/New_York", "30 2 * * 2"),
        ("America/New_York", "30 2 * * 1-6"),
        ("America/New_York", "30 1 * * *"),
        ("America/New_York", "0 9 * * *"),
        // baton runs a wildcard schedule's repeated times twice, as a UTC
        // calendar fires through them: kept, in UTC.
        ("America/New_York", "*/15 * * * *"),
        ("Europe/Berlin", "0 * * * *"),
    ] {
        assert!(kept.contains(&zone_text), "{zone_text:?} refused");
    }
    for zone_text in [
        ("America/New_York", "30 2 * * *"),
        ("Europe/Berlin", "30 2 * * *"),
        // A half-hour change moves `0 * * * *` in UTC: no UTC line holds.
        ("Australia/Lord_Howe", "0 * * * *"),
    ] {
        assert!(refused.contains(&zone_text), "{zone_text:?} kept");
    }
}

#[test]
fn render_systemd_per_job_keeps_wildcard_schedules_in_utc_where_they_fire_as_baton_calendar_says() {
    need_systemd_analyze();
    for (zone, text) in [
        ("Europe/Berlin", "* * * * *"),
        ("Europe/Berlin", "*/3 * * * *"),
        ("America/New_York", "*/15 * * * *"),
    ] {
        let (s, o, out) = per_job_systemd(zone, "j", text);
        let config = s.config();
        assert_eq!(code(&o), 0, "{text} in {zone}: {}", stderr(&o));
        let timer = std::fs::read_to_string(out.join("baton-j.timer")).unwrap();
        let specs = on_calendar(&timer);
        assert!(
            !specs.is_empty() && specs.iter().all(|c| c.ends_with(" UTC")),
            "{timer}"
        );
        assert!(
            timer.contains(&format!("instants in {zone}, its clock changes")),
            "{timer}"
        );
        // From two hours before each of 2027's changes, over the hours the
        // clocks skip or repeat: baton runs a repeated time twice.
        for (base, from) in changes_of(zone, 2027, 2) {
            let got: Vec<String> = analyze_union(&specs, &base, 300).into_iter().collect();
            let want = calendar_of(&config, "j", &from, 300);
            assert_eq!(got, want, "{text} in {zone} from {from}: {timer}");
        }
    }
}

#[test]
fn render_systemd_per_job_refuses_what_neither_its_zone_nor_utc_fires_as_baton_naming_the_dates() {
    // baton runs 02:30 once when the clocks jump past it, and systemd's
    // calendar does not; no UTC time is 02:30 in Berlin all year.
    let (_s, o, out) = per_job_systemd("Europe/Berlin", "gap", "30 2 * * *");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("job \"gap\""), "{e}");
    // The next last Sunday of March, whichever year the test runs.
    assert!(
        e.contains("-03-") && e.contains("the clocks go forward from 02:00 to 03:00"),
        "{e}"
    );
    assert!(e.contains("and in UTC, "), "{e}");
    assert!(e.contains("first differs on "), "{e}");
    assert!(!out.exists() || files(&out).is_empty(), "rendered: {e}");
}

#[test]
fn render_per_job_cron_takes_times_no_change_meets_on_a_day_they_fire() {
    let s = Sched::new(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"America/New_York\"\n\
         [jobs.tuesday]\nschedule = \"30 2 * * 2\"\nrun = \"true\"\n\
         [jobs.quarter]\nschedule = \"*/15 * * * *\"\nrun = \"true\"\n",
    );
    let o = render(&[
        "cron",
        "--per-job",
        "--config",
        s.config().to_str().unwrap(),
        "--host-tz",
        "America/New_York",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("\n30 2 * * 2 "), "{text}");
    assert!(text.contains("\n*/15 * * * * "), "{text}");
    let pinned = text
        .lines()
        .any(|l| !l.starts_with('#') && l.contains("BATON_STATE_DIR"));
    assert!(!pinned, "{text}");
}

/// `baton render github` of `toml` with `--bin`, read as a repository's
/// `baton.toml`.
fn github(toml: &str) -> (Sched, Output) {
    let s = Sched::new(toml);
    let o = render(&[
        "github",
        "--config",
        s.config().to_str().unwrap(),
        "--config-path-as",
        "baton.toml",
        "--bin",
        "/usr/local/bin/baton",
    ]);
    (s, o)
}

#[test]
fn render_github_without_bin_is_refused() {
    let s = Sched::new("[jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n");
    let o = render(&[
        "github",
        "--config",
        s.config().to_str().unwrap(),
        "--config-path-as",
        "baton.toml",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let e = stderr(&o);
    assert!(e.contains("github needs --bin PATH"), "{e}");
    assert!(!e.contains(BATON), "{e}");
}

#[test]
fn render_github_refuses_schedules_more_frequent_than_every_five_minutes() {
    let (_s, o) = github(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"Europe/Berlin\"\n\
         [jobs.minutely]\nevery = \"1m\"\nrun = \"true\"\n\
         [jobs.two]\nschedule = \"*/2 * * * *\"\nrun = \"true\"\n\
         [jobs.all]\nschedule = \"* * * * *\"\nrun = \"true\"\n\
         [jobs.three]\nschedule = \"*/3 * * * *\"\nrun = \"true\"\n\
         [jobs.five]\nschedule = \"*/5 * * * *\"\nrun = \"true\"\n",
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let e = stderr(&o);
    for job in ["minutely", "two", "all", "three"] {
        let line = e
            .lines()
            .find(|l| l.contains(&format!("job \"{job}\"")))
            .unwrap_or_else(|| panic!("{job} not refused: {e}"));
        assert!(line.contains("at most once every 5 minutes"), "{line}");
        // Wildcard schedules keep their UTC line in Berlin: that is not
        // why they are refused.
        assert!(!line.contains("no UTC cron line"), "{line}");
    }
    assert!(!e.contains("\"five\""), "{e}");
}

#[test]
fn render_github_keeps_utc_lines_that_fire_as_baton_and_names_the_zone_elsewhere() {
    let (_s, o) = github(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"America/New_York\"\n\
         [jobs.quarter]\nschedule = \"*/15 * * * *\"\ntimezone = \"Europe/Berlin\"\nrun = \"true\"\n\
         [jobs.tuesday]\nschedule = \"30 2 * * 2\"\nrun = \"true\"\n\
         [jobs.kolkata]\nschedule = \"30 18 * * *\"\ntimezone = \"Asia/Kolkata\"\nrun = \"true\"\n",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let workflow = |job: &str| {
        let start = text
            .find(&format!("# ==> baton-{job}.yml <==\n"))
            .unwrap_or_else(|| panic!("{job}: {text}"));
        let rest = &text[start + 1..];
        rest[..rest.find("# ==> ").unwrap_or(rest.len())].to_owned()
    };
    let quarter = workflow("quarter");
    assert!(
        quarter.contains("\n    - cron: '*/15 * * * *'\n"),
        "{quarter}"
    );
    assert!(!quarter.contains("timezone:"), "{quarter}");
    let tuesday = workflow("tuesday");
    assert!(
        tuesday.contains("\n    - cron: '30 2 * * 2'\n      timezone: 'America/New_York'\n"),
        "{tuesday}"
    );
    let kolkata = workflow("kolkata");
    assert!(
        kolkata.contains("\n    - cron: '0 13 * * *'\n"),
        "{kolkata}"
    );
    for w in [&quarter, &tuesday, &kolkata] {
        assert!(
            w.contains("\n        run: '/usr/local/bin/baton run --config "),
            "{w}"
        );
        assert!(!w.contains(" tick "), "{w}");
    }
}

#[test]
fn render_github_refuses_a_time_the_clocks_repeat_naming_the_date() {
    let (_s, o) = github(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"America/New_York\"\n\
         [jobs.fold]\nschedule = \"30 1 * * *\"\nrun = \"true\"\n",
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("job \"fold\""), "{e}");
    // The next first Sunday of November, whichever year the test runs.
    assert!(
        e.contains("-11-0") && e.contains("the clocks go back from 02:00 to 01:00"),
        "{e}"
    );
    assert!(e.contains("does not document"), "{e}");
    assert!(e.contains("first differs on "), "{e}");
}

#[test]
fn render_env_says_a_store_password_file_nothing_sets_is_unset() {
    let s = Sched::new("[store]\nurl = \"postgres://baton@db.example/baton\"\n");
    let o = s.run(&["render", "env"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let entry = text
        .split("\n\n")
        .find(|e| e.starts_with("# BATON_STORE_PASSWORD_FILE:"))
        .unwrap_or_else(|| panic!("no BATON_STORE_PASSWORD_FILE in {text}"));
    assert!(entry.ends_with("#   current: unset"), "{entry}");
    let url = text
        .split("\n\n")
        .find(|e| e.starts_with("# BATON_STORE_URL:"))
        .unwrap();
    assert!(url.contains("set, not shown (from "), "{url}");
}

/// `--out` (and `baton man --dir`) into a directory another user prepared:
/// one they own, one anybody may write, or a link of theirs in a shared
/// sticky directory (as `/tmp`) that points at root's units: each refused
/// with exit 125, before anything is written there or an earlier render's
/// unit is removed through the link. Root's own directory is written.
#[test]
fn render_out_and_man_dir_refuse_a_directory_another_user_prepared() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = Env::new();
    let config = example_config();
    let config = config.to_str().unwrap();
    let nobody = Some(65534);
    let units = env.path("units");
    std::fs::create_dir(&units).unwrap();
    std::fs::write(units.join("baton-gone.timer"), "[Timer]\n").unwrap();
    let shared = env.path("tmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let link = shared.join("units");
    std::os::unix::fs::symlink(&units, &link).unwrap();
    std::os::unix::fs::lchown(&link, nobody, None).unwrap();
    let theirs = shared.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, nobody, None).unwrap();
    let open = shared.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    for dir in [&link, &theirs, &open] {
        let out = dir.to_str().unwrap();
        let o = render(&["systemd", "--config", config, "--per-job", "--out", out]);
        assert_eq!(code(&o), 125, "{out}: {}", stderr(&o));
        assert!(stderr(&o).contains(out), "{out}: {}", stderr(&o));
        let o = Command::new(BATON)
            .args(["man", "--dir", out])
            .output()
            .unwrap();
        assert_eq!(code(&o), 125, "man --dir {out}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "man --dir {out}");
    }
    assert_eq!(
        files(&units),
        [(PathBuf::from("baton-gone.timer"), "[Timer]\n".to_owned())],
        "written or removed through another user's link"
    );
    assert!(files(&theirs).is_empty() && files(&open).is_empty());
    let out = units.to_str().unwrap();
    let o = render(&["systemd", "--config", config, "--per-job", "--out", out]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!units.join("baton-gone.timer").exists());
    assert!(units.join("baton-daily.timer").exists());
}

#[test]
fn render_systemd_gives_the_daemon_the_state_directory_of_roots_commands_when_the_file_names_none()
{
    // The daemon's unit runs as `baton`, whose default state directory is
    // in its home; root's commands on the same file default to
    // /var/lib/baton. With no state_dir in the file, the unit must give the
    // daemon root's, or root's cron ticks and the daemon keep two ledgers
    // and two lock directories, and run one occurrence twice.
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    std::fs::set_permissions(env.path(""), std::fs::Permissions::from_mode(0o755)).unwrap();
    let job = "[jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n";
    let bare = env.path("bare.toml");
    std::fs::write(&bare, format!("[scheduler]\ntimezone = \"UTC\"\n{job}")).unwrap();
    let pinned = env.path("pinned.toml");
    std::fs::write(
        &pinned,
        format!("[scheduler]\nstate_dir = \"/srv/pinned/baton\"\ntimezone = \"UTC\"\n{job}"),
    )
    .unwrap();
    // `baton config`'s state directory for `config`, as root or as
    // another user with the unit's `Environment=` assignments.
    let state_of = |config: &Path, user: Option<&[(String, String)]>| -> String {
        let mut c = match user {
            Some(_) => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BATON]);
                c
            }
            None => Command::new(BATON),
        };
        c.args(["config", "--config"]).arg(config).env_clear();
        c.env("PATH", "/usr/bin:/bin")
            .env("HOME", "/home/baton-unit");
        for (k, v) in user.unwrap_or_default() {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let out = stdout(&o);
        let line = out
            .lines()
            .find(|l| l.starts_with("state_dir"))
            .unwrap_or_else(|| panic!("no state_dir in {out}"));
        line.split('"').nth(1).unwrap().to_owned()
    };
    let unit_env = |config: &Path, more: &[&str]| -> Vec<(String, String)> {
        let mut args = vec!["systemd", "--config", config.to_str().unwrap()];
        args.extend(more);
        let o = render(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let unit = stdout(&o);
        assert!(unit.contains("\nUser=baton\n"), "{unit}");
        unit.lines()
            .filter_map(|l| l.strip_prefix("Environment="))
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_owned(), v.to_owned())
            })
            .collect()
    };
    let roots = state_of(&bare, None);
    assert_eq!(roots, "/var/lib/baton");
    // The premise: another user's default is in its home.
    assert_eq!(
        state_of(&bare, Some(&[])),
        "/home/baton-unit/.local/state/baton"
    );
    let assigned = unit_env(&bare, &[]);
    assert_eq!(
        assigned,
        [("XDG_STATE_HOME".to_owned(), "/var/lib".to_owned())]
    );
    assert_eq!(state_of(&bare, Some(&assigned)), roots);
    // A state_dir in the file decides for every user: nothing is assigned,
    // and it wins over the assignment a render without it made.
    assert_eq!(unit_env(&pinned, &[]), []);
    assert_eq!(state_of(&pinned, Some(&[])), "/srv/pinned/baton");
    assert_eq!(state_of(&pinned, Some(&assigned)), "/srv/pinned/baton");
    // Rendered with the same directory given on the command line, each is
    // rendered as its file gives it.
    for (config, dir, want) in [
        (&pinned, "/srv/pinned/baton", &[][..]),
        (&bare, "/var/lib/baton", &assigned[..]),
    ] {
        let got = unit_env(config, &["--state-dir", dir]);
        assert_eq!(got, want, "{}", config.display());
    }
}
