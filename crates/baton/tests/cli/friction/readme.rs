//! The README's first steps say what they do: the first command shows
//! cargo's progress while it builds, the demo's state directory under root
//! is named, completions say what loads them, and upgrading and
//! uninstalling are described; the `--json` it documents is accepted.

use crate::support::{Env, code, stdout};

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    std::fs::read_to_string(path).unwrap()
}

/// The text of the README's section that starts with `heading`.
fn section<'r>(text: &'r str, heading: &str) -> &'r str {
    let at = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no {heading:?} in the README"));
    let rest = &text[at + heading.len() + 2..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn the_first_command_builds_in_sight_and_says_where_its_lock_goes() {
    let text = readme();
    let first = section(&text, "## The two commands");
    let block = first.split("```sh\n").nth(1).unwrap();
    let command = block.lines().next().unwrap();
    assert!(command.starts_with("cargo run "), "{command}");
    assert!(
        !command.contains(" -q "),
        "the first build is silent: {command}"
    );
    assert!(first.contains("/var/lib/baton"), "{first}");
    assert!(first.contains("root"), "{first}");
}

#[test]
fn install_names_bash_completion_upgrading_and_uninstalling() {
    let text = readme();
    let install = section(&text, "## Install");
    assert!(install.contains("bash-completion"), "{install}");
    assert!(install.contains("baton man --dir"), "{install}");
    let upgrading = section(&text, "## Upgrading and uninstalling");
    assert!(
        upgrading.contains("baton.db") && upgrading.contains("baton store migrate"),
        "{upgrading}"
    );
    assert!(upgrading.contains("cargo uninstall baton"), "{upgrading}");
}

#[test]
fn every_json_the_readme_documents_is_accepted() {
    let env = Env::new();
    for cmd in [
        &["tick"][..],
        &["run"],
        &["pause"],
        &["resume"],
        &["backfill"],
        &["history"],
        &["store", "status"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let o = env.run(&args);
        assert_eq!(code(&o), 0, "{cmd:?}");
        assert!(stdout(&o).contains("--json"), "{cmd:?}: {}", stdout(&o));
    }
}

#[test]
fn the_readmes_key_tables_are_the_configurations_own() {
    use baton_sched::config::keys::{self, Table};
    let header = keys::markdown(&[]);
    let text = readme();
    let found: Vec<String> = text
        .split(header.as_str())
        .skip(1)
        .map(|rest| {
            let rows = rest.lines().take_while(|l| l.starts_with('|'));
            header.clone() + &rows.map(|l| format!("{l}\n")).collect::<String>()
        })
        .collect();
    let tables = [
        &[Table::Scheduler, Table::Job, Table::Step, Table::Check][..],
        &[Table::Daemon],
        &[Table::Telemetry],
        &[Table::Store],
    ];
    assert_eq!(found.len(), tables.len(), "the README's key tables");
    for (found, tables) in found.iter().zip(tables) {
        let wanted = keys::markdown(tables);
        assert!(
            *found == wanted,
            "the README's table of the {tables:?} keys is not crates/baton-sched/src/config/keys.rs's; \
             it reads:\n{found}\nit should read:\n{wanted}"
        );
    }
}
