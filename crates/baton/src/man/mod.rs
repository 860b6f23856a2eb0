//! baton's manual: one page per command, from the command line's own
//! definition (clap's words for the synopsis, the description and the
//! options) and [`sections`] (EXIT STATUS, ENVIRONMENT, FILES, SEE ALSO).
//!
//! `baton man` prints baton(1); `baton man exec` prints baton-exec(1),
//! `baton man lock show` baton-lock-show(1); `baton man --dir DIR` writes
//! every page as `DIR/baton.1` and `DIR/baton-*.1` (through the atomic
//! writer), one path a line on stdout, for `man -M` or a package's
//! `man1/`. Every page a page names in SUBCOMMANDS or SEE ALSO is one of
//! those. Hidden commands have no page. Rendering is pure: [`page`] and
//! [`all`] return text; only [`write_all`] touches the disk.

mod sections;

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use roff::{Roff, bold, roman};

use crate::cli::Cli;

/// One page: its file name (`baton-exec.1`) and its roff text.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    pub name: String,
    pub text: String,
}

/// Why a page cannot be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManError {
    /// No such command (or a hidden one).
    #[error("no manual page for {0:?}: pages are {1}")]
    Unknown(String, String),
    /// Rendering failed.
    #[error("failed to render {0}: {1}")]
    Render(String, std::io::Error),
    /// A page could not be written.
    #[error("{0}")]
    Write(String),
}

/// The command tree as the pages show it: built, so that every command
/// knows its full name (`baton-lock-show`), without `help` commands.
fn root() -> clap::Command {
    let mut c = Cli::command().disable_help_subcommand(true);
    c.build();
    c
}

/// The non-hidden subcommands of `c`.
fn visible(c: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    c.get_subcommands().filter(|s| !s.is_hide_set())
}

/// Every page's command path (`[]` for baton(1), `["lock", "show"]`), in
/// the order of the command line's definition.
fn paths(c: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
    out.push(prefix.to_vec());
    for s in visible(c) {
        let mut p = prefix.to_vec();
        p.push(s.get_name().to_owned());
        paths(s, &p, out);
    }
}

/// The page's name for a command path: `baton`, `baton-lock-show`.
fn page_name(path: &[String]) -> String {
    std::iter::once("baton")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-")
}

/// The page of the command `path` (`[]` for baton(1)).
///
/// # Errors
///
/// An unknown or hidden command, naming the pages there are; a render
/// failure.
pub(crate) fn page(path: &[String]) -> Result<Page, ManError> {
    let root = root();
    let mut cmd = &root;
    for word in path {
        match visible(cmd).find(|s| s.get_name() == word) {
            Some(s) => cmd = s,
            None => {
                let mut all = Vec::new();
                paths(&root, &[], &mut all);
                let names: Vec<String> = all.iter().map(|p| p.join(" ")).collect();
                return Err(ManError::Unknown(
                    path.join(" "),
                    names
                        .iter()
                        .filter(|n| !n.is_empty())
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                ));
            }
        }
    }
    render(cmd, path)
}

/// Every page, baton(1) first.
///
/// # Errors
///
/// As [`page`].
pub(crate) fn all() -> Result<Vec<Page>, ManError> {
    let mut all = Vec::new();
    paths(&root(), &[], &mut all);
    all.iter().map(|p| page(p)).collect()
}

/// Writes every page into `dir` (created when missing, refused when
/// another user's: [`crate::out_dir`]); the paths written.
///
/// # Errors
///
/// A page that cannot be rendered or written, naming the file.
pub(crate) fn write_all(dir: &Path) -> Result<Vec<PathBuf>, ManError> {
    let pages = all()?;
    crate::out_dir::prepare(dir).map_err(ManError::Write)?;
    pages
        .iter()
        .map(|p| {
            baton_sched::state::atomic::replace(dir, &p.name, p.text.as_bytes())
                .map_err(|e| ManError::Write(e.to_string()))
        })
        .collect()
}

/// The page of `cmd`, whose path is `path`.
fn render(cmd: &clap::Command, path: &[String]) -> Result<Page, ManError> {
    let name = page_name(path);
    let version = cmd.get_version().unwrap_or(env!("CARGO_PKG_VERSION"));
    let man = clap_mangen::Man::new(cmd.clone())
        .title(name.to_uppercase())
        .source(format!("baton {version}"))
        .manual("baton manual");
    let mut out: Vec<u8> = Vec::new();
    let fail = |e| ManError::Render(name.clone(), e);
    man.render_title(&mut out).map_err(fail)?;
    man.render_name_section(&mut out).map_err(fail)?;
    man.render_synopsis_section(&mut out).map_err(fail)?;
    man.render_description_section(&mut out).map_err(fail)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out).map_err(fail)?;
    }
    if visible(cmd).next().is_some() {
        man.render_subcommands_section(&mut out).map_err(fail)?;
    }
    let mut roff = Roff::new();
    if let Some(help) = cmd.get_after_long_help() {
        details(&mut roff, &help.to_string());
    }
    let s = sections::of(path);
    list(&mut roff, "EXIT STATUS", &s.exit);
    list(&mut roff, "ENVIRONMENT", &s.environment);
    list(&mut roff, "FILES", &s.files);
    let mut also: Vec<String> = Vec::new();
    if !path.is_empty() {
        also.push(page_name(&path[..path.len() - 1]));
    }
    also.extend(visible(cmd).map(|s| {
        let mut p = path.to_vec();
        p.push(s.get_name().to_owned());
        page_name(&p)
    }));
    let mut refs: Vec<String> = also.into_iter().map(|p| format!("{p}(1)")).collect();
    refs.extend(s.see_also.iter().map(|r| (*r).to_owned()));
    if !refs.is_empty() {
        roff.control("SH", ["SEE ALSO"]);
        // Page names are not broken across lines.
        roff.control("nh", []);
        roff.text([roman(refs.join(", "))]);
        roff.control("hy", []);
    }
    roff.control("SH", ["VERSION"]);
    roff.text([roman(format!("baton {version}"))]);
    out.extend_from_slice(roff.render().as_bytes());
    // Each part opens with the apostrophe preamble: keep the first.
    let preamble = Roff::new().render();
    let body = String::from_utf8_lossy(&out).replace(&preamble, "");
    Ok(Page {
        name: format!("{name}.1"),
        text: format!("{preamble}{body}"),
    })
}

/// The text after `--help`'s options, under DETAILS: paragraphs for
/// prose, laid out as written where lines are indented (tables, lists),
/// without the exit codes (EXIT STATUS has them).
fn details(roff: &mut Roff, help: &str) {
    let paragraphs: Vec<&str> = help
        .split("\n\n")
        .map(str::trim_end)
        .filter(|p| !p.trim().is_empty() && !p.trim_start().starts_with("Exit codes"))
        .collect();
    if paragraphs.is_empty() {
        return;
    }
    roff.control("SH", ["DETAILS"]);
    for p in paragraphs {
        roff.control("PP", []);
        if p.lines().skip(1).any(|l| l.starts_with(' ')) {
            roff.control("nf", []);
            for line in p.lines() {
                roff.text([roman(line)]);
                roff.control("br", []);
            }
            roff.control("fi", []);
        } else {
            roff.text([roman(p.split_whitespace().collect::<Vec<_>>().join(" "))]);
        }
    }
}

/// A section of tagged paragraphs: each term in bold, then its meaning;
/// `None.` when there are none.
fn list(roff: &mut Roff, title: &str, items: &[(String, String)]) {
    roff.control("SH", [title]);
    if items.is_empty() {
        roff.text([roman("None.")]);
        return;
    }
    for (term, meaning) in items {
        roff.control("TP", []);
        roff.text([bold(term.as_str())]);
        roff.text([roman(meaning.as_str())]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers of `--help`'s exit code paragraph of `cmd`.
    fn help_codes(cmd: &clap::Command) -> Vec<String> {
        let Some(help) = cmd.get_after_long_help() else {
            return Vec::new();
        };
        let help = help.to_string();
        let Some(at) = help.find("Exit codes") else {
            return Vec::new();
        };
        let para = help[at..].split("\n\n").next().unwrap_or("");
        para.split(|c: char| !c.is_ascii_alphanumeric() && c != '+')
            .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_exit_code_help_names_is_in_the_page() {
        let root = root();
        let mut all = Vec::new();
        paths(&root, &[], &mut all);
        for p in &all {
            let mut cmd = &root;
            for w in p {
                cmd = visible(cmd).find(|s| s.get_name() == w).unwrap();
            }
            let codes: Vec<String> = sections::of(p).exit.into_iter().map(|(c, _)| c).collect();
            assert!(!codes.is_empty(), "{p:?} has no EXIT STATUS");
            for c in help_codes(cmd) {
                assert!(
                    codes.contains(&c),
                    "{p:?}: --help names exit {c}, the page {codes:?}"
                );
            }
        }
    }
}
