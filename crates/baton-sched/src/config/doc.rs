//! A TOML document as the configuration reads it: every table, key and value
//! with the line it was written on, so that every error and every
//! provenance names `FILE:LINE`. This module only parses; what a key means
//! is [`super::read`]'s business.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// A value, with where it was written.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// The line (1-based) where the value starts.
    pub(crate) line: u32,
    /// The value.
    pub(crate) kind: Kind,
}

/// What a value is.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// A string.
    Str(String),
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A date or time.
    Datetime(String),
    /// An array.
    Array(Vec<Node>),
    /// A table, its entries in file order.
    Table(Vec<Entry>),
}

/// One `key = value` of a table.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The key.
    pub(crate) key: String,
    /// The line the key is written on.
    pub(crate) line: u32,
    /// The value.
    pub(crate) value: Node,
}

impl Kind {
    /// The value's type, in words for an error message.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Kind::Str(_) => "a string",
            Kind::Int(_) => "an integer",
            Kind::Float(_) => "a float",
            Kind::Bool(_) => "a boolean",
            Kind::Datetime(_) => "a date",
            Kind::Array(_) => "an array",
            Kind::Table(_) => "a table",
        }
    }

    /// The value as written back for a message: strings quoted, the rest
    /// as TOML writes them.
    pub(crate) fn shown(&self) -> String {
        match self {
            Kind::Str(s) => format!("{s:?}"),
            Kind::Int(n) => n.to_string(),
            // As written: `100.0`, not `100` (a float is no whole number).
            Kind::Float(f) => format!("{f:?}"),
            Kind::Bool(b) => b.to_string(),
            Kind::Datetime(d) => d.clone(),
            Kind::Array(a) => format!(
                "[{}]",
                a.iter()
                    .map(|n| n.kind.shown())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Kind::Table(_) => "{…}".into(),
        }
    }
}

/// Line numbers of a text, from byte offsets.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self(starts)
    }

    fn of(&self, offset: usize) -> u32 {
        let i = self.0.partition_point(|&s| s <= offset);
        u32::try_from(i).unwrap_or(u32::MAX)
    }
}

/// Parses a document. The error carries the line and TOML's own message.
pub(crate) fn parse(text: &str) -> Result<Node, (u32, String)> {
    let lines = Lines::new(text);
    let doc = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |s| lines.of(s.start));
        (line, e.message().trim().to_owned())
    })?;
    let span = doc.span();
    Ok(Node {
        line: lines.of(span.start),
        kind: table(doc.into_inner(), &lines),
    })
}

fn table(t: DeTable<'_>, lines: &Lines) -> Kind {
    let mut entries: Vec<Entry> = t
        .into_iter()
        .map(|(k, v)| {
            let key_span: Range<usize> = k.span();
            Entry {
                key: k.into_inner().into_owned(),
                line: lines.of(key_span.start),
                value: node(v, lines),
            }
        })
        .collect();
    entries.sort_by_key(|e| e.line);
    Kind::Table(entries)
}

fn node(v: toml::Spanned<DeValue<'_>>, lines: &Lines) -> Node {
    let line = lines.of(v.span().start);
    let kind = match v.into_inner() {
        DeValue::String(s) => Kind::Str(s.into_owned()),
        DeValue::Integer(i) => {
            Kind::Int(i128::from_str_radix(i.as_str(), i.radix()).unwrap_or(i128::MAX))
        }
        DeValue::Float(f) => Kind::Float(f.as_str().parse().unwrap_or(f64::NAN)),
        DeValue::Boolean(b) => Kind::Bool(b),
        DeValue::Datetime(d) => Kind::Datetime(d.to_string()),
        DeValue::Array(a) => Kind::Array(a.into_iter().map(|v| node(v, lines)).collect()),
        DeValue::Table(t) => table(t, lines),
    };
    Node { line, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_carry_their_lines() {
        let text = "# a comment\n[scheduler]\nretries = 3\n\n[jobs.backup]\nschedule = \"0 3 * * *\"\n[[jobs.backup.steps]]\nname = \"a\"\n";
        let doc = parse(text).unwrap();
        let Kind::Table(top) = &doc.kind else {
            panic!()
        };
        let sched = top.iter().find(|e| e.key == "scheduler").unwrap();
        let Kind::Table(s) = &sched.value.kind else {
            panic!()
        };
        assert_eq!(s[0].key, "retries");
        assert_eq!(s[0].line, 3);
        let jobs = top.iter().find(|e| e.key == "jobs").unwrap();
        let Kind::Table(j) = &jobs.value.kind else {
            panic!()
        };
        let Kind::Table(b) = &j[0].value.kind else {
            panic!()
        };
        let sch = b.iter().find(|e| e.key == "schedule").unwrap();
        assert_eq!(sch.line, 6);
        let steps = b.iter().find(|e| e.key == "steps").unwrap();
        let Kind::Array(a) = &steps.value.kind else {
            panic!()
        };
        let Kind::Table(step) = &a[0].kind else {
            panic!()
        };
        assert_eq!(step[0].line, 8);
    }

    #[test]
    fn a_float_is_shown_as_one() {
        assert_eq!(Kind::Float(100.0).shown(), "100.0");
        assert_eq!(Kind::Float(2.5).shown(), "2.5");
        assert_eq!(Kind::Int(100).shown(), "100");
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let (line, msg) = parse("a = 1\nb = \n").unwrap_err();
        assert_eq!(line, 2, "{msg}");
    }
}
