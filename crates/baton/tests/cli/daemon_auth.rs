//! Who may change things through `baton daemon`: the real binary, real
//! sockets, and requests sent by threads that are another user as far as
//! the kernel is concerned (`baton_testkit::user`).
//!
//! A TCP caller is anyone on the machine; only the token authenticates it.
//! The Unix socket knows its caller from the kernel: the daemon's own user,
//! root, or a member of `socket_group`.

use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use baton_testkit::client::{self as http, Answer};
use baton_testkit::user::User;
use rustix::process::Signal;

use crate::daemon::Daemon;
use crate::sched::Sched;
use crate::support::{eventually, mkfifo, pause, root, signal};

const JSON: (&str, &str) = ("Content-Type", "application/json");

/// A group no test user is in unless a test puts it there.
const GROUP: u32 = 4242;

fn code(a: &Answer) -> String {
    a.json()["error"]["code"].as_str().unwrap_or("").to_owned()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A daemon on loopback without a token: `nobody` (like any local user)
/// reaches its TCP port, and nothing it asks to change is changed or run;
/// only the daemon's own user, over the socket, may.
#[test]
fn daemon_tcp_without_a_token_is_read_only_for_every_local_user() {
    assert!(
        root(),
        "this test sends requests as another user: run it as root"
    );
    let s = Sched::new("");
    let marker = s.env.path("ran");
    s.write(&format!(
        "[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}\"\n",
        marker.display()
    ));
    let d = Daemon::start(&s, &[]);
    let addr = d.addr;
    let job = format!(r#"{{"every": "1h", "run": "touch {}"}}"#, marker.display());
    let answers = User::nobody().run(move || {
        let send = |method: &str, path: &str, body: &str| {
            (
                format!("{method} {path}"),
                http::request(addr, method, path, &[JSON], body).unwrap(),
            )
        };
        vec![
            send("PUT", "/v1/jobs/x", &job),
            send("POST", "/v1/jobs/main/run", ""),
            send("POST", "/v1/tick", ""),
            send("POST", "/v1/jobs/main/pause", ""),
            send("POST", "/v1/jobs/main/resume", ""),
            send("POST", "/v1/reload", ""),
            send("DELETE", "/v1/jobs/main", ""),
            send("GET", "/v1/jobs", ""),
        ]
    });
    for (what, a) in &answers[..answers.len() - 1] {
        assert_eq!(
            (a.status, code(a)),
            (403, "read_only".into()),
            "{what}: {}",
            a.body
        );
        let message = a.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("token_file"), "{what}: {message}");
        assert!(message.contains("daemon.sock"), "{what}: {message}");
    }
    let (_, reads) = answers.last().unwrap();
    assert_eq!(reads.status, 200, "{}", reads.body);
    // The daemon said so at start, and how to change things.
    let log = d.log();
    assert!(log.contains("read-only"), "{log}");
    assert!(log.contains("token_file"), "{log}");
    // Root on TCP is no one in particular either.
    let r = d.tcp("POST", "/v1/jobs/main/run", &[JSON], "");
    assert_eq!(
        (r.status, code(&r)),
        (403, "read_only".into()),
        "{}",
        r.body
    );
    // Nothing was created, paused or run.
    assert!(!s.env.path("jobs.d/x.toml").exists());
    assert!(!s.env.path("jobs.d").exists());
    pause(300);
    assert!(!marker.exists(), "a refused request ran a command");
    let jobs = d.get("/v1/jobs").json();
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 1, "{jobs}");
    assert_eq!(jobs["jobs"][0]["paused"], serde_json::Value::Null, "{jobs}");
    // The socket is the daemon's user's alone: nobody cannot even connect.
    let socket = d.socket.clone().unwrap();
    assert_eq!(socket, s.env.state().join("daemon.sock"));
    assert_eq!(mode(&socket), 0o600);
    let sock = socket.clone();
    let refused = User::nobody()
        .run(move || http::request_unix(&sock, "POST", "/v1/tick", &[JSON], "").map(|a| a.status));
    assert_eq!(
        refused.map_err(|e| e.kind()),
        Err(ErrorKind::PermissionDenied)
    );
    // The daemon's own user changes things over it.
    let r = d.post("/v1/jobs/main/run", "");
    assert_eq!(r.status, 202, "{}", r.body);
    eventually("the run", || marker.exists());
    assert_eq!(d.terminate(), Some(0));
    assert!(!socket.exists(), "a stopped daemon left its socket");
}

/// `socket_group` with the socket where the group cannot reach it (the
/// default, in a state directory only its owner may pass through): the
/// daemon starts, and says so, naming the directory.
#[test]
fn a_socket_group_that_cannot_reach_the_socket_is_warned_of() {
    let s = Sched::new(&format!(
        "[daemon]\nsocket_group = \"{GROUP}\"\n[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n"
    ));
    let d = Daemon::start(&s, &[]);
    let log = d.log();
    assert!(log.contains("cannot reach unix:"), "{log}");
    assert!(log.contains("mode 0700"), "{log}");
    assert_eq!(d.terminate(), Some(0));
}

/// `socket_group`: the socket is the group's too, and the daemon checks
/// each caller's credentials itself, so a socket others can write (a
/// careless `chmod`) still lets no other user change anything.
#[test]
fn daemon_socket_admits_its_user_and_group_and_refuses_other_users() {
    assert!(
        root(),
        "this test sends requests as other users: run it as root"
    );
    let s = Sched::new("");
    let dir = s.env.path("run");
    std::fs::create_dir(&dir).unwrap();
    // Other users may pass through, never write.
    chmod(s.env.tmp.path(), 0o711);
    chmod(&dir, 0o711);
    let socket = dir.join("api.sock");
    s.write(&format!(
        "[daemon]\nsocket = {:?}\nsocket_group = \"{GROUP}\"\n\
         [jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        socket.display().to_string()
    ));
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.socket.as_deref(), Some(socket.as_path()));
    let meta = std::fs::metadata(&socket).unwrap();
    assert_eq!((meta.uid(), meta.gid(), mode(&socket)), (0, GROUP, 0o660));
    assert!(d.log().contains(&format!("group {GROUP}")), "{}", d.log());
    assert!(!d.log().contains("cannot reach"), "{}", d.log());
    let send = |u: User, method: &'static str, path: &'static str, body: &'static str| {
        let sock = socket.clone();
        u.run(move || http::request_unix(&sock, method, path, &[JSON], body))
    };
    let job = r#"{"schedule": "0 0 1 1 *", "run": "true", "env": {"TOKEN": "s3cret"}}"#;
    // A member of the group (a supplementary group) changes things.
    let member = User::nobody().with_groups(&[GROUP]);
    let r = send(member.clone(), "PUT", "/v1/jobs/grp", job).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let dropin = s.env.path("jobs.d/grp.toml");
    assert_eq!(
        mode(&dropin),
        0o600,
        "a drop-in with secrets is readable by others"
    );
    let r = send(member, "PUT", "/v1/jobs/grp", job).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(mode(&dropin), 0o600);
    // So does a user whose own group it is.
    let primary = User::nobody().with_gid(GROUP);
    let r = send(primary, "POST", "/v1/jobs/grp/pause", "").unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    // Another user cannot connect at all.
    let r = send(User::nobody(), "PUT", "/v1/jobs/evil", job);
    assert_eq!(
        r.map(|a| a.status).map_err(|e| e.kind()),
        Err(ErrorKind::PermissionDenied)
    );
    // Nor change anything once it can connect: the daemon checks who it is.
    chmod(&socket, 0o666);
    let r = send(User::nobody(), "PUT", "/v1/jobs/evil", job).unwrap();
    assert_eq!(
        (r.status, code(&r)),
        (403, "foreign_peer".into()),
        "{}",
        r.body
    );
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains(&format!("uid {}", User::nobody().uid)),
        "{message}"
    );
    assert!(message.contains("socket_group"), "{message}");
    let r = send(User::nobody(), "POST", "/v1/jobs/main/run", "").unwrap();
    assert_eq!(
        (r.status, code(&r)),
        (403, "foreign_peer".into()),
        "{}",
        r.body
    );
    assert!(!s.env.path("jobs.d/evil.toml").exists());
    // It may read, as it may over TCP.
    let r = send(User::nobody(), "GET", "/v1/jobs", "").unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    // The daemon's own user (root here).
    let r = d.request("DELETE", "/v1/jobs/grp", &[JSON], "");
    assert_eq!(r.status, 200, "{}", r.body);
}

/// A stale socket (a daemon killed with SIGKILL) is replaced; a live one,
/// or anything that is not a socket, is never.
#[test]
fn daemon_replaces_a_stale_socket_but_never_a_live_one_or_a_link() {
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let socket = d.socket.clone().unwrap();
    // A second daemon on the same socket would take it from the first.
    let second = Daemon::start_with(&s, &["daemon", "--listen", "127.0.0.1:0"]);
    let (status, log) = second.err().expect("a second daemon took a live socket");
    assert_eq!(status, Some(125), "{log}");
    assert!(log.contains("another daemon"), "{log}");
    assert!(log.contains(&socket.display().to_string()), "{log}");
    assert_eq!(d.post("/v1/tick", "").status, 200);
    signal(d.pid(), Signal::KILL);
    drop(d);
    assert!(socket.exists());
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/tick", "").status, 200);
    drop(d);
    // A link planted where the socket goes is refused, and left alone.
    let target = s.env.path("target");
    std::fs::write(&target, "root's file\n").unwrap();
    let _ = std::fs::remove_file(&socket);
    std::os::unix::fs::symlink(&target, &socket).unwrap();
    let linked = Daemon::start_with(&s, &["daemon", "--listen", "127.0.0.1:0"]);
    let (status, log) = linked.err().expect("a daemon started on a planted link");
    assert_eq!(status, Some(125), "{log}");
    assert!(log.contains("symbolic link"), "{log}");
    assert!(std::fs::symlink_metadata(&socket).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's file\n");
}

/// A reload is judged against the address the daemon listens on now, not
/// the `listen` it would take at its next start: bound to 0.0.0.0, the
/// token cannot be dropped.
#[test]
fn daemon_reload_keeps_the_token_while_it_listens_off_loopback() {
    let s = Sched::new("");
    let alerts = s.env.path("alerts.txt");
    let token = s.env.path("token");
    std::fs::write(&token, "s3cret-token-of-16\n").unwrap();
    chmod(&token, 0o600);
    let head = format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nalert_command = \"cat >> {}\"\n",
        alerts.display()
    );
    let jobs = "[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n";
    s.write(&format!(
        "{head}[daemon]\nlisten = \"0.0.0.0:0\"\ntoken_file = {:?}\n{jobs}",
        token.display().to_string()
    ));
    let d = Daemon::start_with(&s, &["daemon"]).unwrap();
    assert!(d.addr.ip().is_unspecified(), "{}", d.addr);
    let addr = format!("127.0.0.1:{}", d.addr.port()).parse().unwrap();
    let auth = ("Authorization", "Bearer s3cret-token-of-16");
    let put = |headers: &[(&str, &str)], name: &str| {
        let path = format!("/v1/jobs/{name}");
        http::request(
            addr,
            "PUT",
            &path,
            headers,
            r#"{"schedule": "0 0 1 1 *", "run": "true"}"#,
        )
        .unwrap()
    };
    // The token is how a TCP caller changes things.
    assert_eq!(put(&[JSON, auth], "before").status, 201);
    assert_eq!(put(&[JSON], "nope").status, 401);
    // The file now says loopback and no token: it would be valid at a
    // start, but this daemon is bound to 0.0.0.0 until it restarts.
    s.write(&format!("{head}[daemon]\nlisten = \"127.0.0.1:0\"\n{jobs}"));
    signal(d.pid(), Signal::HUP);
    eventually("the SIGHUP reload to be refused", || {
        d.log().contains("reload (SIGHUP) refused")
    });
    let r = http::request(addr, "POST", "/v1/reload", &[JSON, auth], "").unwrap();
    assert_eq!(
        (r.status, code(&r)),
        (422, "invalid_config".into()),
        "{}",
        r.body
    );
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains(&d.addr.to_string()), "{message}");
    assert!(message.contains("token_file"), "{message}");
    eventually("the reload-refused alert", || {
        std::fs::read_to_string(&alerts)
            .unwrap_or_default()
            .contains("reload-refused")
    });
    // Over the socket too: the refusal is the configuration's.
    let r = d.post("/v1/reload", "");
    assert_eq!(
        (r.status, code(&r)),
        (422, "invalid_config".into()),
        "{}",
        r.body
    );
    // The token is still in force: nothing without it.
    let r = put(&[JSON], "after");
    assert_eq!(
        (r.status, code(&r)),
        (401, "unauthorized".into()),
        "{}",
        r.body
    );
    let r = http::request(addr, "GET", "/v1/jobs", &[], "").unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(!s.env.path("jobs.d/after.toml").exists());
    assert!(!d.log().contains("s3cret-token-of-16"));
}

/// The `Host` of a request to a loopback daemon names loopback exactly: a
/// port that is not a number, or a second `Host`, is not loopback.
#[test]
fn daemon_refuses_a_host_that_only_starts_like_loopback() {
    let s = Sched::new("[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let port = d.addr.port();
    let get = |hosts: &[&str]| {
        let headers: Vec<(&str, &str)> = hosts.iter().map(|h| ("Host", *h)).collect();
        d.tcp("GET", "/v1/jobs", &headers, "")
    };
    for host in [
        "127.0.0.1:evil.com",
        "localhost:evil.com",
        "127.0.0.1:80:80",
        "[::1]evil",
    ] {
        let r = get(&[host]);
        assert_eq!(
            (r.status, code(&r)),
            (403, "foreign_host".into()),
            "{host}: {}",
            r.body
        );
    }
    let own = format!("127.0.0.1:{port}");
    let r = get(&[own.as_str(), "evil.example"]);
    assert_eq!(
        (r.status, code(&r)),
        (400, "bad_request".into()),
        "{}",
        r.body
    );
    assert!(r.body.contains("more than one `Host`"), "{}", r.body);
    for host in [own.clone(), format!("localhost:{port}"), "127.0.0.1".into()] {
        assert_eq!(get(&[host.as_str()]).status, 200, "{host}");
    }
}

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");
const HTML: (&str, &str) = ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8");

/// The session cookie `POST /login` set, as `Cookie` sends it back.
fn session_of(a: &Answer) -> String {
    let set = a
        .header("set-cookie")
        .unwrap_or_else(|| panic!("no Set-Cookie: {} {:?}", a.status, a.headers));
    set.split(';').next().unwrap().trim().to_owned()
}

/// A daemon with a token on loopback and its token.
fn token_daemon(s: &Sched, token: &str) -> Daemon {
    let file = s.env.path("token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    chmod(&file, 0o600);
    s.write(&format!(
        "[daemon]\ntoken_file = {:?}\n[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}\"\n",
        file.display().to_string(),
        s.env.path("ran").display()
    ));
    Daemon::start(s, &[])
}

/// With a token, a browser logs in with a form: a wrong token gets no
/// cookie, the right one an `HttpOnly`, `SameSite=Strict` session cookie
/// that is not the token, and the cookie opens the page and the API's reads
/// but never a change, whatever else the request sends.
#[test]
fn daemon_login_opens_the_page_to_a_browser_and_never_a_change() {
    let token = "login-token-of-24-chars!";
    let s = Sched::new("");
    let d = token_daemon(&s, token);
    // A browser without a session is sent to the form; an API client is
    // told what it lacks.
    let r = d.tcp("GET", "/", &[HTML], "");
    assert_eq!((r.status, r.header("location")), (303, Some("/login")));
    // A job's page too, and it tells an API client nothing of the job.
    let r = d.tcp("GET", "/jobs/main", &[HTML], "");
    assert_eq!((r.status, r.header("location")), (303, Some("/login")));
    let r = d.tcp("GET", "/jobs/main", &[], "");
    assert_eq!((r.status, code(&r)), (401, "unauthorized".into()));
    assert!(!r.body.contains("data-job"), "{}", r.body);
    let r = d.tcp("GET", "/", &[], "");
    assert_eq!((r.status, code(&r)), (401, "unauthorized".into()));
    assert!(r.body.contains("/login"), "{}", r.body);
    let r = d.tcp("GET", "/login", &[HTML], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("<form method=\"post\" action=\"/login\">"));
    assert!(r.body.contains("name=\"token\" type=\"password\""));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    // A wrong token: 401, the form again, and no cookie.
    for body in [
        "token=wrong",
        "token=login-token-of-24-chars",
        "",
        "other=x",
    ] {
        let r = d.tcp("POST", "/login", &[FORM], body);
        assert!(
            matches!(r.status, 400 | 401),
            "{body}: {} {}",
            r.status,
            r.body
        );
        assert_eq!(r.header("set-cookie"), None, "{body}");
        assert!(r.body.contains("<form"), "{body}: {}", r.body);
    }
    let r = d.tcp("POST", "/login", &[FORM], "token=wrong");
    assert_eq!(r.status, 401);
    // From another site, even the right token opens nothing.
    let right = format!("token={}", token.replace('!', "%21"));
    let r = d.tcp(
        "POST",
        "/login",
        &[FORM, ("Origin", "http://evil.example")],
        &right,
    );
    assert_eq!((r.status, code(&r)), (403, "foreign_origin".into()));
    assert_eq!(r.header("set-cookie"), None);
    // The right token: a session cookie, then the page.
    let origin = format!("http://{}", d.addr);
    let r = d.tcp("POST", "/login", &[FORM, ("Origin", &origin)], &right);
    assert_eq!(
        (r.status, r.header("location")),
        (303, Some("/")),
        "{}",
        r.body
    );
    let set = r.header("set-cookie").unwrap().to_owned();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.split("; ").any(|a| a == attr), "{attr} in {set}");
    }
    assert!(!set.contains("Secure"), "plain http gets no Secure: {set}");
    let cookie = session_of(&r);
    assert!(cookie.starts_with("baton_session="), "{cookie}");
    assert!(!cookie.contains(token) && !cookie.contains("login-token"));
    let with = ("Cookie", cookie.as_str());
    let r = d.tcp("GET", "/", &[HTML, with], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("data-job=\"main\""), "{}", r.body);
    assert!(r.body.contains("action=\"/logout\""), "{}", r.body);
    let r = d.tcp("GET", "/jobs/main", &[HTML, with], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("<section class=\"job\" data-job=\"main\""),
        "{}",
        r.body
    );
    assert!(r.body.contains("action=\"/logout\""), "{}", r.body);
    assert_eq!(d.tcp("GET", "/v1/jobs", &[with], "").status, 200);
    assert_eq!(d.tcp("GET", "/metrics", &[with], "").status, 200);
    assert_eq!(
        d.tcp("GET", "/login", &[with], "").header("location"),
        Some("/")
    );
    // The cookie alone changes nothing: not without the JSON content type,
    // not with it, not from the daemon's own origin.
    for headers in [
        vec![with],
        vec![with, JSON],
        vec![with, JSON, ("Origin", origin.as_str())],
        vec![with, FORM, ("Sec-Fetch-Site", "same-origin")],
    ] {
        for path in ["/v1/jobs/main/run", "/v1/jobs/main/pause", "/v1/tick"] {
            let r = d.tcp("POST", path, &headers, "");
            assert_eq!(
                (r.status, code(&r)),
                (401, "unauthorized".into()),
                "{path} {headers:?}: {}",
                r.body
            );
        }
        let r = d.tcp("DELETE", "/v1/jobs/main", &headers, "");
        assert_eq!(r.status, 401, "{headers:?}: {}", r.body);
    }
    pause(300);
    assert!(!s.env.path("ran").exists(), "a cookie ran a job");
    assert_eq!(d.get("/healthz").status, 200);
    let jobs = d.tcp("GET", "/v1/jobs", &[with], "").json();
    assert_eq!(jobs["jobs"][0]["paused"], serde_json::Value::Null, "{jobs}");
    // Behind an https proxy the cookie is Secure too.
    let r = d.tcp(
        "POST",
        "/login",
        &[FORM, ("X-Forwarded-Proto", "https")],
        &right,
    );
    assert!(r.header("set-cookie").unwrap().ends_with("; Secure"));
    // A logout ends the session: the cookie opens nothing after it.
    let r = d.tcp("POST", "/logout", &[FORM, with, ("Origin", &origin)], "");
    assert_eq!((r.status, r.header("location")), (303, Some("/login")));
    assert!(
        r.header("set-cookie")
            .unwrap()
            .starts_with("baton_session=; Max-Age=0"),
        "{:?}",
        r.headers
    );
    assert_eq!(d.tcp("GET", "/", &[HTML, with], "").status, 303);
    assert_eq!(d.tcp("GET", "/v1/jobs", &[with], "").status, 401);
    assert!(!d.log().contains(token), "the token is in the log");
}

/// A new token ends every session opened with the old one.
#[test]
fn daemon_sessions_end_when_the_token_changes() {
    let s = Sched::new("");
    let d = token_daemon(&s, "first-token-of-16-chars");
    let r = d.tcp("POST", "/login", &[FORM], "token=first-token-of-16-chars");
    assert_eq!(r.status, 303, "{}", r.body);
    let cookie = session_of(&r);
    let with = ("Cookie", cookie.as_str());
    assert_eq!(d.tcp("GET", "/v1/jobs", &[with], "").status, 200);
    std::fs::write(s.env.path("token"), "second-token-of-16-chars\n").unwrap();
    assert_eq!(d.post("/v1/reload", "").status, 200);
    assert_eq!(d.tcp("GET", "/v1/jobs", &[with], "").status, 401);
    let r = d.tcp("POST", "/login", &[FORM], "token=first-token-of-16-chars");
    assert_eq!(r.status, 401);
    let r = d.tcp("POST", "/login", &[FORM], "token=second-token-of-16-chars");
    assert_eq!(r.status, 303);
}

/// Without a token there is nothing to log in to: the login's addresses
/// send a browser to the page, which anyone may read.
#[test]
fn daemon_without_a_token_needs_no_login() {
    let s = Sched::new("[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    for (method, headers) in [("GET", vec![HTML]), ("POST", vec![FORM])] {
        let r = d.tcp(method, "/login", &headers, "token=x");
        assert_eq!(
            (r.status, r.header("location")),
            (303, Some("/")),
            "{method}: {}",
            r.body
        );
        assert_eq!(r.header("set-cookie"), None);
    }
    assert_eq!(d.tcp("GET", "/", &[HTML], "").status, 200);
}

/// A token file another user could know (one open to others, or theirs)
/// or that is no regular file (a named pipe, a device) is refused at the
/// start, exit 2, naming it, without blocking on it; a reload that finds
/// one is refused and keeps the token in force.
#[test]
fn daemon_refuses_a_token_file_another_user_could_know_or_that_is_no_file() {
    assert!(
        root(),
        "this test hands a token file to another user: run it as root"
    );
    let s = Sched::new("");
    let token = s.env.path("token");
    let configure = |path: &Path| {
        s.write(&format!(
            "[daemon]\ntoken_file = {:?}\n[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
            path.display().to_string()
        ));
    };
    let refused = |want: &str| {
        let (status, log) = Daemon::start_with(&s, &["daemon", "--listen", "127.0.0.1:0"])
            .map(|_| ())
            .err()
            .unwrap_or_else(|| panic!("started with a token file that is {want}"));
        assert_eq!(status, Some(2), "{log}");
        assert!(
            log.contains("token_file") && log.contains(want),
            "{want}: {log}"
        );
    };
    std::fs::write(&token, "a-token-long-enough-to-pass\n").unwrap();
    configure(&token);
    chmod(&token, 0o644);
    refused("chmod 600");
    chmod(&token, 0o600);
    std::os::unix::fs::chown(&token, Some(User::nobody().uid), None).unwrap();
    refused("owned by");
    std::os::unix::fs::chown(&token, Some(0), None).unwrap();
    let fifo = s.env.path("token.fifo");
    mkfifo(&fifo);
    configure(&fifo);
    refused("a named pipe");
    configure(Path::new("/dev/zero"));
    refused("a device");
    // No request's header could carry these: no token would ever match.
    for content in [
        "first-line-of-a-token\nsecond-line\n",
        "a-token-with\0a-nul-inside\n",
    ] {
        std::fs::write(&token, content).unwrap();
        configure(&token);
        refused("one line");
    }
    std::fs::write(&token, "a-token-long-enough-to-pass\n").unwrap();
    // In force, then swapped for a named pipe: the reload is refused, the
    // token in force still answers.
    configure(&token);
    let d = Daemon::start(&s, &[]);
    let auth = ("Authorization", "Bearer a-token-long-enough-to-pass");
    std::fs::remove_file(&token).unwrap();
    mkfifo(&token);
    let r = d.post("/v1/reload", "");
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("a named pipe"), "{}", r.body);
    assert_eq!(d.tcp("GET", "/v1/jobs", &[auth], "").status, 200);
    assert_eq!(
        d.post("/v1/tick", "").status,
        200,
        "the daemon still serves"
    );
}

/// A job's output is its user's (its logs are 0600): the job's page shows
/// the end of its last log to a caller the daemon trusts (its socket)
/// and withholds it, saying why, from a TCP caller without the token,
/// who may be any local user.
#[test]
fn a_jobs_output_is_shown_only_to_a_trusted_caller() {
    let s = Sched::new("");
    s.write(
        "[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"echo DB_PASSWORD=hunter2-in-the-log\"\n",
    );
    let d = Daemon::start(&s, &[]);
    let r = d.post("/v1/jobs/main/run", "");
    assert_eq!(r.status, 202, "{}", r.body);
    eventually("the run's end", || {
        d.get("/v1/jobs/main/runs").json()[0]["verdict"] == "ok"
    });
    let trusted = d.request("GET", "/jobs/main", &[], "");
    assert_eq!(trusted.status, 200, "{}", trusted.body);
    assert!(
        trusted.body.contains("DB_PASSWORD=hunter2-in-the-log"),
        "{}",
        trusted.body
    );
    let anyone = d.tcp("GET", "/jobs/main", &[], "");
    assert_eq!(anyone.status, 200, "{}", anyone.body);
    assert!(
        !anyone.body.contains("hunter2"),
        "a TCP caller without the token read the job's output: {}",
        anyone.body
    );
    assert!(
        anyone
            .body
            .contains("shown only to a caller the daemon trusts"),
        "{}",
        anyone.body
    );
    assert_eq!(d.terminate(), Some(0));
}
