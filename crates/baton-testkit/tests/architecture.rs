//! The workspace's shape, checked on its sources: what DESIGN.md's map
//! promises about every crate, kept true by a test rather than by review.
//!
//! - No two modules of one parent name each other's items in a circle
//!   (a sibling-level cycle: `engine/run.rs` using `engine/steps.rs` and
//!   `steps` using `run`), in any crate.
//! - No library returns `Result<_, String>`: its errors are typed, and only
//!   the binaries turn them into text.
//!
//! Test code (a `#[cfg(test)]` item, a `tests.rs` or `test*.rs` file, a
//! crate's `tests/`) and comments are not read. The scan is lexical (paths
//! written as `crate::…` and `super::…`), which is how this workspace names
//! its modules; it never compiles anything.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path inside its crate: `["engine", "run"]`; the crate root is
/// empty.
type ModPath = Vec<String>;

struct Source {
    module: ModPath,
    file: PathBuf,
    text: String,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace's root")
}

fn crates() -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .map(|e| e.expect("an entry of crates/").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    all.sort();
    assert!(all.len() >= 10, "the crates were not found: {all:?}");
    all
}

/// Every non-test source file of a crate's library and binary (its
/// `src/bin/` helpers apart), with test items and comments taken out.
fn sources(krate: &Path) -> Vec<Source> {
    let src = krate.join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut out = Vec::new();
    let mut test_modules = BTreeSet::new();
    let mut read = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        if rel.starts_with("bin") {
            continue;
        }
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests.rs" || name.starts_with("test") {
            continue;
        }
        let raw = fs::read_to_string(&file).expect("a source file");
        let dir = file.parent().expect("a parent").to_owned();
        let own_dir = if matches!(name, "mod.rs" | "lib.rs" | "main.rs") {
            dir.clone()
        } else {
            dir.join(name.trim_end_matches(".rs"))
        };
        for declared in test_module_names(&raw) {
            test_modules.insert(own_dir.join(format!("{declared}.rs")));
            test_modules.insert(own_dir.join(declared).join("mod.rs"));
        }
        read.push((file.clone(), module_of(rel), raw));
    }
    for (file, module, raw) in read {
        if test_modules.contains(&file) || test_modules.iter().any(|t| is_under(&file, t)) {
            continue;
        }
        out.push(Source {
            module,
            file,
            text: without_tests(&without_comments(&raw)),
        });
    }
    out
}

/// Whether `file` is inside the folder of the test module whose `mod.rs`
/// is `test_mod_rs`.
fn is_under(file: &Path, test_mod_rs: &Path) -> bool {
    test_mod_rs.file_name().is_some_and(|n| n == "mod.rs")
        && test_mod_rs
            .parent()
            .is_some_and(|d| file.starts_with(d) && file != test_mod_rs)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .expect("a source folder")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, files);
        } else if p.extension().is_some_and(|e| e == "rs") {
            files.push(p);
        }
    }
}

fn module_of(rel: &Path) -> ModPath {
    let mut parts: ModPath = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| matches!(l.as_str(), "mod" | "lib" | "main"))
    {
        parts.pop();
    }
    parts
}

/// The names declared `#[cfg(test)] mod NAME;` in `text`.
fn test_module_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        rest = &rest[at + "#[cfg(test)]".len()..];
        let item = rest.trim_start();
        let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
        if let Some(decl) = item.strip_prefix("mod ") {
            let name: String = decl
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if decl[name.len()..].trim_start().starts_with(';') {
                names.push(name);
            }
        }
    }
    names
}

/// `text` without `//` comments and without string literals' contents (a
/// URL's `//` or a path in a message is not code).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                out.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push('"');
            }
            // A character literal that is a quote must not open a string.
            '\'' if chars.peek() == Some(&'"') => {
                out.push_str("'\"");
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` without each item that follows a `#[cfg(test)]`: up to its `;`,
/// or to the brace closing its body.
fn without_tests(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let brace = item.find('{');
        let semi = item.find(';');
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => s + 1,
            (None, Some(s)) => s + 1,
            (None, None) => item.len(),
            (Some(b), _) => {
                let mut depth = 0usize;
                let mut end = item.len();
                for (i, c) in item[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths written after `prefix` (`crate::` or a run of `super::`) in
/// `text`, with use-trees (`crate::{a::b, c::{d, e}}`) expanded; each with
/// how many `super::` it began with.
fn paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !is_ident(bytes[i - 1]);
        if !starts_word {
            i += 1;
            continue;
        }
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        if rest == "crate::" {
            let mut j = i + 7;
            for p in tree(&bytes, &mut j) {
                found.push((0, p));
            }
            i = j;
        } else if rest.starts_with("super::") {
            let mut j = i;
            let mut ups = 0;
            loop {
                let s: String = bytes[j..bytes.len().min(j + 7)].iter().collect();
                if s != "super::" {
                    break;
                }
                ups += 1;
                j += 7;
            }
            for p in tree(&bytes, &mut j) {
                found.push((ups, p));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    found
}

/// A use-tree at `*at`: `a::b::c`, or `a::{b, c::d}`, or `{a, b}`.
fn tree(chars: &[char], at: &mut usize) -> Vec<Vec<String>> {
    let skip_space = |at: &mut usize| {
        while *at < chars.len() && chars[*at].is_whitespace() {
            *at += 1;
        }
    };
    skip_space(at);
    if chars.get(*at) == Some(&'{') {
        *at += 1;
        let mut all = Vec::new();
        loop {
            skip_space(at);
            match chars.get(*at) {
                None => return all,
                Some('}') => {
                    *at += 1;
                    return all;
                }
                Some(',') => *at += 1,
                Some(_) => {
                    let before = *at;
                    all.extend(tree(chars, at));
                    if *at == before {
                        *at += 1; // `self`, `*` or anything not a path
                    }
                }
            }
        }
    }
    let mut segments = Vec::new();
    loop {
        let start = *at;
        while *at < chars.len() && is_ident(chars[*at]) {
            *at += 1;
        }
        if *at == start {
            break;
        }
        segments.push(chars[start..*at].iter().collect::<String>());
        if chars.get(*at) == Some(&':') && chars.get(*at + 1) == Some(&':') {
            *at += 2;
            if chars.get(*at) == Some(&'{') {
                return tree(chars, at)
                    .into_iter()
                    .map(|t| segments.iter().cloned().chain(t).collect())
                    .collect();
            }
        } else {
            break;
        }
    }
    if segments.is_empty() {
        Vec::new()
    } else {
        vec![segments]
    }
}

/// The longest prefix of `path` that is a module of the crate.
fn resolve(modules: &BTreeSet<ModPath>, path: &[String]) -> Option<ModPath> {
    (1..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|p| modules.contains(p))
}

/// Every module each module names: `(from, to) → a file that does`.
fn edges(sources: &[Source]) -> BTreeMap<(ModPath, ModPath), PathBuf> {
    let modules: BTreeSet<ModPath> = sources.iter().map(|s| s.module.clone()).collect();
    let mut edges = BTreeMap::new();
    for s in sources {
        for (ups, path) in paths(&s.text) {
            let base: ModPath = if ups == 0 {
                Vec::new()
            } else {
                s.module[..s.module.len().saturating_sub(ups)].to_vec()
            };
            let full: ModPath = base.iter().cloned().chain(path).collect();
            let to = resolve(&modules, &full).unwrap_or(base);
            edges
                .entry((s.module.clone(), to))
                .or_insert_with(|| s.file.clone());
        }
    }
    edges
}

/// The sibling-level cycles: for each parent, the strongly connected
/// components (of two or more) of its children, each with the edges
/// inside it and a file giving each.
fn cycles(sources: &[Source]) -> Vec<String> {
    let edges = edges(sources);
    let mut parents: BTreeSet<ModPath> = BTreeSet::new();
    for s in sources {
        if !s.module.is_empty() {
            parents.insert(s.module[..s.module.len() - 1].to_vec());
        }
    }
    let mut found = Vec::new();
    for parent in parents {
        let n = parent.len();
        let child = |m: &ModPath| (m.len() > n && m[..n] == parent[..]).then(|| m[n].clone());
        let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
        for s in sources {
            if let Some(c) = child(&s.module) {
                graph.entry(c).or_default();
            }
        }
        for ((from, to), file) in &edges {
            if let (Some(a), Some(b)) = (child(from), child(to))
                && a != b
            {
                graph
                    .entry(a)
                    .or_default()
                    .entry(b)
                    .or_insert_with(|| file.clone());
            }
        }
        for component in components(&graph) {
            let inside: Vec<String> = component
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|(b, _)| component.contains(*b))
                        .map(move |(b, f)| format!("{a} → {b} ({})", f.display()))
                })
                .collect();
            found.push(format!(
                "in `{}`: {}",
                if parent.is_empty() {
                    "crate".to_owned()
                } else {
                    parent.join("::")
                },
                inside.join(", ")
            ));
        }
    }
    found
}

/// Tarjan's strongly connected components of two or more nodes.
fn components(graph: &BTreeMap<String, BTreeMap<String, PathBuf>>) -> Vec<BTreeSet<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeMap<String, PathBuf>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        next: usize,
        out: Vec<BTreeSet<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            for w in self.graph[v].keys() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    component.insert(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.out.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

/// The names `text` gives `String` (`type Refused = String;`).
fn string_aliases(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(at) = line.find("type ") else {
            continue;
        };
        if let Some((name, ty)) = line[at + "type ".len()..].split_once('=')
            && matches!(ty.trim(), "String;" | "std::string::String;")
        {
            names.push(name.trim().to_owned());
        }
    }
    names
}

/// Each `Result<…, String>` in `text` (or `Result<…, A>` for an alias `A`
/// of `String` among `aliases`): its line.
fn string_errors(text: &str, aliases: &[String]) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("Result<") {
        let start = from + at;
        from = start + "Result<".len();
        if start > 0 && text[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let mut depth = 1usize;
        let mut last_arg = from;
        let mut end = None;
        for (i, c) in text[from..].char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(from + i);
                        break;
                    }
                }
                ',' if depth == 1 => last_arg = from + i + 1,
                _ => {}
            }
        }
        if let Some(end) = end
            && last_arg > from
            && (matches!(text[last_arg..end].trim(), "String" | "std::string::String")
                || aliases.iter().any(|a| a == text[last_arg..end].trim()))
        {
            lines.push(text[..start].matches('\n').count() + 1);
        }
    }
    lines
}

#[test]
fn no_two_sibling_modules_name_each_other_in_a_circle() {
    let mut found = Vec::new();
    for krate in crates() {
        let name = krate
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        for c in cycles(&sources(&krate)) {
            found.push(format!("{name}, {c}"));
        }
    }
    assert!(
        found.is_empty(),
        "modules that name each other in a circle (move what the back edge names to where it \
         belongs, or into a module both use):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_library_returns_a_string_for_an_error() {
    let mut found = Vec::new();
    for krate in crates() {
        if !krate.join("src/lib.rs").is_file() {
            continue; // a binary: the place that turns errors into text
        }
        let sources = sources(&krate);
        let aliases: Vec<String> = sources
            .iter()
            .flat_map(|s| string_aliases(&s.text))
            .collect();
        for s in &sources {
            for line in string_errors(&s.text, &aliases) {
                found.push(format!("{}:{line}", s.file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "library functions returning `Result<_, String>` (give them a typed error):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_a_cycle_a_string_error_and_skips_test_code() {
    let source = |module: &[&str], text: &str| Source {
        module: module.iter().map(|s| (*s).to_owned()).collect(),
        file: PathBuf::from(format!("{}.rs", module.join("/"))),
        text: without_tests(&without_comments(text)),
    };
    let circle = [
        source(&["engine"], "pub mod run; pub mod steps;"),
        source(&["engine", "run"], "use super::steps::Step;\nfn f() {}"),
        source(
            &["engine", "steps"],
            "use crate::{config, engine::{run::Run, other}};",
        ),
        source(&["config"], "// crate::engine::run::Run\n"),
    ];
    let found = cycles(&circle);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("in `engine`: run → steps"),
        "{found:?}"
    );

    let broken = [
        source(&["engine"], "pub mod run; pub mod steps;"),
        source(&["engine", "run"], "use super::steps::Step;"),
        source(
            &["engine", "steps"],
            "#[cfg(test)]\nmod tests { use crate::engine::run::Run; }\n\
             fn f() -> &'static str { \"crate::engine::run\" }",
        ),
        source(&["config"], "use crate::engine::run::Run;"),
    ];
    assert!(cycles(&broken).is_empty(), "{:?}", cycles(&broken));

    let text = without_tests(
        "fn a() -> Result<Vec<u8>, String> {}\nfn b() -> io::Result<()> {}\n\
         fn c() -> Result<(), Error> {}\n#[cfg(test)]\nfn d() -> Result<(), String> {}\n\
         pub(crate) type Refused = String;\nfn e() -> Result<(), Refused> {}",
    );
    let aliases = string_aliases(&text);
    assert_eq!(aliases, vec!["Refused".to_owned()]);
    assert_eq!(string_errors(&text, &aliases), vec![1, 6]);
}
