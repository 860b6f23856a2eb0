//! Browser sessions: how a person who typed the token into `GET /login`
//! reads the page without sending `Authorization: Bearer` (which a browser
//! cannot).
//!
//! A session is a random id (32 bytes from `getrandom(2)`, hex in the
//! cookie), kept in this process's memory only: the cookie never holds the
//! token or anything derived from it, a restart of the daemon or a change
//! of its token ends every session, and a logout ends one. A session lasts
//! [`LIFETIME`] from its login, by the boot clock (a step of the wall clock
//! neither shortens nor stretches it); at most [`MAX`] are kept, the oldest
//! going first. Ids are compared in constant time, each against all.
//!
//! What a session opens is the guard's business ([`crate::guard`]): reads
//! only. Nothing here decides who may change anything.

use std::sync::Mutex;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, header};
use subtle::ConstantTimeEq;

/// The cookie's name.
pub(crate) const COOKIE: &str = "baton_session";

/// How long a session lasts from its login.
pub(crate) const LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// How many sessions are kept at once.
pub(crate) const MAX: usize = 64;

const ID_LEN: usize = 32;

struct Session {
    id: [u8; ID_LEN],
    /// The boot clock's reading when it ends.
    ends: Duration,
}

/// The sessions open now.
#[derive(Default)]
pub(crate) struct Sessions {
    open: Mutex<Vec<Session>>,
}

fn random_id() -> std::io::Result<[u8; ID_LEN]> {
    let mut id = [0u8; ID_LEN];
    let mut filled = 0;
    while filled < id.len() {
        match rustix::rand::getrandom(&mut id[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(id)
}

fn hex(id: &[u8; ID_LEN]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(ID_LEN * 2);
    for b in id {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Option<[u8; ID_LEN]> {
    let b = s.as_bytes();
    if b.len() != ID_LEN * 2 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut id = [0u8; ID_LEN];
    for (i, pair) in b.chunks_exact(2).enumerate() {
        id[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(id)
}

impl Sessions {
    fn locked(&self) -> std::sync::MutexGuard<'_, Vec<Session>> {
        // OK because no code panics while holding the lock, and each change
        // is one push or retain.
        match self.open.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Opens a session at `now` (the boot clock); its id, for the cookie.
    ///
    /// # Errors
    ///
    /// The kernel gave no random bytes.
    pub(crate) fn open(&self, now: Duration) -> std::io::Result<String> {
        let id = random_id()?;
        let mut open = self.locked();
        open.retain(|s| s.ends > now);
        if open.len() >= MAX {
            open.remove(0);
        }
        open.push(Session {
            id,
            ends: now + LIFETIME,
        });
        Ok(hex(&id))
    }

    /// Whether `given` (a cookie's value) is a session open at `now`.
    pub(crate) fn valid(&self, given: &str, now: Duration) -> bool {
        let Some(id) = unhex(given) else {
            return false;
        };
        let open = self.locked();
        let mut found = subtle::Choice::from(0);
        for s in open.iter().filter(|s| s.ends > now) {
            found |= s.id.ct_eq(&id);
        }
        found.into()
    }

    /// Ends the session `given`, if it is one.
    pub(crate) fn close(&self, given: &str) {
        if let Some(id) = unhex(given) {
            self.locked().retain(|s| !bool::from(s.id.ct_eq(&id)));
        }
    }

    /// Ends every session (the token changed).
    pub(crate) fn clear(&self) {
        self.locked().clear();
    }
}

/// The session cookie's value in `h`, if the request sent one.
pub(crate) fn cookie(h: &HeaderMap) -> Option<&str> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
}

/// Whether the request reached the daemon over https through a proxy
/// (`X-Forwarded-Proto: https`): the cookie is `Secure` then.
fn behind_https(h: &HeaderMap) -> bool {
    h.get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

fn attributes(h: &HeaderMap) -> &'static str {
    if behind_https(h) {
        "HttpOnly; SameSite=Strict; Path=/; Secure"
    } else {
        "HttpOnly; SameSite=Strict; Path=/"
    }
}

/// The `Set-Cookie` that opens session `id`, for a request with headers
/// `h`.
pub(crate) fn set(id: &str, h: &HeaderMap) -> HeaderValue {
    let v = format!(
        "{COOKIE}={id}; Max-Age={}; {}",
        LIFETIME.as_secs(),
        attributes(h)
    );
    // OK because the id is hex and the rest is ASCII.
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The `Set-Cookie` that makes a browser forget its session.
pub(crate) fn unset(h: &HeaderMap) -> HeaderValue {
    let v = format!("{COOKIE}=; Max-Age=0; {}", attributes(h));
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Duration = Duration::from_secs(1000);

    #[test]
    fn a_session_is_valid_until_it_ends_or_is_closed() {
        let s = Sessions::default();
        let id = s.open(T0).unwrap();
        assert_eq!(id.len(), 64);
        assert!(s.valid(&id, T0));
        assert!(s.valid(&id, T0 + LIFETIME - Duration::from_secs(1)));
        assert!(!s.valid(&id, T0 + LIFETIME));
        let other = s.open(T0).unwrap();
        assert_ne!(id, other);
        s.close(&id);
        assert!(!s.valid(&id, T0));
        assert!(s.valid(&other, T0));
        s.clear();
        assert!(!s.valid(&other, T0));
    }

    #[test]
    fn only_an_open_id_is_valid() {
        let s = Sessions::default();
        let id = s.open(T0).unwrap();
        let mut near = id.clone().into_bytes();
        near[0] = if near[0] == b'0' { b'1' } else { b'0' };
        for bad in [
            String::from_utf8(near).unwrap(),
            id.to_uppercase(),
            id[..63].to_owned(),
            format!("{id}0"),
            String::new(),
            "zz".repeat(32),
        ] {
            assert!(!s.valid(&bad, T0), "{bad}");
        }
    }

    #[test]
    fn the_oldest_session_goes_beyond_the_limit() {
        let s = Sessions::default();
        let first = s.open(T0).unwrap();
        for _ in 1..MAX {
            s.open(T0).unwrap();
        }
        assert!(s.valid(&first, T0));
        s.open(T0).unwrap();
        assert!(!s.valid(&first, T0));
    }

    #[test]
    fn the_cookie_is_found_among_others_and_is_secure_behind_https() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            "a=1; baton_session=abc ; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&h), Some("abc"));
        let set = set("abc", &h);
        assert_eq!(
            set.to_str().unwrap(),
            "baton_session=abc; Max-Age=43200; HttpOnly; SameSite=Strict; Path=/"
        );
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        assert!(
            super::set("abc", &h)
                .to_str()
                .unwrap()
                .ends_with("; Secure")
        );
        assert!(
            unset(&h)
                .to_str()
                .unwrap()
                .starts_with("baton_session=; Max-Age=0;")
        );
        assert_eq!(cookie(&HeaderMap::new()), None);
    }
}
