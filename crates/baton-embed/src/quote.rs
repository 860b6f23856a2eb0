//! One string quoting for what the scheduler writes as text for other
//! readers: a TOML basic string (a job's declaration) and a JSON string
//! (an alert) are read the same way here, so one function writes both.
//! It only quotes; it never parses.

use std::fmt::Write as _;

/// `s` between double quotes, with `"`, `\` and every control character
/// escaped (`\"`, `\\`, `\u00XX`): a TOML basic string and a JSON string
/// alike.
pub(crate) fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn quotes_and_controls_are_escaped() {
        assert_eq!(quoted("*/5 * * * *"), "\"*/5 * * * *\"");
        assert_eq!(quoted("a\"b\\c\n\u{7f}"), "\"a\\\"b\\\\c\\u000a\\u007f\"");
    }
}
