//! `baton man`: a page per command, each with EXIT STATUS, ENVIRONMENT and
//! FILES, every page it names installed by `baton man --dir`.

use crate::support::{Env, code, stderr, stdout};

/// The `baton-…(1)` pages `text` names.
fn named_pages(text: &str) -> Vec<String> {
    let plain = text.replace("\\-", "-");
    let mut names = Vec::new();
    let mut rest = plain.as_str();
    while let Some(at) = rest.find("baton-") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(tail.len());
        if tail[end..].starts_with("(1)") {
            names.push(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

fn section(text: &str, name: &str) -> bool {
    text.lines()
        .any(|l| l == format!(".SH {name}") || l == format!(".SH \"{name}\""))
}

#[test]
fn man_exec_is_baton_exec_1_with_its_own_sections() {
    let env = Env::new();
    let o = env.run(&["man", "exec"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH BATON-EXEC 1"), "{page}");
    for s in [
        "NAME",
        "SYNOPSIS",
        "OPTIONS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "SEE ALSO",
    ] {
        assert!(section(&page, s), "no {s} in baton-exec(1)");
    }
    let exit = &page[page.find("EXIT STATUS").unwrap()..page.find("ENVIRONMENT").unwrap()];
    for n in ["75", "76", "124", "125", "126", "127"] {
        assert!(exit.contains(&format!("\\fB{n}\\fR")), "{n} not in {exit}");
    }
    assert!(page.contains("\\fBSHELL\\fR"), "{page}");
    assert!(page.contains("STATE_DIR/locks/NAME.lock"), "{page}");

    let o = env.run(&["man", "lock", "show"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains(".TH BATON-LOCK-SHOW 1"),
        "{}",
        stdout(&o)
    );

    let o = env.run(&["man", "nope"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("exec, lock, lock show"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn man_dir_installs_every_page_any_page_names() {
    let env = Env::new();
    let dir = env.path("man1");
    let o = env.run(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let written: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(written.len(), files.len(), "{written:?} {files:?}");
    assert!(files.contains(&"baton.1".to_owned()), "{files:?}");
    for want in [
        "baton-exec.1",
        "baton-run.1",
        "baton-lock-break.1",
        "baton-store-status.1",
    ] {
        assert!(files.contains(&want.to_owned()), "{want} not in {files:?}");
    }
    assert!(
        !files.iter().any(|f| f.contains("__") || f.contains("help")),
        "{files:?}"
    );
    let root = std::fs::read_to_string(dir.join("baton.1")).unwrap();
    assert!(
        named_pages(&root).contains(&"baton-exec".to_owned()),
        "{root}"
    );
    for f in &files {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        for s in ["EXIT STATUS", "ENVIRONMENT", "FILES"] {
            assert!(section(&text, s), "no {s} in {f}");
        }
        for named in named_pages(&text) {
            assert!(
                dir.join(format!("{named}.1")).exists(),
                "{f} names {named}(1), which was not written"
            );
        }
    }
    // The same pages `baton man COMMAND` prints.
    let o = env.run(&["man", "backfill"]);
    assert_eq!(
        stdout(&o),
        std::fs::read_to_string(dir.join("baton-backfill.1")).unwrap()
    );
}
