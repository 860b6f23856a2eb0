//! `baton exec -c 'CMD'` runs CMD as `flock -c` does: through `$SHELL`,
//! else `/bin/sh`.

use crate::support::{Env, code, stderr, stdout};

/// Runs `baton exec -c 'echo $0'` with SHELL set to `shell` (or removed):
/// what the command printed as its shell's name.
fn shell_of(env: &Env, shell: Option<&str>) -> String {
    let mut c = env.cmd(&["exec", "--name", "sh", "-c", "echo \"$0\""]);
    match shell {
        Some(s) => c.env("SHELL", s),
        None => c.env_remove("SHELL"),
    };
    let o = c.stdin(std::process::Stdio::null()).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o).trim().to_owned()
}

#[test]
fn dash_c_runs_the_shell_named_by_shell_else_bin_sh() {
    let env = Env::new();
    // A shell of its own, that says it ran and then runs the command.
    let mine = crate::support::script(
        &env,
        "myshell",
        "#!/bin/sh\n[ \"$1\" = -c ] || exit 99\nexec /bin/sh -c \"$2\" myshell\n",
    );
    assert_eq!(shell_of(&env, Some(mine.to_str().unwrap())), "myshell");
    assert_eq!(shell_of(&env, None), "/bin/sh");
    assert_eq!(shell_of(&env, Some("")), "/bin/sh");
}

#[test]
fn exec_help_says_which_shell_dash_c_runs() {
    let o = Env::new().run(&["exec", "--help"]);
    assert!(stdout(&o).contains("$SHELL -c"), "{}", stdout(&o));
}
