//! What each manual page says beyond `--help`: its EXIT STATUS (the
//! numbers from [`crate::exit::Exit`], the scheduler's outcomes among them,
//! never typed here), the ENVIRONMENT it reads
//! (the `BATON_*` lists come from the configuration's own list of keys),
//! the FILES it reads and writes, and other pages to see.

use baton_sched::outcome::Outcome;

use crate::exit::{BUSY_DEFAULT, Exit};

/// A page's own sections.
#[derive(Debug, Default)]
pub(crate) struct Sections {
    pub exit: Vec<(String, String)>,
    pub environment: Vec<(String, String)>,
    pub files: Vec<(String, String)>,
    pub see_also: Vec<&'static str>,
}

fn n(e: Exit) -> String {
    e.code().to_string()
}

fn item(term: impl Into<String>, meaning: impl Into<String>) -> (String, String) {
    (term.into(), meaning.into())
}

/// The sections of the page for the command `path` (`[]` for baton(1)).
pub(crate) fn of(path: &[String]) -> Sections {
    let words: Vec<&str> = path.iter().map(String::as_str).collect();
    match words.as_slice() {
        [] => root(),
        ["exec"] => exec(),
        ["lock", ..] => lock(),
        ["calendar"] => calendar(),
        ["daemon"] => daemon(),
        ["store", ..] => store(),
        ["render"] => render(),
        ["completions"] => completions(),
        ["man"] => man(),
        [cmd, ..] => scheduler(cmd),
    }
}

/// Where the state directory is, as every page says it.
const STATE_DIR: &str = "STATE_DIR";

fn state_dir_item() -> (String, String) {
    item(
        STATE_DIR,
        "The state directory: --state-dir, else $BATON_STATE_DIR, else /var/lib/baton for \
         root, else $XDG_STATE_HOME/baton, else ~/.local/state/baton; with baton.toml, its \
         [scheduler] state_dir. An absolute path that no other user owns or can write, nor any \
         directory above it, reached through no symbolic link another user owns.",
    )
}

fn state_env() -> Vec<(String, String)> {
    vec![
        item(
            "BATON_STATE_DIR",
            "The state directory when --state-dir is not given (and, for the scheduler, it \
             overrides [scheduler] state_dir).",
        ),
        item(
            "XDG_STATE_HOME",
            "For a user other than root, the state directory's default is $XDG_STATE_HOME/baton.",
        ),
        item(
            "HOME",
            "For a user other than root without XDG_STATE_HOME, the state directory's default \
             is ~/.local/state/baton.",
        ),
    ]
}

fn usage() -> (String, String) {
    item(
        n(Exit::Usage),
        "Bad arguments: an unknown option, a missing or invalid value.",
    )
}

fn root() -> Sections {
    let mut environment = vec![
        item(
            "BATON_CONFIG",
            "The configuration file of the scheduler's commands when --config is not given \
             (default ./baton.toml).",
        ),
        item(
            "BATON_ENABLED",
            "false is the kill switch: the scheduler runs no job, checked before anything is \
             touched.",
        ),
    ];
    environment.extend(state_env());
    environment.push(item(
        "_BATON_COMPLETE",
        "Set by the script `baton completions` prints, to ask baton for completions; never \
         set it yourself.",
    ));
    Sections {
        exit: vec![
            item(
                n(Exit::Ok),
                "Success (for each command, what success means is on its page).",
            ),
            item(
                format!("{}, {}", n(Exit::Refused), n(Exit::Usage)),
                "The scheduler's commands: 1 a failure or an alert, 2 a configuration or \
                 arguments that cannot be honoured (nothing ran); lock commands: 1 a break \
                 refused, 2 bad arguments.",
            ),
            item(
                n(Exit::Busy(BUSY_DEFAULT)),
                "baton exec: the lock was not free; the command did not run.",
            ),
            item(
                n(Exit::Failure),
                "baton's own failure: an unusable or untrusted state directory, an I/O error.",
            ),
        ],
        environment,
        files: files_sched(),
        see_also: vec!["flock(1)", "crontab(5)", "systemd.timer(5)"],
    }
}

fn exec() -> Sections {
    let mut environment = vec![
        item(
            "SHELL",
            "The shell -c CMD runs, as flock -c does; /bin/sh when unset or empty.",
        ),
        item("PATH", "Where COMMAND is found when it names no directory."),
    ];
    environment.extend(state_env());
    environment.push(item(
        "BATON_LOCK, BATON_TOKEN, BATON_FENCE, BATON_RUN_ID",
        "Set for the command: its lock file, its lease's token, its fence (larger than every \
         earlier run's on this lock) and its run id.",
    ));
    environment.push(item(
        "BATON_OTLP_ENDPOINT",
        "An OTLP/HTTP collector's base URL: the run and its command are sent there as \
         OpenTelemetry spans, and the command gets TRACEPARENT naming its span.",
    ));
    environment.push(item(
        "TRACEPARENT",
        "With BATON_OTLP_ENDPOINT: a W3C trace context the run's span joins as a child.",
    ));
    Sections {
        exit: vec![
            item("N", "The command's own exit status."),
            item("128+N", "The command died of signal N."),
            item(
                n(Exit::Busy(BUSY_DEFAULT)),
                "The lock was not free (busy, hung, orphaned, or a version conflict); the \
                 command did not run (--busy-exit changes it).",
            ),
            item(
                n(Exit::LeaseLost),
                "The lease was lost while the command ran; its tree was stopped before anyone \
                 else could take the lease. Also when the command had ended on its own and its \
                 release found the lease lost: the lease-lost alert says how it ended.",
            ),
            item(
                n(Exit::Timeout),
                "The command ran past --timeout and its tree was stopped.",
            ),
            item(
                n(Exit::Failure),
                "baton failed: a bad option, an unusable or untrusted state directory, a lock \
                 path that is no lock file, an I/O error.",
            ),
            item(
                n(Exit::NotExecutable),
                "The command cannot be executed (or its #! interpreter is missing).",
            ),
            item(n(Exit::NotFound), "The command was not found."),
        ],
        environment,
        files: vec![
            state_dir_item(),
            item(
                "STATE_DIR/locks/NAME.lock",
                "The lock of --name NAME: its lease record (holder, fence, renewal).",
            ),
        ],
        see_also: vec!["flock(1)", "timeout(1)"],
    }
}

fn lock() -> Sections {
    Sections {
        exit: vec![
            item(
                n(Exit::Ok),
                "Done: every lock shown; broken, or nothing to break (a free lock).",
            ),
            item(
                n(Exit::Refused),
                "Break refused: the lease is not provably dead, or --kill could not verify what \
                 it would signal.",
            ),
            usage(),
            item(n(Exit::NoSuchLock), "No lock file at that name or path."),
            item(
                n(Exit::Unjudgeable),
                "The record cannot be judged: a damaged record or another version's lease \
                 (break needs --force).",
            ),
            item(
                n(Exit::Failure),
                "Not a lock file, an untrusted state directory, or an I/O error.",
            ),
        ],
        environment: state_env(),
        files: vec![
            state_dir_item(),
            item("STATE_DIR/locks/NAME.lock", "The lock NAME's lease record."),
            item(
                "STATE_DIR/breaks.log",
                "One line for each lease an operator broke.",
            ),
        ],
        see_also: vec![],
    }
}

/// The files of the scheduler's commands.
fn files_sched() -> Vec<(String, String)> {
    vec![
        item(
            "baton.toml",
            "The configuration: --config FILE, else $BATON_CONFIG, else ./baton.toml.",
        ),
        item(
            "jobs.d/JOB.toml",
            "Beside baton.toml: one job each, read with it (the daemon's PUT writes them).",
        ),
        state_dir_item(),
        item(
            "STATE_DIR/baton.db",
            "The ledger (SQLite, with its -wal and -shm): runs, attempts, decisions, misses, \
             pauses, alerts. With [store] url, the PostgreSQL store holds it instead.",
        ),
        item(
            "STATE_DIR/locks/",
            "LOCK.lock, each lock's lease record; JOB.job, the lock each job last ran under.",
        ),
        item(
            "STATE_DIR/logs/",
            "JOB_YYYY_MM_DD.log (each attempt's output), baton_YYYY_MM_DD.log (the envelope), \
             alerts.log (one JSON alert a line), dated in the scheduler's zone.",
        ),
        item(
            "STATE_DIR/ends/",
            "Each run's end slot, for an end the ledger did not take in time.",
        ),
    ]
}

/// The environment of the scheduler's commands.
fn env_sched() -> Vec<(String, String)> {
    use baton_sched::config::keys::{self, Table};
    let keys: Vec<String> = keys::env_keys().map(keys::env_name).collect();
    let store = || keys::of(Table::Store).filter(|k| k.env);
    let store_vars: Vec<String> = store()
        .filter_map(|k| k.env_key())
        .map(|k| keys::env_name(&k))
        .collect();
    let store_keys: Vec<&str> = store().map(|k| k.name).collect();
    let mut v = vec![
        item(
            "BATON_CONFIG",
            "The configuration file when --config is not given (default ./baton.toml).",
        ),
        item(
            "BATON_<KEY>",
            format!(
                "Overrides the [scheduler] key KEY: {}. BATON_ENABLED=false is the kill switch.",
                keys.join(", ")
            ),
        ),
        item(
            store_vars.join(", "),
            format!("Override [store] {}.", in_words(&store_keys)),
        ),
        item(
            "PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGPASSFILE",
            "With [store]: what the URL leaves out, and the password when neither the URL nor \
             password_file gives one.",
        ),
        item(
            "BATON_OTLP_ENDPOINT",
            "Overrides [telemetry] otlp_endpoint: where runs' traces are sent.",
        ),
        item(
            "TRACEPARENT",
            "With an endpoint: a W3C trace context the first run's span joins as a child.",
        ),
        item(
            "TZ",
            "The system's zone, [scheduler] timezone's default (else /etc/localtime).",
        ),
    ];
    v.extend(state_env());
    v
}

fn scheduler(cmd: &str) -> Sections {
    let exit = vec![
        item(
            n(Exit::of_outcome(Outcome::Done)),
            "Every step and check succeeded, nothing was due, or the kill switch is off \
             (status: every job shown is healthy).",
        ),
        item(
            n(Exit::of_outcome(Outcome::Failed)),
            "A step or check failed, occurrences were missed, the lock was not free, or its \
             holder was hung, orphaned or of another version (an alert was raised); status: a \
             job is hung, overdue, failing, crashed or unknown (its ledger or state \
             directory could not be read); watermark settle: refused.",
        ),
        item(
            n(Exit::of_outcome(Outcome::Unable)),
            "The configuration or the arguments could not be honoured, the ledger would not \
             record a run's start or could not be read by a tick (nothing ran), or the job is \
             unknown.",
        ),
    ];
    let mut environment = env_sched();
    match cmd {
        "pause" | "resume" => environment.push(item(
            "USER, LOGNAME",
            "Who paused or resumed, for the ledger (else the uid).",
        )),
        "watermark" => environment.push(item(
            "BATON_TOKEN",
            "settle: the lease token of the run that holds the job's lease (baton sets it for \
             every step).",
        )),
        _ => {}
    }
    Sections {
        exit,
        environment,
        files: files_sched(),
        see_also: match cmd {
            "tick" => vec!["crontab(5)"],
            _ => vec![],
        },
    }
}

fn calendar() -> Sections {
    Sections {
        exit: vec![
            item(
                n(Exit::Ok),
                "The occurrences were shown (also when the schedule never fires again).",
            ),
            item(
                n(Exit::Usage),
                "A bad expression, zone, --from or --count, an unknown job, or a configuration \
                 that cannot be honoured.",
            ),
        ],
        environment: vec![
            item(
                "TZ",
                "The zone of an expression without --tz (else /etc/localtime).",
            ),
            item(
                "BATON_CONFIG",
                "With --job: the configuration file when --config is not given.",
            ),
        ],
        files: vec![item(
            "baton.toml",
            "With --job: the job's schedule and zone.",
        )],
        see_also: vec![],
    }
}

fn daemon() -> Sections {
    let mut environment = env_sched();
    environment.extend([
        item(
            "NOTIFY_SOCKET",
            "Where READY=1, STOPPING=1 and WATCHDOG=1 go (systemd sets it).",
        ),
        item(
            "WATCHDOG_USEC, WATCHDOG_PID",
            "The watchdog's interval (WATCHDOG=1 every half) and the process it is for.",
        ),
    ]);
    let mut files = files_sched();
    files.push(item(
        "STATE_DIR/daemon.sock",
        "The API's Unix socket ([daemon] socket), mode 0600.",
    ));
    Sections {
        exit: vec![
            item(n(Exit::Ok), "After a clean shutdown."),
            item(n(Exit::Refused), "[store]'s schema cannot be migrated."),
            item(
                n(Exit::Usage),
                "A configuration that cannot be served (invalid, or a non-loopback address \
                 without token_file).",
            ),
            item(
                n(Exit::Failure),
                "The address or the socket cannot be bound.",
            ),
        ],
        environment,
        files,
        see_also: vec!["systemd.service(5)"],
    }
}

fn store() -> Sections {
    Sections {
        exit: vec![
            item(
                n(Exit::Ok),
                "Done (status: the schema is this build's version).",
            ),
            item(
                n(Exit::Refused),
                "The store could not be reached or refused (status: the schema is not this \
                 build's version).",
            ),
            item(
                n(Exit::Usage),
                "No [store] url, or an invalid configuration.",
            ),
            item(n(Exit::Failure), "baton's own failure (its async runtime)."),
        ],
        environment: env_sched(),
        files: vec![item(
            "baton.toml",
            "[store] url, password_file and the TLS keys (sslmode, sslrootcert, sslcert, \
             sslkey): --config FILE, else $BATON_CONFIG, else ./baton.toml.",
        )],
        see_also: vec![],
    }
}

fn render() -> Sections {
    Sections {
        exit: vec![
            item(n(Exit::Ok), "Rendered."),
            item(
                n(Exit::Usage),
                "Bad arguments or configuration, or a job the target cannot express.",
            ),
            item(
                n(Exit::Failure),
                "An artefact could not be written under --out, or standard output could not be \
                 written.",
            ),
        ],
        environment: vec![
            item(
                "BATON_CONFIG",
                "The configuration file when --config is not given.",
            ),
            item(
                "TZ",
                "Not used for CRON_TZ=: the host's zone is /etc/localtime's (--host-tz).",
            ),
        ],
        files: vec![
            item("baton.toml", "The configuration rendered."),
            item(
                "/etc/localtime",
                "The host's zone, for CRON_TZ= (--host-tz overrides).",
            ),
        ],
        see_also: vec!["crontab(5)", "systemd.timer(5)", "systemd.service(5)"],
    }
}

fn completions() -> Sections {
    Sections {
        exit: vec![item(n(Exit::Ok), "The script was printed."), usage()],
        environment: vec![
            item(
                "_BATON_COMPLETE",
                "Set by the script on each TAB: baton answers with completions instead of \
                 running.",
            ),
            item(
                "BATON_CONFIG",
                "Job names complete from --config FILE on the line, else $BATON_CONFIG, else \
                 ./baton.toml.",
            ),
        ],
        files: vec![
            item(
                "/usr/share/bash-completion/completions/baton",
                "Where bash-completion loads the bash script from (or \
                 /etc/bash_completion.d/baton).",
            ),
            item(
                "baton.toml",
                "The configuration whose job names complete JOB arguments.",
            ),
        ],
        see_also: vec![],
    }
}

fn man() -> Sections {
    Sections {
        exit: vec![
            item(n(Exit::Ok), "The page was printed, or every page written."),
            item(
                n(Exit::Usage),
                "Bad arguments, or no page for that command.",
            ),
            item(n(Exit::Failure), "A page could not be written under --dir."),
        ],
        environment: vec![],
        files: vec![item(
            "DIR/baton.1, DIR/baton-*.1",
            "With --dir DIR: every page (for example DIR = /usr/local/share/man/man1).",
        )],
        see_also: vec!["man(1)"],
    }
}

/// `a`, `a and b`, `a, b and c`.
fn in_words(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
