//! Alerts: newest first, of one job or of all.

use baton_store::ledger::{AlertRow, NewAlert};
use baton_store::words::AlertKind;

use crate::support::{Log, Store, at, occ};

both! {
    alerts_come_back_newest_first_per_job_or_all
}

fn alert(job: Option<&str>, kind: AlertKind, secs: i64) -> NewAlert {
    NewAlert {
        time: at(secs),
        job: job.map(str::to_owned),
        kind,
        run_id: job.map(|_| "00000000000000a1".to_owned()),
        occurrence: job.map(|_| occ(secs)),
        message: format!("{kind} at {secs}"),
        json: format!("{{\"kind\":\"{kind}\"}}"),
    }
}

fn alerts_come_back_newest_first_per_job_or_all(l: &mut Store, log: &mut Log) {
    l.record_alert(&alert(Some("a"), AlertKind::StepFailed, 0))
        .unwrap();
    l.record_alert(&alert(None, AlertKind::LedgerCorrupt, 10))
        .unwrap();
    l.record_alert(&alert(Some("b"), AlertKind::Missed, 20))
        .unwrap();
    l.record_alert(&alert(Some("a"), AlertKind::Missed, 30))
        .unwrap();
    let all = l.recent_alerts(None, 10).unwrap();
    let kinds: Vec<&str> = all.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(kinds, ["missed", "missed", "ledger-corrupt", "step-failed"]);
    assert!(all.windows(2).all(|w| w[0].id > w[1].id));
    assert_eq!(all[2].job, None);
    log.note("all", &all);
    let of_a = l.recent_alerts(Some("a"), 10).unwrap();
    assert_eq!(of_a.len(), 2);
    assert_eq!(
        of_a[0],
        AlertRow {
            id: all[0].id,
            time: at(30),
            job: Some("a".into()),
            kind: AlertKind::Missed,
            run_id: Some("00000000000000a1".into()),
            occurrence: Some(occ(30)),
            message: "missed at 30".into(),
            json: "{\"kind\":\"missed\"}".into(),
        },
        "every field comes back as written"
    );
    log.note("a", &of_a);
    assert_eq!(l.recent_alerts(None, 1).unwrap().len(), 1);
    assert!(l.recent_alerts(Some("none"), 10).unwrap().is_empty());
}
