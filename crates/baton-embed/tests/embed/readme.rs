//! The README's example is the one `examples/readme.rs` holds, which CI
//! compiles: a README whose code no longer builds fails here.

#[test]
fn the_readmes_example_is_the_example_ci_compiles() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{dir}/examples/readme.rs")).unwrap();
    let block = readme
        .split("```rust,no_run\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a rust,no_run block in README.md");
    let (_, code) = example
        .split_once("use baton_embed as baton;\n\n")
        .expect("examples/readme.rs names the crate as the README's Cargo.toml does");
    assert_eq!(
        block, code,
        "README.md's example differs from examples/readme.rs"
    );
}
