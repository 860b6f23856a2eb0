//! The README's example, as a service writes it with the README's
//! `Cargo.toml` (`baton = { package = "baton-embed", … }`): CI compiles it,
//! and `tests/embed/readme.rs` keeps it equal to the README's text.
use baton_embed as baton;

use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scheduler = baton::Scheduler::builder()
        .store(baton::Store::sqlite("/var/lib/my-service/baton"))
        .job(
            baton::Job::cron("report", "*/5 * * * *")
                .timezone("Europe/Berlin")
                .retries(2)
                .run(|ctx: baton::RunContext| async move {
                    // ctx.fence(), ctx.occurrence(), ctx.attempt(), ctx.cancelled().await
                    let _ = ctx.fence();
                    Ok(())
                }),
        )
        .build()?;
    let handle = scheduler.start(); // on this runtime
    tokio::signal::ctrl_c().await?;
    handle.shutdown(Duration::from_secs(30)).await;
    Ok(())
}
