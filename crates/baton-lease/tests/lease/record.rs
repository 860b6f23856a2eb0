//! The record format under generated input: the parser never panics, and
//! what the writer writes the parser reads back identically.

use std::time::Duration;

use baton_lease::record::{Body, Free, Held, Leader, is_valid_value};
use baton_lease::{Fence, Token};
use proptest::prelude::*;

fn value() -> impl Strategy<Value = String> {
    "[!-~]{1,64}"
}

fn stamp() -> impl Strategy<Value = jiff::Timestamp> {
    // Records keep microseconds.
    (0i64..4_102_444_800_000_000).prop_map(|us| jiff::Timestamp::from_microsecond(us).unwrap())
}

fn held() -> impl Strategy<Value = Held> {
    (
        (
            1u64..=Fence::MAX.get(),
            any::<[u8; 8]>(),
            1u32..,
            value(),
            stamp(),
            stamp(),
            1u64..u32::MAX as u64,
        ),
        (
            proptest::option::of(value()),
            proptest::option::of(value()),
            proptest::option::of(value()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(0u64..u64::MAX / 1_000_000),
            proptest::option::of(1u32..),
            proptest::option::of(value()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(0u64..u32::MAX as u64),
            proptest::option::of(value()),
            proptest::option::of(1u64..u32::MAX as u64),
        ),
        (any::<bool>(), proptest::option::of(any::<u32>())),
    )
        .prop_map(
            |(
                (fence, token, pid, host, acquired, renewed, ttl),
                (run, machine, boot, pidns, pstart, bt, pgid, occ, jstart, grace, exe, budget),
                (init, uid),
            )| Held {
                fence: Fence::new(fence),
                token: Token::from_bytes(token),
                pid,
                host,
                acquired,
                renewed,
                ttl: Duration::from_millis(ttl),
                run,
                machine,
                boot,
                pidns,
                pstart,
                renewed_boot: bt.map(Duration::from_millis),
                pgid,
                occ,
                jstart,
                leader: if init {
                    Leader::NamespaceInit
                } else {
                    Leader::Command
                },
                uid,
                grace: grace.map(Duration::from_millis),
                exe,
                budget: budget.map(Duration::from_millis),
                claims: claims_of(jstart),
            },
        )
}

/// Some claims, derived from a number so each case has its own.
fn claims_of(n: Option<u64>) -> baton_lease::Claims {
    let mut c = baton_lease::Claims::default();
    if let Some(n) = n {
        for i in 0..(n % 4) {
            c = c.with(&baton_lease::Once {
                key: format!("job-{i}"),
                at: i64::try_from(n % 1_000_000_000).unwrap() + i as i64,
            });
        }
    }
    c
}

proptest! {
    #[test]
    fn any_bytes_parse_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = Body::parse(&bytes);
    }

    #[test]
    fn any_text_of_fields_parses_without_panicking(words in proptest::collection::vec("[a-z_]{0,8}=?[ -~]{0,12}", 0..30)) {
        let _ = Body::parse(words.join(" ").as_bytes());
    }

    #[test]
    fn a_held_record_reads_back_identically(h in held()) {
        let line = h.render();
        prop_assert!(line.starts_with("version=3 "));
        prop_assert_eq!(line.matches('\n').count(), 1);
        prop_assert_eq!(Body::parse(line.as_bytes()), Body::Held(h));
    }

    #[test]
    fn a_free_marker_reads_back_identically(fence in proptest::option::of(1u64..=Fence::MAX.get()), released in proptest::option::of(stamp()), occ in proptest::option::of(value())) {
        let f = Free { version: 3, fence: fence.map(Fence::new), released, occ, claims: claims_of(fence) };
        prop_assert_eq!(Body::parse(f.render().as_bytes()), Body::Free(f));
    }

    #[test]
    fn a_padded_record_reads_the_same(h in held(), pad in 0usize..300) {
        let mut line = h.render();
        line.pop();
        line.push_str(&" ".repeat(pad));
        line.push('\n');
        prop_assert_eq!(Body::parse(line.as_bytes()), Body::Held(h));
    }
}

#[test]
fn valid_values_are_printable_ascii_without_spaces() {
    assert!(is_valid_value("a=b:c+d"));
    assert!(!is_valid_value(""));
    assert!(!is_valid_value("a b"));
    assert!(!is_valid_value("é"));
}
