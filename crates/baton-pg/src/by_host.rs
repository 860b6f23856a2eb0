//! A URL naming several hosts whose passwords differ: each host's own line
//! of the file `PGPASSFILE` names ([`crate::passfile`]), as libpq looks one
//! up for each host it tries.
//!
//! The driver gives every host of a configuration the same password, so a
//! target whose hosts' passwords differ keeps one per host ([`ByHost`]).
//! Whatever the passwords, a connection to a URL naming several hosts tries
//! each as a configuration of its own ([`each`]): that host only, with its
//! password and every other setting of the whole (TLS,
//! `target_session_attrs`, timeouts, keepalives), so that each attempt can
//! be bounded alone: the driver's own bound covers a host's TCP connection
//! only, and a host that accepts and never answers (a frozen primary) would
//! hold the attempt, and every host after it, for the caller's whole
//! deadline. The hosts are tried in the order the driver would try them (as
//! listed, or shuffled with `load_balance_hosts=random`), each failure
//! moving on to the next, as the driver moves on.
//!
//! A `ByHost` never shows a password: its `Debug` says how many it holds.

use tokio_postgres::Config;
use tokio_postgres::config::{Host, LoadBalanceHosts};

/// Each host's password, in the order of the configuration's hosts.
#[derive(Clone)]
pub(crate) struct ByHost {
    passwords: Vec<Option<String>>,
}

impl std::fmt::Debug for ByHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ByHost({} hosts)", self.passwords.len())
    }
}

impl ByHost {
    /// `passwords`, one for each of a configuration's hosts, when they
    /// differ; `Err` with the one password they share when they do not.
    pub(crate) fn of(passwords: Vec<Option<String>>) -> Result<Self, Option<String>> {
        let first = passwords.first().cloned().flatten();
        if passwords.iter().all(|p| *p == first) {
            Err(first)
        } else {
            Ok(Self { passwords })
        }
    }

    /// One attempt per host of `config`, each naming that host only with
    /// its password, in the order they are to be tried.
    pub(crate) fn attempts(&self, config: &Config) -> Vec<Attempt> {
        each(config, |i| {
            self.passwords
                .get(i)
                .cloned()
                .flatten()
                .map(String::into_bytes)
        })
    }
}

/// One host of a configuration to connect to: its name as messages give it
/// (`host:port`), and the configuration naming it alone.
pub(crate) struct Attempt {
    pub(crate) host: String,
    pub(crate) config: Config,
}

/// One attempt per host of `config`, host `i` with `password(i)`, in the
/// order the driver would try them.
pub(crate) fn each(config: &Config, password: impl Fn(usize) -> Option<Vec<u8>>) -> Vec<Attempt> {
    let named = hosts(config);
    let mut order: Vec<usize> = (0..named.len()).collect();
    if config.get_load_balance_hosts() == LoadBalanceHosts::Random {
        use rand::seq::SliceRandom;
        order.shuffle(&mut rand::rng());
    }
    order
        .into_iter()
        .map(|i| Attempt {
            host: format!("{}:{}", named[i].0, named[i].1),
            config: only(config, i, password(i).as_deref()),
        })
        .collect()
}

/// Each host of `config` as a password file names it (a unix socket by
/// its directory) with its port, in the configuration's order.
pub(crate) fn hosts(config: &Config) -> Vec<(String, u16)> {
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let name = match h {
                Host::Tcp(h) => h.clone(),
                Host::Unix(p) => p.display().to_string(),
            };
            (name, port_of(config, i))
        })
        .collect()
}

/// The port of host `i`: its own, else the one port every host shares,
/// else 5432 (as the driver reads them).
fn port_of(config: &Config, i: usize) -> u16 {
    let ports = config.get_ports();
    ports.get(i).or(ports.first()).copied().unwrap_or(5432)
}

/// `config` with host `i` only, and `password`.
fn only(config: &Config, i: usize, password: Option<&[u8]>) -> Config {
    let mut c = Config::new();
    if let Some(u) = config.get_user() {
        c.user(u);
    }
    if let Some(p) = password {
        c.password(p);
    }
    if let Some(d) = config.get_dbname() {
        c.dbname(d);
    }
    if let Some(o) = config.get_options() {
        c.options(o);
    }
    if let Some(a) = config.get_application_name() {
        c.application_name(a);
    }
    match config.get_hosts().get(i) {
        Some(Host::Tcp(h)) => {
            c.host(h);
        }
        Some(Host::Unix(p)) => {
            c.host_path(p);
        }
        None => {}
    }
    if let Some(a) = config.get_hostaddrs().get(i) {
        c.hostaddr(*a);
    }
    c.port(port_of(config, i));
    if let Some(t) = config.get_connect_timeout() {
        c.connect_timeout(*t);
    }
    if let Some(t) = config.get_tcp_user_timeout() {
        c.tcp_user_timeout(*t);
    }
    c.keepalives(config.get_keepalives())
        .keepalives_idle(config.get_keepalives_idle());
    if let Some(t) = config.get_keepalives_interval() {
        c.keepalives_interval(t);
    }
    if let Some(n) = config.get_keepalives_retries() {
        c.keepalives_retries(n);
    }
    c.ssl_mode(config.get_ssl_mode())
        .ssl_negotiation(config.get_ssl_negotiation())
        .target_session_attrs(config.get_target_session_attrs())
        .channel_binding(config.get_channel_binding())
        .load_balance_hosts(config.get_load_balance_hosts());
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio_postgres::config::TargetSessionAttrs;

    #[test]
    fn the_same_password_everywhere_needs_no_host_of_its_own() {
        let same = ByHost::of(vec![Some("a".into()), Some("a".into())]);
        assert_eq!(same.unwrap_err().as_deref(), Some("a"));
        assert_eq!(ByHost::of(vec![None, None]).unwrap_err(), None);
        assert!(ByHost::of(vec![None, Some("b".into())]).is_ok());
    }

    #[test]
    fn each_host_keeps_every_setting_but_the_other_hosts() {
        let mut config: Config = "postgres://u@db1:5433,db2:5434/d?target_session_attrs=read-write"
            .parse()
            .unwrap();
        config
            .application_name("baton")
            .connect_timeout(Duration::from_secs(3))
            .tcp_user_timeout(Duration::from_secs(4))
            .keepalives_idle(Duration::from_secs(5))
            .keepalives_retries(2);
        assert_eq!(
            hosts(&config),
            [("db1".to_owned(), 5433), ("db2".to_owned(), 5434)]
        );
        let by = ByHost::of(vec![None, Some("two".into())]).unwrap();
        let [one, two] = by.attempts(&config).try_into().ok().unwrap();
        assert_eq!(
            (one.host.as_str(), two.host.as_str()),
            ("db1:5433", "db2:5434")
        );
        let (one, two) = (one.config, two.config);
        for (c, host, port) in [(&one, "db1", 5433), (&two, "db2", 5434)] {
            assert_eq!(c.get_hosts(), [Host::Tcp(host.to_owned())]);
            assert_eq!(c.get_ports(), [port]);
            assert_eq!((c.get_user(), c.get_dbname()), (Some("u"), Some("d")));
            assert_eq!(c.get_application_name(), Some("baton"));
            assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::ReadWrite);
            assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(3)));
            assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(4)));
            assert_eq!(c.get_keepalives_idle(), Duration::from_secs(5));
            assert_eq!(c.get_keepalives_retries(), Some(2));
        }
        assert_eq!(one.get_password(), None);
        assert_eq!(two.get_password(), Some(&b"two"[..]));
        // One port for every host applies to each.
        let mut config = Config::new();
        config.host("db1").host("db2").port(7);
        assert_eq!(
            hosts(&config),
            [("db1".to_owned(), 7), ("db2".to_owned(), 7)]
        );
    }
}
