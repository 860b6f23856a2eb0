//! The report as text: one line per finding (`ok`, `WARN` or `FAIL`, the
//! check, what was found), a `fix:` line under each problem, and a last
//! line that sums up. A pure function; printing is the caller's.

use super::finding::{Report, Status};

/// The report in words.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    for f in &r.checks {
        out.push_str(&format!(
            "{:<4}  {}: {}\n",
            f.status.shown(),
            f.check,
            f.message
        ));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("      fix: {fix}\n"));
        }
    }
    let (fails, warns) = (r.count(Status::Fail), r.count(Status::Warn));
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    out.push_str(&match (fails, warns) {
        (0, 0) => "healthy: no problem found\n".to_owned(),
        (0, w) => format!("healthy, with {}\n", plural(w, "warning", "warnings")),
        (f, 0) => format!("unhealthy: {}\n", plural(f, "failure", "failures")),
        (f, w) => format!(
            "unhealthy: {} and {}\n",
            plural(f, "failure", "failures"),
            plural(w, "warning", "warnings")
        ),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::super::finding::Finding;
    use super::*;

    #[test]
    fn a_problem_has_its_fix_under_it_and_the_last_line_sums_up() {
        let r = Report::of(vec![
            Finding::ok("config", "/etc/baton.toml: 2 jobs"),
            Finding::fail(
                "state-dir",
                "/srv/s is writable by others",
                "chmod 0700 /srv/s",
            ),
            Finding::warn("time-sync", "not synchronised", "enable NTP"),
        ]);
        assert!(!r.healthy);
        assert_eq!(
            render(&r),
            "ok    config: /etc/baton.toml: 2 jobs\n\
             FAIL  state-dir: /srv/s is writable by others\n      fix: chmod 0700 /srv/s\n\
             WARN  time-sync: not synchronised\n      fix: enable NTP\n\
             unhealthy: 1 failure and 1 warning\n"
        );
        let r = Report::of(vec![Finding::warn("driver", "nothing", "install one")]);
        assert!(r.healthy);
        assert!(render(&r).ends_with("healthy, with 1 warning\n"));
    }
}
