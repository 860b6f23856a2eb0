//! The record parser never panics, and any record it accepts as a lease or a
//! free marker is written back to a line that parses to the same record.
#![no_main]

use baton_lease::record::Body;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match Body::parse(data) {
        Body::Held(h) => assert_eq!(Body::parse(h.render().as_bytes()), Body::Held(h)),
        Body::Free(f) if f.version == 3 => {
            assert_eq!(Body::parse(f.render().as_bytes()), Body::Free(f))
        }
        _ => {}
    }
});
