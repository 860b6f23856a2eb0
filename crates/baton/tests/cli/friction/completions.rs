//! `baton completions SHELL`: the script registers baton with the shell,
//! and baton answers each TAB itself: hidden commands are not offered, and
//! JOB arguments complete the configuration's job names.

use std::process::Command;

use crate::sched::Sched;
use crate::support::{BATON, code, stderr, stdout};

fn jobs() -> Sched {
    Sched::new(
        "[jobs.backup]\nschedule = \"30 2 * * *\"\nrun = \"true\"\n\
         [jobs.report]\nevery = \"1h\"\nrun = \"true\"\n",
    )
}

/// What bash offers for `words` (the last one being completed) with
/// baton's script sourced, in `s`'s directory and environment.
fn bash(s: &Sched, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <({BATON} completions bash) || exit 9\n\
         COMP_WORDS=({})\nCOMP_CWORD={}\n\
         _clap_complete_baton baton \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        quoted.join(" "),
        words.len() - 1
    );
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(&script)
        .env("BATON_CONFIG", s.config())
        .current_dir(s.env.tmp.path());
    let o = c.output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o).lines().map(str::to_owned).collect()
}

#[test]
fn bash_offers_no_hidden_command_among_the_others() {
    let s = jobs();
    let offered = bash(&s, &["baton", ""]);
    for want in ["exec", "run", "tick", "status", "man", "completions"] {
        assert!(
            offered.iter().any(|o| o == want),
            "{want} not in {offered:?}"
        );
    }
    for hidden in ["__run", "__page", "__metrics", "__http"] {
        assert!(
            !offered.iter().any(|o| o == hidden),
            "{hidden} in {offered:?}"
        );
    }
}

#[test]
fn bash_completes_job_names_for_every_job_argument() {
    let s = jobs();
    for words in [
        &["baton", "run", ""][..],
        &["baton", "tick", ""],
        &["baton", "status", ""],
        &["baton", "history", ""],
        &["baton", "pause", ""],
        &["baton", "resume", ""],
        &["baton", "backfill", ""],
        &["baton", "watermark", "get", ""],
        &["baton", "calendar", "--job", ""],
    ] {
        let offered = bash(&s, words);
        assert!(
            offered.iter().any(|o| o == "backup") && offered.iter().any(|o| o == "report"),
            "{words:?}: {offered:?}"
        );
    }
    assert_eq!(bash(&s, &["baton", "run", "re"]), ["report"]);
}

#[test]
fn the_config_on_the_line_is_the_one_whose_jobs_complete() {
    let s = jobs();
    let other = s.env.path("other.toml");
    std::fs::write(
        &other,
        format!(
            "[scheduler]\nstate_dir = {:?}\n[jobs.nightly]\nschedule = \"0 1 * * *\"\nrun = \"true\"\n",
            s.env.state()
        ),
    )
    .unwrap();
    let offered = bash(
        &s,
        &["baton", "run", "--config", other.to_str().unwrap(), ""],
    );
    assert!(offered.iter().any(|o| o == "nightly"), "{offered:?}");
    assert!(!offered.iter().any(|o| o == "backup"), "{offered:?}");
    // A configuration that cannot be read completes no job, and no error.
    let offered = bash(&s, &["baton", "run", "--config", "/nonexistent.toml", ""]);
    assert!(!offered.iter().any(|o| o == "backup"), "{offered:?}");
}

#[test]
fn zsh_and_fish_scripts_ask_baton_and_baton_answers_with_descriptions() {
    let s = jobs();
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = s.run(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("_BATON_COMPLETE"),
            "{shell}: {}",
            stdout(&o)
        );
        assert!(!stdout(&o).contains("__run"), "{shell}: {}", stdout(&o));
    }
    // What the fish script runs on TAB: one candidate a line, TAB, its
    // description.
    let o = s
        .cmd(&["--", "baton", "run", ""])
        .env("_BATON_COMPLETE", "fish")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).lines().any(|l| l == "backup\t30 2 * * *"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).lines().any(|l| l == "report\tevery 1h"),
        "{}",
        stdout(&o)
    );
    // zsh's: NAME:DESCRIPTION.
    let o = s
        .cmd(&["--", "baton", "calendar", "--job", ""])
        .env("_BATON_COMPLETE", "zsh")
        .env("_CLAP_COMPLETE_INDEX", "3")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).lines().any(|l| l == "backup:30 2 * * *"),
        "{}",
        stdout(&o)
    );
}

/// What zsh offers for `words` (the last one being completed) when its
/// completion of `baton` is `_baton`, found in `$fpath` as a package
/// installs it, on the first TAB of a fresh shell (`_describe` stands in
/// for the menu, printing what it is given); and what merely sourcing the
/// same script prints.
fn zsh_from_fpath(s: &Sched, words: &[&str]) -> (Vec<String>, String) {
    let have = Command::new("zsh").arg("--version").output();
    assert!(
        have.is_ok_and(|o| o.status.success()),
        "zsh is not installed: install Debian's `zsh` package (`apt-get install zsh`) \
         to check the completion script a package installs for it"
    );
    let fpath = s.env.path("vendor-completions");
    std::fs::create_dir_all(&fpath).unwrap();
    let o = s.run(&["completions", "zsh"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::write(fpath.join("_baton"), stdout(&o)).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let stub = "_describe() { print -rl -- \"${(@P)3}\" }\n";
    let first_tab = format!(
        "fpath=({} $fpath)\nautoload -Uz compinit && compinit -u -D\n{stub}\
         words=({})\nCURRENT={}\n_baton\n",
        fpath.display(),
        quoted.join(" "),
        words.len()
    );
    let sourced = format!(
        "autoload -Uz compinit && compinit -u -D\n{stub}source {}\n",
        fpath.join("_baton").display()
    );
    let run = |script: &str| {
        let o = Command::new("zsh")
            .args(["-f", "-c", script])
            .env("BATON_CONFIG", s.config())
            .current_dir(s.env.tmp.path())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{script}\n{}", stderr(&o));
        stdout(&o)
    };
    let offered = run(&first_tab).lines().map(str::to_owned).collect();
    (offered, run(&sourced))
}

#[test]
fn zsh_completes_job_names_on_the_first_tab_from_fpath() {
    let s = jobs();
    let (offered, sourced) = zsh_from_fpath(&s, &["baton", "run", ""]);
    assert!(
        offered.iter().any(|o| o == "backup:30 2 * * *")
            && offered.iter().any(|o| o == "report:every 1h"),
        "{offered:?}"
    );
    // Sourced, the script registers its completer and completes nothing.
    assert_eq!(sourced, "");
}
