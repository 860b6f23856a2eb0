//! The text exposition: metric families written in either [`Format`], by
//! one pure function, [`encode`].
//!
//! A [`Family`] is named by its *base*: a counter's without `_total`, an
//! info's without `_info`, as OpenMetrics names them; its samples carry
//! the suffix that makes their names (`_total`, `_bucket`, `_sum`, …). The
//! two formats differ only in their metadata: 0.0.4 names a counter's
//! family `…_total` and an info's `…_info` and types the latter a gauge (it
//! has no `info` type), writes no `# UNIT` lines and no `# EOF`; OpenMetrics
//! writes the base, the `info` type, a `# UNIT` line for a family with a
//! unit, and ends with `# EOF`. Samples are written alike in both, so every
//! series is the same whichever format a scraper chose. A family with no
//! sample (a "never" timestamp of every job) is written with its metadata
//! alone, which both formats allow.

use std::fmt::Write as _;

use super::Format;

/// What a family measures, as both formats type it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
    /// Always 1, with the facts in its labels.
    Info,
}

/// One metric family: its base name, help, kind, unit and samples.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Family {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) kind: Kind,
    /// The unit the name ends with (`seconds`, `bytes`), for OpenMetrics'
    /// `# UNIT`.
    pub(crate) unit: Option<&'static str>,
    pub(crate) samples: Vec<Sample>,
}

/// One sample: the suffix after the family's base, its labels, its value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub(crate) suffix: &'static str,
    pub(crate) labels: Vec<(&'static str, String)>,
    pub(crate) value: f64,
}

impl Family {
    pub(crate) fn new(name: &'static str, help: &'static str, kind: Kind) -> Self {
        Self {
            name,
            help,
            kind,
            unit: None,
            samples: Vec::new(),
        }
    }

    /// With `unit`, which `name` ends with.
    pub(crate) fn unit(mut self, unit: &'static str) -> Self {
        debug_assert!(self.name.ends_with(unit), "{} {unit}", self.name);
        self.unit = Some(unit);
        self
    }

    /// Adds the family's own sample (`_total` for a counter, `_info` for an
    /// info, the base for a gauge).
    pub(crate) fn push(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        let suffix = match self.kind {
            Kind::Counter => "_total",
            Kind::Info => "_info",
            Kind::Gauge | Kind::Histogram => "",
        };
        self.samples.push(Sample {
            suffix,
            labels,
            value,
        });
    }

    /// Adds one histogram's samples: `counts` are the observations in each
    /// bucket alone, bound by bound (`+Inf` last), and are written
    /// cumulative, then `_sum` and `_count`.
    pub(crate) fn push_histogram(
        &mut self,
        labels: &[(&'static str, String)],
        bounds: &[f64],
        counts: &[u64],
        sum: f64,
    ) {
        let mut total = 0;
        for (&le, &n) in bounds.iter().zip(counts) {
            total += n;
            let mut l = labels.to_vec();
            l.push(("le", float_label(le)));
            self.samples.push(Sample {
                suffix: "_bucket",
                labels: l,
                value: total as f64,
            });
        }
        for (suffix, value) in [("_sum", sum), ("_count", total as f64)] {
            self.samples.push(Sample {
                suffix,
                labels: labels.to_vec(),
                value,
            });
        }
    }

    /// The name its metadata lines give it in `format`.
    fn meta_name(&self, format: Format) -> String {
        match (format, self.kind) {
            (Format::Prometheus, Kind::Counter) => format!("{}_total", self.name),
            (Format::Prometheus, Kind::Info) => format!("{}_info", self.name),
            _ => self.name.to_owned(),
        }
    }

    fn type_word(&self, format: Format) -> &'static str {
        match (self.kind, format) {
            (Kind::Counter, _) => "counter",
            (Kind::Gauge, _) | (Kind::Info, Format::Prometheus) => "gauge",
            (Kind::Histogram, _) => "histogram",
            (Kind::Info, Format::OpenMetrics) => "info",
        }
    }
}

/// Writes `families` in `format`.
pub(crate) fn encode(families: &[Family], format: Format) -> String {
    let mut out = String::new();
    for f in families {
        let name = f.meta_name(format);
        // OK because writing into a String cannot fail.
        let _ = writeln!(out, "# HELP {name} {}", escape_help(f.help, format));
        let _ = writeln!(out, "# TYPE {name} {}", f.type_word(format));
        if let (Format::OpenMetrics, Some(unit)) = (format, f.unit) {
            let _ = writeln!(out, "# UNIT {name} {unit}");
        }
        for s in &f.samples {
            out.push_str(f.name);
            out.push_str(s.suffix);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{k}=\"{}\"", escape_label(v));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", number(s.value));
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// A value: whole numbers without a fraction (`3`), others as Rust writes
/// them (never in exponent form), `+Inf`, `-Inf`, `NaN`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A float in a label (`le`), in the canonical form OpenMetrics asks for
/// and Prometheus 3 normalises to in 0.0.4 as well (`1.0`, `0.1`, `+Inf`),
/// so a bucket's series is one whichever format was scraped.
fn float_label(v: f64) -> String {
    if v.is_infinite() {
        number(v)
    } else if v.fract() == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// A label value: `\`, `"` and a line feed escaped, in both formats.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A help text: `\` and a line feed escaped, and in OpenMetrics `"` too.
fn escape_help(v: &str, format: Format) -> String {
    let v = v.replace('\\', "\\\\").replace('\n', "\\n");
    match format {
        Format::Prometheus => v,
        Format::OpenMetrics => v.replace('"', "\\\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> Vec<Family> {
        let job = || vec![("baton_job", "a\"b\\c\nd".to_owned())];
        let mut c = Family::new("x_runs", "Runs \"done\"\\.", Kind::Counter);
        c.push(job(), 3.0);
        let mut h = Family::new("x_seconds", "How long.", Kind::Histogram).unit("seconds");
        h.push_histogram(&job(), &[0.5, 1.0, f64::INFINITY], &[1, 0, 2], 7.25);
        let mut i = Family::new("x_build", "Version.", Kind::Info);
        i.push(vec![("version", "1.2.3".into())], 1.0);
        let empty = Family::new("x_when_seconds", "Never.", Kind::Gauge).unit("seconds");
        vec![c, h, i, empty]
    }

    #[test]
    fn the_0_0_4_format_names_counters_total_and_has_no_info_unit_or_eof() {
        let text = encode(&families(), Format::Prometheus);
        assert_eq!(
            text,
            "# HELP x_runs_total Runs \"done\"\\\\.\n\
             # TYPE x_runs_total counter\n\
             x_runs_total{baton_job=\"a\\\"b\\\\c\\nd\"} 3\n\
             # HELP x_seconds How long.\n\
             # TYPE x_seconds histogram\n\
             x_seconds_bucket{baton_job=\"a\\\"b\\\\c\\nd\",le=\"0.5\"} 1\n\
             x_seconds_bucket{baton_job=\"a\\\"b\\\\c\\nd\",le=\"1.0\"} 1\n\
             x_seconds_bucket{baton_job=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 3\n\
             x_seconds_sum{baton_job=\"a\\\"b\\\\c\\nd\"} 7.25\n\
             x_seconds_count{baton_job=\"a\\\"b\\\\c\\nd\"} 3\n\
             # HELP x_build_info Version.\n\
             # TYPE x_build_info gauge\n\
             x_build_info{version=\"1.2.3\"} 1\n\
             # HELP x_when_seconds Never.\n\
             # TYPE x_when_seconds gauge\n"
        );
    }

    #[test]
    fn openmetrics_names_families_by_their_base_with_units_and_eof() {
        let text = encode(&families(), Format::OpenMetrics);
        assert!(
            text.starts_with(
                "# HELP x_runs Runs \\\"done\\\"\\\\.\n# TYPE x_runs counter\nx_runs_total{"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE x_seconds histogram\n# UNIT x_seconds seconds\n"),
            "{text}"
        );
        assert!(
            text.contains("# HELP x_build Version.\n# TYPE x_build info\nx_build_info{"),
            "{text}"
        );
        assert!(
            text.ends_with("# TYPE x_when_seconds gauge\n# UNIT x_when_seconds seconds\n# EOF\n"),
            "{text}"
        );
        // The samples are those of 0.0.4, line for line.
        let samples = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(
            samples(&text),
            samples(&encode(&families(), Format::Prometheus))
        );
    }

    #[test]
    fn numbers_are_written_plainly() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(1_795_921_202.0), "1795921202");
        assert_eq!(number(1_795_921_202.5), "1795921202.5");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(1e20), "100000000000000000000");
        assert_eq!(float_label(10800.0), "10800.0");
        assert_eq!(float_label(0.1), "0.1");
    }
}
