//! The Debian package (`scripts/deb.sh`, `crates/baton/debian/`): its unit
//! is what `baton render systemd` renders for the package's configuration,
//! systemd accepts it and rates its sandbox as the README says; built from
//! this test's binary, it installs with `dpkg -i`, puts every file where it
//! belongs, starts and enables nothing, its binary and pages work, and
//! `dpkg -r` then `dpkg --purge` leave nothing of it behind.
//!
//! The install test changes the machine it runs on (a package, a system
//! user), so it runs only as root with dpkg, and only on a machine where
//! nothing of baton's is installed: there is nothing it could destroy, and
//! it purges what it installed even when it fails halfway.

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{BATON, Env, code, stderr, stdout};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn debian(name: &str) -> PathBuf {
    root().join("crates/baton/debian").join(name)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The daemon's unit as this baton renders it for the package's
/// configuration, naming `bin` as the binary.
fn rendered_unit(bin: &str) -> String {
    let o = Command::new("env")
        .args(["-i", "PATH=/usr/bin:/bin", BATON, "render", "systemd"])
        .arg("--config")
        .arg(debian("baton.toml"))
        .args(["--config-path-as", "/etc/baton/baton.toml", "--bin", bin])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn package_unit_is_what_baton_renders_for_the_packaged_configuration() {
    let shipped = read(&debian("baton.service"));
    assert_eq!(
        shipped,
        rendered_unit("/usr/bin/baton"),
        "crates/baton/debian/baton.service is not what baton renders; render it again: \
         target/debug/baton render systemd --config crates/baton/debian/baton.toml \
         --config-path-as /etc/baton/baton.toml --bin /usr/bin/baton \
         > crates/baton/debian/baton.service"
    );
    for line in [
        "Type=notify",
        "StateDirectory=baton",
        "User=baton",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
    ] {
        assert!(shipped.lines().any(|l| l == line), "{line}: {shipped}");
    }
}

/// The figure the README gives: "overall exposure level of **N**".
fn readme_exposure() -> f64 {
    let text = read(&root().join("README.md"));
    let key = "overall exposure level of **";
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("the README gives no {key:?}"));
    let rest = &text[at + key.len()..];
    let end = rest.find("**").unwrap();
    rest[..end].parse().unwrap()
}

/// `systemd-analyze security`'s overall exposure level of the unit file.
fn exposure(unit: &Path) -> f64 {
    let o = Command::new("systemd-analyze")
        .args(["security", "--offline=true"])
        .arg(unit)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.contains("Overall exposure level for"))
        .unwrap_or_else(|| panic!("{text}"));
    let figure = line.rsplit(": ").next().unwrap();
    figure.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn package_unit_passes_systemd_analyze_verify_and_rates_as_the_readme_says() {
    crate::render::need_systemd_analyze();
    let env = Env::new();
    // `verify` checks that the binary exists: this one, in the same unit.
    let unit = env.path("baton.service");
    std::fs::write(&unit, rendered_unit(BATON)).unwrap();
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "systemd-analyze verify complained");
    let figure = exposure(&debian("baton.service"));
    let readme = readme_exposure();
    assert!(
        figure <= readme,
        "systemd-analyze security rates the packaged unit {figure}, the README says {readme}"
    );
}

/// Whether the install test can run here, and why not.
fn why_not_install() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root: dpkg -i needs root".into());
    }
    if Command::new("dpkg").arg("--version").output().is_err() {
        return Some("no dpkg on this machine".into());
    }
    if ["baton", "baton-dbgsym"]
        .iter()
        .any(|p| status(p).is_some())
    {
        return Some("a baton package is installed here, which the test would purge".into());
    }
    for p in ["/etc/baton", "/var/lib/baton", "/usr/bin/baton"] {
        if Path::new(p).exists() {
            return Some(format!("{p} exists, which the test would remove"));
        }
    }
    if passwd_line("baton").is_some() {
        return Some("a user baton exists, which the test would remove".into());
    }
    None
}

/// dpkg's status of `package` (`ii`: installed; `rc`: removed, its
/// configuration kept), or `None` when dpkg has none of its files.
fn status(package: &str) -> Option<String> {
    let o = Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Abbrev}", package])
        .output()
        .unwrap();
    let s = stdout(&o).trim().to_owned();
    (code(&o) == 0 && s.len() >= 2 && !s[1..].starts_with('n')).then_some(s)
}

/// The `/etc/passwd` line of `user`.
fn passwd_line(user: &str) -> Option<String> {
    let o = Command::new("getent")
        .args(["passwd", user])
        .output()
        .unwrap();
    (code(&o) == 0).then(|| stdout(&o).trim().to_owned())
}

fn group_exists(group: &str) -> bool {
    let o = Command::new("getent")
        .args(["group", group])
        .output()
        .unwrap();
    code(&o) == 0
}

/// Purges the packages when dropped, so that a failing test leaves the
/// machine as it found it.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        // OK to ignore: nothing to purge is not a failure, and a panic here
        // would hide the one that brought us here.
        let _ = Command::new("dpkg")
            .args(["--purge", "baton", "baton-dbgsym"])
            .output();
    }
}

fn dpkg(args: &[&str]) -> Output {
    let o = Command::new("dpkg")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "dpkg {args:?}: {}{}", stdout(&o), stderr(&o));
    o
}

/// `dpkg -L PACKAGE`: the regular files only.
fn listed_files(package: &str) -> BTreeSet<PathBuf> {
    let o = dpkg(&["-L", package]);
    stdout(&o)
        .lines()
        .map(PathBuf::from)
        .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_file()))
        .collect()
}

/// Every path under the directories a package could touch, but the backups
/// and lock of the user database that the user tools keep (`/etc/passwd-`,
/// `/etc/.pwd.lock`): `dpkg --purge` must leave this as it found it.
fn machine() -> BTreeSet<PathBuf> {
    let roots = [
        "/etc",
        "/usr/bin",
        "/usr/lib/systemd",
        "/usr/lib/sysusers.d",
        "/usr/lib/tmpfiles.d",
        "/usr/lib/debug",
        "/usr/share/man/man1",
        "/usr/share/bash-completion",
        "/usr/share/zsh",
        "/usr/share/fish",
        "/usr/share/doc",
        "/var/lib",
    ];
    let tools = [
        "/etc/passwd-",
        "/etc/group-",
        "/etc/shadow-",
        "/etc/gshadow-",
        "/etc/.pwd.lock",
    ];
    let mut out = BTreeSet::new();
    let mut stack: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
    while let Some(p) = stack.pop() {
        let Ok(meta) = p.symlink_metadata() else {
            continue;
        };
        if meta.is_dir()
            && let Ok(entries) = std::fs::read_dir(&p)
        {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
        if !tools.iter().any(|t| p == Path::new(t)) {
            out.insert(p);
        }
    }
    out
}

/// `zcat FILE`.
fn gunzip(p: &Path) -> String {
    let o = Command::new("zcat").arg(p).output().unwrap();
    assert_eq!(code(&o), 0, "zcat {}: {}", p.display(), stderr(&o));
    stdout(&o)
}

/// The GNU build id of an ELF file (`readelf -n`).
fn build_id(p: &Path) -> String {
    let o = Command::new("readelf").arg("-n").arg(p).output().unwrap();
    assert_eq!(code(&o), 0, "readelf -n {}: {}", p.display(), stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build id in {}: {text}", p.display()));
    line.trim().to_owned()
}

/// The section names of an ELF file (`readelf -S`).
fn sections(p: &Path) -> Vec<String> {
    let o = Command::new("readelf")
        .args(["-S", "--wide"])
        .arg(p)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "readelf -S {}: {}", p.display(), stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            l.starts_with('[')
                .then(|| l.split(']').nth(1))
                .flatten()
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_owned)
        })
        .collect()
}

/// Whether any process runs as `uid`.
fn runs_as(uid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok())
            && e.metadata().is_ok_and(|m| m.uid() == uid)
        {
            out.push(read(&e.path().join("comm")).trim().to_owned());
        }
    }
    out
}

fn mode(p: &Path) -> u32 {
    p.symlink_metadata()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// `/usr/bin/baton ARGS` as the user baton (`runuser`), in `/`.
fn as_baton(args: &[&str]) -> Output {
    Command::new("runuser")
        .args(["-u", "baton", "--", "/usr/bin/baton"])
        .args(args)
        .current_dir("/")
        .env_remove("BATON_CONFIG")
        .env_remove("BATON_STATE_DIR")
        .output()
        .unwrap()
}

#[test]
fn package_installs_every_file_where_it_belongs_and_purges_to_nothing() {
    if let Some(why) = why_not_install() {
        eprintln!(
            "package_installs_every_file_where_it_belongs_and_purges_to_nothing: skipped: {why}"
        );
        return;
    }
    let have = Command::new("cargo").args(["deb", "--version"]).output();
    assert!(
        have.is_ok_and(|o| o.status.success()),
        "cargo-deb is not installed: `cargo install cargo-deb --locked` (`.ci/run` installs it) \
         to build and check the Debian package"
    );
    let env = Env::new();
    let out = env.path("debian");
    // The package of this very binary: the test build's profile, no build.
    let target = Path::new(BATON).parent().unwrap().parent().unwrap();
    let o = Command::new("bash")
        .arg(root().join("scripts/deb.sh"))
        .args(["--profile", "dev", "--no-build", "--fast", "--out"])
        .arg(&out)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "scripts/deb.sh: {}{}", stdout(&o), stderr(&o));
    let version = env!("CARGO_PKG_VERSION");
    let arch = stdout(
        &Command::new("dpkg")
            .arg("--print-architecture")
            .output()
            .unwrap(),
    )
    .trim()
    .to_owned();
    let deb = out.join(format!("baton_{version}-1_{arch}.deb"));
    let ddeb = out.join(format!("baton-dbgsym_{version}-1_{arch}.ddeb"));
    assert!(deb.is_file() && ddeb.is_file(), "{}", stdout(&o));
    // Debian's own checker finds no error and no warning but the one any
    // package outside Debian's archive gets (its first upload closes no bug
    // of Debian's tracker).
    let o = Command::new("lintian").arg(&deb).output().unwrap();
    let found: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| l.starts_with("E: ") || l.starts_with("W: "))
        .filter(|l| !l.contains("initial-upload-closes-no-bugs"))
        .map(str::to_owned)
        .collect();
    assert!(found.is_empty(), "lintian: {found:?}\n{}", stderr(&o));

    let before = machine();
    let _purge = Purge;
    dpkg(&["-i", deb.to_str().unwrap(), ddeb.to_str().unwrap()]);

    // Every file where it belongs, and no other.
    let bin = Path::new("/usr/bin/baton");
    let pages = {
        let dir = env.path("man");
        let o = Command::new(BATON)
            .args(["man", "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let mut pages = Vec::new();
        for written in stdout(&o).lines() {
            let name = Path::new(written).file_name().unwrap().to_str().unwrap();
            pages.push((
                PathBuf::from(format!("/usr/share/man/man1/{name}.gz")),
                read(Path::new(written)),
            ));
        }
        pages
    };
    assert!(pages.len() > 20, "{pages:?}");
    let completions = [
        ("bash", "/usr/share/bash-completion/completions/baton"),
        ("zsh", "/usr/share/zsh/vendor-completions/_baton"),
        ("fish", "/usr/share/fish/vendor_completions.d/baton.fish"),
    ];
    let mut expected: BTreeSet<PathBuf> = [
        "/usr/bin/baton",
        "/usr/lib/systemd/system/baton.service",
        "/usr/lib/sysusers.d/baton.conf",
        "/usr/lib/tmpfiles.d/baton.conf",
        "/etc/baton/baton.toml",
        "/usr/share/doc/baton/copyright",
        "/usr/share/doc/baton/changelog.Debian.gz",
        "/usr/share/doc/baton/README.md.gz",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    expected.extend(pages.iter().map(|(p, _)| p.clone()));
    expected.extend(completions.iter().map(|(_, p)| PathBuf::from(p)));
    let files = listed_files("baton");
    assert_eq!(files, expected);
    for f in &files {
        let want = if f == bin { 0o755 } else { 0o644 };
        assert_eq!(mode(f), want, "{}", f.display());
        let meta = f.metadata().unwrap();
        assert_eq!((meta.uid(), meta.gid()), (0, 0), "{}", f.display());
    }
    let conffiles = stdout(&dpkg(&["-s", "baton"]));
    assert!(
        conffiles.contains("Conffiles:\n /etc/baton/baton.toml "),
        "{conffiles}"
    );
    for (shipped, installed) in [
        ("baton.service", "/usr/lib/systemd/system/baton.service"),
        ("baton.sysusers", "/usr/lib/sysusers.d/baton.conf"),
        ("baton.tmpfile", "/usr/lib/tmpfiles.d/baton.conf"),
        ("baton.toml", "/etc/baton/baton.toml"),
    ] {
        assert_eq!(
            read(Path::new(installed)),
            read(&debian(shipped)),
            "{installed}"
        );
    }
    // The pages and scripts are the installed binary's own.
    for (page, text) in &pages {
        assert_eq!(&gunzip(page), text, "{}", page.display());
    }
    for (shell, path) in completions {
        let o = Command::new("baton")
            .args(["completions", shell])
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(read(Path::new(path)), stdout(&o), "{path}");
    }
    // Stripped, its symbols in the dbgsym package under its build id.
    let id = build_id(bin);
    let debug = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    assert_eq!(
        listed_files("baton-dbgsym"),
        BTreeSet::from([debug.clone()])
    );
    // `.debug_gdb_scripts` is no debug information but part of the loaded
    // program (it names gdb's pretty-printers for Rust): strip keeps it.
    let stripped = sections(bin);
    assert!(
        !stripped
            .iter()
            .any(|s| s == ".symtab" || (s.starts_with(".debug_") && s != ".debug_gdb_scripts")),
        "{stripped:?}"
    );
    assert!(
        sections(&debug).iter().any(|s| s == ".symtab"),
        "{}",
        debug.display()
    );
    assert_eq!(build_id(&debug), id);

    // The user, its state directory and jobs.d/, and nothing running.
    let user = passwd_line("baton").expect("no user baton");
    let fields: Vec<&str> = user.split(':').collect();
    assert_eq!(
        fields[4..],
        ["baton scheduler", "/var/lib/baton", "/usr/sbin/nologin"]
    );
    let uid: u32 = fields[2].parse().unwrap();
    assert!(uid < 1000, "not a system user: {user}");
    for dir in ["/var/lib/baton", "/etc/baton/jobs.d"] {
        let meta = std::fs::symlink_metadata(dir).unwrap();
        assert!(meta.is_dir(), "{dir}");
        assert_eq!((meta.uid(), mode(Path::new(dir))), (uid, 0o700), "{dir}");
    }
    assert!(
        !Path::new("/etc/systemd/system/multi-user.target.wants/baton.service").exists(),
        "installing enabled the unit"
    );
    assert_eq!(
        runs_as(uid),
        Vec::<String>::new(),
        "installing started something"
    );

    // It runs.
    let o = Command::new(bin).arg("--version").output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("baton {version}\n"));
    let o = Command::new(bin).args(["man", "exec"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        gunzip(Path::new("/usr/share/man/man1/baton-exec.1.gz"))
    );
    // The doctor finds nothing wrong with what the package set up (a host
    // whose clock is not synchronised, or that nothing drives yet, only
    // warns).
    let o = as_baton(&["doctor", "--config", "/etc/baton/baton.toml"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("FAIL"), "{}", stdout(&o));
    let o = as_baton(&["config", "--config", "/etc/baton/baton.toml"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = as_baton(&["status", "--config", "/etc/baton/baton.toml"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    // The state directory takes a lock of the user baton's.
    let o = as_baton(&[
        "exec",
        "--state-dir",
        "/var/lib/baton",
        "--name",
        "probe",
        "--",
        "true",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let lock = Path::new("/var/lib/baton/locks/probe.lock");
    assert_eq!(lock.metadata().unwrap().uid(), uid);
    crate::render::need_systemd_analyze();
    let o = Command::new("systemd-analyze")
        .args(["verify", "/usr/lib/systemd/system/baton.service"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "systemd-analyze verify complained");

    // Removed: the configuration, the state and the user stay.
    dpkg(&["-r", "baton", "baton-dbgsym"]);
    for f in files.iter().chain([&debug]) {
        let kept = f == Path::new("/etc/baton/baton.toml");
        assert_eq!(f.exists(), kept, "{}", f.display());
    }
    assert!(lock.is_file());
    assert!(passwd_line("baton").is_some());
    assert_eq!(status("baton").as_deref(), Some("rc"));
    assert_eq!(status("baton-dbgsym"), None);

    // Purged: nothing left.
    dpkg(&["--purge", "baton", "baton-dbgsym"]);
    let after = machine();
    let left: Vec<_> = after.difference(&before).collect();
    let gone: Vec<_> = before.difference(&after).collect();
    assert!(
        left.is_empty() && gone.is_empty(),
        "left {left:?}, gone {gone:?}"
    );
    assert_eq!(passwd_line("baton"), None);
    assert!(!group_exists("baton"));
    assert_eq!(status("baton"), None);
}
