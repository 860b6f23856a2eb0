//! The status API and pages mounted in a service's own router
//! (`Scheduler::router`, feature `http`): what `baton status --json` and
//! `baton history --json` print, the daemon's pages, and with feature
//! `prometheus` its metrics, for the service's jobs, beside the service's
//! own routes.

use std::sync::Arc;
use std::time::Duration;

use baton_embed::{Job, JobError, ManualClock, Scheduler, Store};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::next;

/// `GET path` on `addr`: the status code and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    request(addr, "GET", path, "").await
}

/// `METHOD path` with `body` on `addr`: the status code and the body.
async fn request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let ask = format!(
        "{method} {path} HTTP/1.1\r\nHost: service\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(ask.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, body.to_owned())
}

/// A scheduler of `job` on a SQLite store in `dir`, on a manual clock at
/// 12:00:30, between occurrences (none runs at the start).
fn scheduler_of(dir: &std::path::Path, job: Job) -> (Arc<ManualClock>, Scheduler) {
    let clock = Arc::new(ManualClock::new(
        "2026-03-28T12:00:30Z".parse().unwrap(),
        Duration::from_secs(1_000),
    ));
    let scheduler = Scheduler::builder()
        .store(Store::sqlite(dir))
        .clock(clock.clone())
        .job(job)
        .build()
        .unwrap();
    (clock, scheduler)
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_api_and_pages_mounted_in_a_services_router_show_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut ran) = tokio::sync::mpsc::unbounded_channel();
    let (clock, scheduler) = scheduler_of(
        dir.path(),
        Job::cron("report", "*/5 * * * *")
            .timezone("Europe/Berlin")
            .run(move |ctx| {
                let tx = tx.clone();
                async move { tx.send(ctx.run_id().to_owned()).map_err(JobError::from) }
            }),
    );
    let app = axum::Router::new()
        .route("/hello", axum::routing::get(|| async { "hello" }))
        .merge(scheduler.router_at("/baton").unwrap());
    for bad in ["baton", "/baton/", "/a b", "/../x"] {
        assert!(scheduler.router_at(bad).is_err(), "{bad:?} is refused");
    }
    let handle = scheduler.start();
    clock.advance(Duration::from_secs(270));
    let run_id = next(&mut ran).await;
    handle.idle().await;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    assert_eq!(get(addr, "/hello").await, (200, "hello".to_owned()));

    let (code, body) = get(addr, "/baton/v1/jobs").await;
    assert_eq!(code, 200, "{body}");
    let s = json(&body);
    let job = &s["jobs"][0];
    assert_eq!(job["job"], "report", "{s}");
    assert_eq!(job["timezone"], "Europe/Berlin", "{s}");
    assert!(job["declared_by"].is_string(), "{s}");
    assert_eq!(job["last_run"]["run_id"], run_id.as_str(), "{s}");
    assert_eq!(job["last_run"]["verdict"], "ok", "{s}");
    assert_eq!(
        s["now"], "2026-03-28T12:05:00Z",
        "the scheduler's clock: {s}"
    );

    let (code, body) = get(addr, "/baton/v1/jobs/report").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(json(&body)["jobs"].as_array().unwrap().len(), 1);
    let (code, body) = get(addr, "/baton/v1/jobs/report/runs?limit=5").await;
    assert_eq!(code, 200, "{body}");
    let runs = json(&body);
    assert_eq!(runs[0]["run_id"], run_id.as_str(), "{runs}");
    for path in ["/baton/v1/jobs/nope", "/baton/v1/jobs/nope/runs"] {
        let (code, body) = get(addr, path).await;
        assert_eq!(code, 404, "{path}: {body}");
        assert_eq!(json(&body)["error"], "not_found", "{body}");
    }

    let (code, _) = get(addr, "/baton").await;
    assert_eq!(code, 308, "the page's links are relative: shown at /baton/");
    assert_eq!(get(addr, "/baton/nothing").await.0, 404);
    let (code, page) = get(addr, "/baton/").await;
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("report") && page.contains("<html"), "{page}");
    let (code, page) = get(addr, "/baton/jobs/report").await;
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains(&run_id),
        "the job's page lists its run: {page}"
    );
    assert_eq!(get(addr, "/baton/jobs/nope").await.0, 404);

    // The read-only router takes no pause.
    let (code, _) = request(addr, "POST", "/baton/v1/jobs/report/pause", "").await;
    assert!(code == 404 || code == 405, "{code}");

    #[cfg(feature = "prometheus")]
    {
        let (code, text) = get(addr, "/baton/metrics").await;
        assert_eq!(code, 200, "{text}");
        assert!(text.contains("job=\"report\""), "{text}");
    }
    server.abort();
    handle.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_routes_pause_and_resume_a_job_as_baton_pause_does() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut ran) = tokio::sync::mpsc::unbounded_channel();
    let (clock, scheduler) = scheduler_of(
        dir.path(),
        Job::cron("report", "*/5 * * * *").run(move |ctx| {
            let tx = tx.clone();
            async move { tx.send(ctx.occurrence()).map_err(JobError::from) }
        }),
    );
    let app = scheduler.control_router_at("").unwrap();
    let handle = scheduler.start();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let pause = "/v1/jobs/report/pause";
    let (code, body) = request(
        addr,
        "POST",
        pause,
        "{\"for\": \"1h\", \"reason\": \"db move\"}",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(json(&body)["ok"], true, "{body}");
    let s = json(&get(addr, "/v1/jobs/report").await.1);
    assert_eq!(s["jobs"][0]["state"], "paused", "{s}");
    assert_eq!(s["jobs"][0]["paused"]["reason"], "db move", "{s}");
    // 12:05 comes while paused: it does not run.
    clock.advance(Duration::from_secs(270));
    let mut s = serde_json::Value::Null;
    for _ in 0..6_000 {
        s = json(&get(addr, "/v1/jobs/report").await.1);
        if s["jobs"][0]["missed"]["by_reason"]["paused"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(s["jobs"][0]["missed"]["by_reason"]["paused"], 1, "{s}");
    // The miss is recorded before its run lets the lock go: once idle, the
    // lock is free, and 12:10 cannot find 12:05 still holding it (missed
    // `hung`: its holder has not renewed for the 300 s the clock jumps).
    handle.idle().await;
    assert!(ran.try_recv().is_err(), "nothing runs while paused");

    for (body, want) in [
        ("{\"for\": \"soon\"}", 400),
        ("[1]", 400),
        ("{\"until\": \"2026-03-28T12:00:00Z\"}", 422),
        (
            "{\"for\": \"1h\", \"until\": \"2026-03-29T00:00:00Z\"}",
            400,
        ),
    ] {
        let (code, answer) = request(addr, "POST", pause, body).await;
        assert_eq!(code, want, "{body}: {answer}");
    }
    assert_eq!(
        request(addr, "POST", "/v1/jobs/nope/pause", "").await.0,
        404
    );

    let (code, _) = request(addr, "POST", "/v1/jobs/report/resume", "{\"x\": 1}").await;
    assert_eq!(code, 400, "a resume takes no settings");
    let (code, body) = request(addr, "POST", "/v1/jobs/report/resume", " { }\n").await;
    assert_eq!(code, 200, "{body}");
    clock.advance(Duration::from_secs(300));
    assert_eq!(
        next(&mut ran).await,
        "2026-03-28T12:10:00Z".parse::<jiff::Timestamp>().unwrap()
    );
    server.abort();
    handle.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_asked_for_through_the_control_routes_runs_once_from_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut ran) = tokio::sync::mpsc::unbounded_channel();
    let (clock, scheduler) = scheduler_of(
        dir.path(),
        Job::cron("report", "0 0 1 1 *").run(move |ctx| {
            let tx = tx.clone();
            async move { tx.send(ctx.occurrence()).map_err(JobError::from) }
        }),
    );
    let app = scheduler.control_router_at("").unwrap();
    let read_only = scheduler.router_at("").unwrap();
    let handle = scheduler.start();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let (code, body) = request(addr, "POST", "/v1/jobs/report/run", "").await;
    assert_eq!(code, 202, "{body}");
    let asked = json(&body);
    assert_eq!(asked["queued"], true, "{asked}");
    let at: jiff::Timestamp = asked["occurrence"].as_str().unwrap().parse().unwrap();
    assert_eq!(at, "2026-03-28T12:00:30Z".parse().unwrap(), "{asked}");
    // The same second again: decided already, not run twice.
    let (code, body) = request(addr, "POST", "/v1/jobs/report/run", "").await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(json(&body)["error"], "decided", "{body}");
    // The scheduler's next look at its queue runs it.
    clock.advance(Duration::from_secs(3));
    assert_eq!(next(&mut ran).await, at);
    handle.idle().await;
    let runs = json(&get(addr, "/v1/jobs/report/runs").await.1);
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["verdict"], "ok", "{runs}");
    clock.advance(Duration::from_secs(3));
    tokio::task::yield_now().await;
    handle.idle().await;
    assert!(ran.try_recv().is_err(), "it ran once");

    for (path, body, want) in [
        ("/v1/jobs/report/run", "{}", 400),
        ("/v1/jobs/nope/run", "", 404),
    ] {
        assert_eq!(
            request(addr, "POST", path, body).await.0,
            want,
            "{path} {body}"
        );
    }
    // The read-only router takes no run.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ro = listener.local_addr().unwrap();
    let ro_server = tokio::spawn(async move { axum::serve(listener, read_only).await });
    let code = request(ro, "POST", "/v1/jobs/report/run", "").await.0;
    assert!(code == 404 || code == 405, "{code}");
    ro_server.abort();
    server.abort();
    handle.shutdown(Duration::from_secs(1)).await;
}
