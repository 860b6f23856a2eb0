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
    let out = env.path("units");
    let config = example_config();
    for extra in [&[][..], &["--per-job"][..]] {
        let mut args = vec!["systemd", "--config", config.to_str().unwrap()];
        args.extend(["--bin", BATON, "--out", out.to_str().unwrap()]);
        args.extend(extra);
        let o = render(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let units: Vec<PathBuf> = files(&out).into_iter().map(|(p, _)| out.join(p)).collect();
    assert_eq!(units.len(), 5, "{units:?}");
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .args(&units)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "systemd-analyze verify complained");
    let service = std::fs::read_to_string(out.join("baton.service")).unwrap();
    for line in [
        "Type=notify\n",
        "Restart=on-failure\n",
        "KillMode=mixed\n",
        // shutdown_grace 60 s + kill_grace 10 s + 30 s.
        "TimeoutStopSec=100s\n",
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
            jobs.entry(words[7].to_owned())
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
         [jobs.berlin]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n\
         [jobs.seconds]\nschedule = \"*/10 * * * * *\"\ntimezone = \"UTC\"\nrun = \"true\"\n",
    );
    let config = s.config();
    let config = config.to_str().unwrap();
    let out = s.env.path("out");

    let o = render(&["github", "--config", config, "--out", out.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(!out.exists(), "something was written");
    let e = stderr(&o);
    assert!(e.contains("job \"berlin\""), "{e}");
    assert!(e.contains("Europe/Berlin observes daylight saving"), "{e}");
    assert!(e.contains("job \"seconds\""), "{e}");

    let o = render(&["cron", "--per-job", "--config", config]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let e = stderr(&o);
    assert!(
        e.contains("job \"seconds\"") && e.contains("smallest unit is a minute"),
        "{e}"
    );
    assert!(e.contains("default form"), "{e}");
    assert!(!e.contains("berlin"), "{e}");

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
    let o = render(&["github", "--config", config.to_str().unwrap()]);
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
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("PATH=/"), "{text}");
    assert!(lines[1].starts_with("BATON_STATE_DIR=/"), "{text}");
    assert!(
        lines[2].starts_with(&format!("* * * * * {BATON} tick --config /")),
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
    ] {
        let o = render(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
    }
}

/// The rendered units are checked by systemd itself: a machine without
/// `systemd-analyze` fails here, naming the package (`.ci/run` installs it).
fn need_systemd_analyze() {
    let have = Command::new("systemd-analyze").arg("--version").output();
    assert!(
        have.is_ok_and(|o| o.status.success()),
        "systemd-analyze is not installed: install Debian's `systemd` package \
         (`apt-get install systemd`) to run the rendered units' checks"
    );
}
