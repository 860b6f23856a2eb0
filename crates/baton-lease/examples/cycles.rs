//! Runs many uncontended acquire + release cycles, for profiling.
fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = std::env::temp_dir().join(format!("baton-cycles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let lock = baton_lease::Lock::new(dir.join("x.lock"));
    for _ in 0..n {
        if let baton_lease::Outcome::Acquired(l) = lock.try_acquire().expect("acquire") {
            let _ = l.release();
        }
    }
    if std::env::var_os("KEEP").is_some() {
        println!("{}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
