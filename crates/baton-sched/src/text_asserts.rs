//! Assertions on rendered text for the crate's unit tests: whether a text
//! holds a part, showing the whole text when the answer is wrong. Test
//! code only; nothing here is built into the library.

/// Asserts that `text` holds `part`, showing the text where it does not.
#[track_caller]
pub(crate) fn has(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} not in:\n{text}");
}

/// Asserts that `text` does not hold `part`, showing the text where it does.
#[track_caller]
pub(crate) fn lacks(text: &str, part: &str) {
    assert!(!text.contains(part), "{part:?} in:\n{text}");
}
