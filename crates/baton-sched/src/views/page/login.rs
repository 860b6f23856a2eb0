//! The login form the daemon serves at `GET /login` when it has a token: a
//! person types the token (the contents of `[daemon] token_file`) and the
//! daemon answers with a session cookie that opens the status page.
//!
//! [`render`] is pure, like the page's own renderer, and shares its style.
//! The form posts `token` to `/login` on the same origin, with no
//! JavaScript; the field is a password field, so the token is neither shown
//! nor kept by the browser's form history.

use std::fmt::Write as _;
use std::time::Duration;

use super::{STYLE, escape};
use crate::units::show_duration;

/// The login form, saying `problem` (escaped here) above it when the last
/// attempt was refused, and that a session lasts `lasts`.
///
/// # Example
///
/// ```
/// use std::time::Duration;
///
/// let html = baton_sched::views::page::login::render(Some("wrong token"), Duration::from_secs(3600));
/// assert!(html.contains("<form method=\"post\" action=\"/login\">"));
/// assert!(html.contains("wrong token"));
/// ```
pub fn render(problem: Option<&str>, lasts: Duration) -> String {
    let mut out = String::with_capacity(4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    let _ = writeln!(
        out,
        "<title>baton: log in</title>\n<style>\n{STYLE}{LOGIN_STYLE}</style>\n</head>\n<body>"
    );
    out.push_str("<main class=\"login\">\n<h1>baton: log in</h1>\n");
    if let Some(p) = problem {
        let _ = writeln!(out, "<p class=\"banner\" role=\"alert\">{}</p>", escape(p));
    }
    out.push_str(
        "<form method=\"post\" action=\"/login\">\n\
         <label for=\"token\">Token (the contents of <code>[daemon] token_file</code>)</label>\n\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" \
         required autofocus>\n\
         <button type=\"submit\">Log in</button>\n\
         </form>\n",
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">A session lasts {}, or until you log out or the daemon restarts. \
         It opens the page and the API's reads; changes still take the bearer token or the \
         daemon's socket.</p>",
        escape(&show_duration(lasts))
    );
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

const LOGIN_STYLE: &str = "\
.login{max-width:26rem}
form{display:grid;gap:.5rem;margin:0 0 1rem}
input{font:inherit;padding:.4rem .5rem;border:1px solid #d8dee4;border-radius:6px;width:100%}
button{font:inherit;padding:.4rem .8rem;border:1px solid #8c959f;border-radius:6px;background:#fff;cursor:pointer}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_posts_the_token_to_its_own_origin_and_escapes_the_problem() {
        let html = render(None, Duration::from_secs(12 * 3600));
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<form method=\"post\" action=\"/login\">"));
        assert!(html.contains("name=\"token\" type=\"password\""));
        assert!(!html.contains("role=\"alert\""));
        assert!(!html.contains("<script"));
        assert!(!html.contains("http://") && !html.contains("https://"));
        assert!(html.contains("A session lasts 12h,"), "{html}");
        let html = render(Some("<b>wrong</b>"), Duration::from_secs(60));
        assert!(html.contains("&lt;b&gt;wrong&lt;/b&gt;"));
        assert!(!html.contains("<b>"));
    }
}
