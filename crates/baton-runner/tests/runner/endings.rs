//! What a step came to, from real processes: its command's own status, the
//! signal it died of, or why it could not start, each with the exit code
//! that stands for it; what it was given (arguments, environment, working
//! directory); and its output, handed whole to a sink that is told once
//! that it ended.

use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_runner::{
    Ending, Finish, Output, SessionConfig, Sink, SpawnKind, StepSpec, exit_code_of, signal_name,
};

use crate::support::{Dir, Events, Store, sh, start};

listed!(TESTS:
    each_ending_has_its_exit_code,
    a_step_gets_its_arguments_environment_and_directory,
    a_steps_output_reaches_its_sink_whole_and_ends_once,
);

fn each_ending_has_its_exit_code() {
    let dir = Dir::new();
    let plain = dir.path("plain");
    std::fs::write(&plain, "echo hi\n").unwrap();
    let orphan = dir.path("orphan");
    std::fs::write(&orphan, "#!/nonexistent/interp\necho hi\n").unwrap();
    std::fs::set_permissions(&orphan, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (store, _) = Store::new(Duration::from_secs(30));
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let r = s.run(sh("exit 3", true));
    assert_eq!(
        (r.ending.clone(), r.code, r.signal),
        (Ending::Exited(3), Some(3), None)
    );
    assert_eq!(r.exit_code(), 3);
    assert!(!r.ending.success());
    assert!(s.run(sh("exit 0", true)).ending.success());
    let r = s.run(sh("kill -KILL $$", true));
    assert_eq!(
        (r.ending.clone(), r.code, r.signal),
        (Ending::Signaled(9), None, Some(9))
    );
    assert_eq!(r.exit_code(), 137);
    assert_eq!(exit_code_of(r.code, r.signal), 137);
    assert!(
        r.ending.describe().contains(&signal_name(9)),
        "{}",
        r.ending.describe()
    );
    let not_started = |spec: StepSpec, s: &mut baton_runner::Session<'_>| match s.run(spec) {
        r @ baton_runner::StepResult {
            ending: Ending::NotStarted(_),
            ..
        } => {
            let Ending::NotStarted(f) = &r.ending else {
                unreachable!()
            };
            (f.kind, r.exit_code(), f.message.clone())
        }
        r => panic!("the step {:?}", r.ending),
    };
    let quiet = |program: &std::path::Path| {
        let mut spec = StepSpec::new(program, Vec::new());
        spec.stdin = baton_runner::Stdin::Null;
        spec
    };
    let (kind, code, _) = not_started(quiet(&dir.path("missing")), &mut s);
    assert_eq!((kind, code), (SpawnKind::NotFound, 127));
    let (kind, code, _) = not_started(quiet(&plain), &mut s);
    assert_eq!((kind, code), (SpawnKind::NotExecutable, 126));
    let (kind, code, message) = not_started(quiet(&orphan), &mut s);
    assert_eq!((kind, code), (SpawnKind::NotExecutable, 126));
    assert!(message.contains("/nonexistent/interp"), "{message}");
    let (kind, code, _) = not_started(sh("echo \0", true), &mut s);
    assert_eq!((kind, code), (SpawnKind::Other, 125));
    assert_eq!(s.finish(), Finish::Released);
}

fn a_step_gets_its_arguments_environment_and_directory() {
    let dir = Dir::new();
    let out = dir.path("out");
    let (store, _) = Store::new(Duration::from_secs(30));
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let mut spec = sh(
        &format!(
            "printf '%s|%s|%s' \"$0\" \"$WHO\" \"$(pwd)\" > {}",
            out.display()
        ),
        true,
    );
    spec.args.push("zero".into());
    spec.env.push(("WHO".into(), "baton".into()));
    spec.cwd = Some(dir.path(""));
    assert_eq!(s.run(spec).ending, Ending::Exited(0));
    assert_eq!(s.finish(), Finish::Released);
    let cwd = std::fs::canonicalize(dir.path("")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        format!("zero|baton|{}", cwd.display())
    );
}

/// Keeps what a step wrote, and how many times it was told the output
/// ended.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<(Vec<u8>, u32)>>);

impl Sink for Kept {
    fn chunk(&mut self, bytes: &[u8]) {
        self.0.lock().unwrap().0.extend_from_slice(bytes);
    }
    fn end(&mut self) {
        self.0.lock().unwrap().1 += 1;
    }
}

fn a_steps_output_reaches_its_sink_whole_and_ends_once() {
    let (store, _) = Store::new(Duration::from_secs(30));
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let kept = Kept::default();
    // Far more than a pipe holds, on both streams.
    let mut spec = sh("yes abcdefg | head -n 300000; echo err >&2", true);
    spec.output = Output::Capture(Box::new(kept.clone()));
    assert_eq!(s.run(spec).ending, Ending::Exited(0));
    let (bytes, ends) = kept.0.lock().unwrap().clone();
    assert_eq!(ends, 1);
    let mut expected = "abcdefg\n".repeat(300_000);
    expected.push_str("err\n");
    assert!(bytes == expected.as_bytes(), "{} bytes kept", bytes.len());
    assert_eq!(s.finish(), Finish::Released);
}
