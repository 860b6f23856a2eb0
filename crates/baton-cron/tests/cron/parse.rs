//! The parser: every accepted form, read back through [`Fields`], and every
//! refusal, checked by its message.

use baton_cron::{Field, FieldSet, Kind, ParseError, Schedule};

fn fields(expr: &str) -> baton_cron::Fields {
    let schedule = Schedule::parse(expr).unwrap_or_else(|e| panic!("{expr:?}: {e}"));
    schedule.fields().unwrap().clone()
}

fn values(set: &FieldSet) -> Vec<u8> {
    set.values().collect()
}

fn minutes(field: &str) -> Vec<u8> {
    values(fields(&format!("{field} * * * *")).minute())
}

fn months(field: &str) -> Vec<u8> {
    values(fields(&format!("0 0 * {field} *")).month())
}

fn weekdays(field: &str) -> Vec<u8> {
    values(fields(&format!("0 0 * * {field}")).day_of_week())
}

fn error(expr: &str) -> ParseError {
    match Schedule::parse(expr) {
        Ok(s) => panic!("{expr:?} parsed as {s}, expected an error"),
        Err(e) => e,
    }
}

fn message(expr: &str) -> String {
    let message = error(expr).to_string();
    assert!(
        !message.contains('\n'),
        "{expr:?}: the message spans lines: {message}"
    );
    message
}

#[test]
fn star_allows_every_value_and_says_so() {
    let f = fields("* * * * *");
    assert_eq!(values(f.minute()), (0..=59).collect::<Vec<u8>>());
    assert_eq!(values(f.hour()), (0..=23).collect::<Vec<u8>>());
    assert_eq!(values(f.day_of_month()), (1..=31).collect::<Vec<u8>>());
    assert_eq!(values(f.month()), (1..=12).collect::<Vec<u8>>());
    assert_eq!(values(f.day_of_week()), (0..=6).collect::<Vec<u8>>());
    assert!(f.minute().starts_with_star() && f.day_of_week().starts_with_star());
    assert!(f.second().is_none(), "five fields have no seconds field");
}

#[test]
fn numbers_ranges_steps_and_lists() {
    assert_eq!(minutes("5"), [5]);
    assert_eq!(minutes("05"), [5]);
    assert_eq!(minutes("1-4"), [1, 2, 3, 4]);
    assert_eq!(minutes("*/15"), [0, 15, 30, 45]);
    assert_eq!(minutes("10-30/10"), [10, 20, 30]);
    assert_eq!(
        minutes("5/20"),
        [5, 25, 45],
        "a/n runs from a to the field's end"
    );
    assert_eq!(minutes("1,2-4,*/30"), [0, 1, 2, 3, 4, 30]);
    assert_eq!(minutes("59,0"), [0, 59], "values come out sorted");
    assert_eq!(minutes("0-59/60"), [0], "a step as wide as the field");
    assert_eq!(
        values(fields("0 0 1-31/10 * *").day_of_month()),
        [1, 11, 21, 31]
    );
    assert_eq!(values(fields("0 */6 * * *").hour()), [0, 6, 12, 18]);
}

#[test]
fn a_field_starts_with_star_only_when_written_so() {
    let f = fields("*/5,7 0-23 * * *");
    assert!(f.minute().starts_with_star());
    assert!(
        !f.hour().starts_with_star(),
        "0-23 allows every hour but is not written with *"
    );
    assert!(!fields("7,*/5 * * * *").minute().starts_with_star());
}

#[test]
fn month_names_in_any_case_and_in_ranges() {
    assert_eq!(months("JAN,mar,Dec"), [1, 3, 12]);
    assert_eq!(months("jan-mar"), [1, 2, 3]);
    assert_eq!(months("Feb-Aug/3"), [2, 5, 8]);
    assert_eq!(months("*/4"), [1, 5, 9]);
    assert_eq!(months("10/1"), [10, 11, 12]);
}

#[test]
fn weekday_names_numbers_and_both_sundays() {
    assert_eq!(weekdays("MON-FRI"), [1, 2, 3, 4, 5]);
    assert_eq!(weekdays("sun"), [0]);
    assert_eq!(weekdays("7"), [0], "7 is Sunday");
    assert_eq!(weekdays("0,7"), [0]);
    assert_eq!(weekdays("0-7"), [0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(weekdays("5-7"), [0, 5, 6]);
    assert_eq!(weekdays("FRI-SUN"), [0, 5, 6], "SUN ending a range is 7");
    assert_eq!(weekdays("SUN-TUE"), [0, 1, 2]);
    assert_eq!(weekdays("1-7/2"), [0, 1, 3, 5]);
    assert_eq!(
        weekdays("MON/2"),
        [1, 3, 5],
        "a/n in day-of-week runs to Saturday"
    );
    assert_eq!(weekdays("*/2"), [0, 2, 4, 6]);
    assert_eq!(weekdays("Sat,mon-wed"), [1, 2, 3, 6]);
}

#[test]
fn six_fields_put_seconds_first() {
    let s = Schedule::parse("*/20 30 2 * * *").unwrap();
    let f = s.fields().unwrap();
    assert_eq!(values(f.second().unwrap()), [0, 20, 40]);
    assert_eq!(values(f.minute()), [30]);
    assert_eq!(values(f.hour()), [2]);
    assert!(s.has_seconds());
    assert!(!Schedule::parse("30 2 * * *").unwrap().has_seconds());
}

#[test]
fn macros_stand_for_five_fields() {
    for (mac, same) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ] {
        let a = Schedule::parse(mac).unwrap();
        let b = Schedule::parse(same).unwrap();
        assert_eq!(a.fields(), b.fields(), "{mac}");
        assert_eq!(a.kind(), b.kind(), "{mac}");
        assert_eq!(a.to_string(), mac);
    }
    assert_eq!(Schedule::parse("  @Daily ").unwrap().to_string(), "@daily");
}

#[test]
fn display_is_the_expression_with_single_spaces() {
    for (written, shown) in [
        ("  0   3 * *\t*  ", "0 3 * * *"),
        ("*/15 * * * mon-fri", "*/15 * * * mon-fri"),
        ("0 30 2 * * *", "0 30 2 * * *"),
    ] {
        let s: Schedule = written.parse().unwrap();
        assert_eq!(s.to_string(), shown);
        assert_eq!(
            shown.parse::<Schedule>().unwrap(),
            s,
            "display parses back to the same"
        );
    }
}

#[test]
fn kinds_follow_the_minute_and_hour_fields() {
    for expr in [
        "*/15 * * * *",
        "30 * * * *",
        "*/10 2 * * *",
        "* 2 * * *",
        "0 */2 * * *",
        "@hourly",
    ] {
        assert_eq!(
            Schedule::parse(expr).unwrap().kind(),
            Kind::Wildcard,
            "{expr}"
        );
    }
    for expr in [
        "30 2 * * *",
        "0,30 2 * * *",
        "0-30/15 1 * * *",
        "0 3 * * 0",
        "@daily",
        "* 30 2 * * *",
    ] {
        assert_eq!(Schedule::parse(expr).unwrap().kind(), Kind::Fixed, "{expr}");
    }
}

#[test]
fn day_fields_combine_by_either_only_when_neither_starts_with_star() {
    assert!(fields("0 0 13 * FRI").days_match_either());
    assert!(!fields("0 0 * * FRI").days_match_either());
    assert!(!fields("0 0 */10 * FRI").days_match_either());
    assert!(!fields("0 0 13 * */2").days_match_either());
}

#[test]
fn wrong_number_of_fields() {
    assert_eq!(
        message("0 3 * *"),
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second minute \
         hour day-of-month month day-of-week), found 4 in \"0 3 * *\""
    );
    assert!(message("0 0 3 * * * *").ends_with("found 7 in \"0 0 3 * * * *\""));
    let e = error("0 3 * *");
    assert_eq!((e.field(), e.value()), (None, "0 3 * *"));
}

#[test]
fn empty_expression() {
    for expr in ["", "   ", "\t\n"] {
        assert!(
            message(expr).starts_with("empty expression: expected 5 fields"),
            "{expr:?}"
        );
    }
}

#[test]
fn unknown_macro_and_macro_with_fields() {
    assert_eq!(
        message("@reboot"),
        "unknown macro \"@reboot\": use @yearly, @annually, @monthly, @weekly, @daily, \
         @midnight or @hourly"
    );
    assert_eq!(
        message("@daily 5"),
        "\"@daily 5\": a macro stands alone, with no fields after it"
    );
}

#[test]
fn values_out_of_range_name_the_field_and_the_range() {
    assert_eq!(
        message("61 * * * *"),
        "minute \"61\" is out of range: allowed 0-59"
    );
    let e = error("61 * * * *");
    assert_eq!((e.field(), e.value()), (Some(Field::Minute), "61"));
    assert_eq!(
        message("60 * * * * *"),
        "second \"60\" is out of range: allowed 0-59"
    );
    assert_eq!(
        message("0 24 * * *"),
        "hour \"24\" is out of range: allowed 0-23"
    );
    assert_eq!(
        message("0 0 0 * *"),
        "day-of-month \"0\" is out of range: allowed 1-31"
    );
    assert_eq!(
        message("0 0 32 * *"),
        "day-of-month \"32\" is out of range: allowed 1-31"
    );
    assert_eq!(
        message("0 0 * 13 *"),
        "month \"13\" is out of range: allowed 1-12 or JAN-DEC"
    );
    assert_eq!(
        message("0 0 * * 8"),
        "day-of-week \"8\" is out of range: allowed 0-7 (0 and 7 are Sunday) or SUN-SAT"
    );
    assert_eq!(
        message("5,99 * * * *"),
        "minute \"99\" is out of range: allowed 0-59"
    );
    assert_eq!(
        message("99999999999999999999 * * * *"),
        "minute \"99999999999999999999\" is out of range: allowed 0-59"
    );
}

#[test]
fn out_of_range_inside_a_range_or_step() {
    assert_eq!(
        message("0 0 1 1-13/2 *"),
        "month \"1-13/2\": 13 is out of range: allowed 1-12 or JAN-DEC"
    );
    assert_eq!(
        message("0 0 1 0-13/2 *"),
        "month \"0-13/2\": 0 and 13 are out of range: allowed 1-12 or JAN-DEC"
    );
    assert_eq!(
        message("70/5 * * * *"),
        "minute \"70/5\": 70 is out of range: allowed 0-59"
    );
    let e = error("0 0 1 1-13/2 *");
    assert_eq!((e.field(), e.value()), (Some(Field::Month), "1-13/2"));
}

#[test]
fn words_that_are_not_values() {
    assert_eq!(
        message("0 0 * * FRY"),
        "day-of-week \"FRY\" is not a value: use 0-7 (0 and 7 are Sunday) or SUN-SAT"
    );
    assert_eq!(
        message("0 0 * * MON-FOO"),
        "day-of-week \"MON-FOO\": \"FOO\" is not a value: use 0-7 (0 and 7 are Sunday) or SUN-SAT"
    );
    assert_eq!(
        message("JAN * * * *"),
        "minute \"JAN\" is not a value: use 0-59"
    );
    assert_eq!(
        message("0 0 * MON *"),
        "month \"MON\" is not a value: use 1-12 or JAN-DEC"
    );
    assert_eq!(
        message("*-5 * * * *"),
        "minute \"*-5\": \"*\" is not a value: use 0-59"
    );
    assert_eq!(
        message("-5 * * * *"),
        "minute \"-5\": \"\" is not a value: use 0-59"
    );
    assert_eq!(
        message("1-2-3 * * * *"),
        "minute \"1-2-3\": \"2-3\" is not a value: use 0-59"
    );
    assert!(message("0 0 * * MONDAY").starts_with("day-of-week \"MONDAY\" is not a value"));
}

#[test]
fn steps_must_be_whole_numbers_from_one_to_the_field_width() {
    assert_eq!(
        message("*/0 * * * *"),
        "step \"*/0\" in minute: a step must be at least 1"
    );
    let e = error("*/0 * * * *");
    assert_eq!((e.field(), e.value()), (Some(Field::Minute), "*/0"));
    assert_eq!(
        message("0 */25 * * *"),
        "step \"*/25\" in hour: a step must be at most 24"
    );
    assert_eq!(
        message("*/x * * * *"),
        "step \"*/x\" in minute: a step must be a whole number from 1 to 60"
    );
    assert_eq!(
        message("1-5/ * * * *"),
        "step \"1-5/\" in minute: a step must be a whole number from 1 to 60"
    );
    assert_eq!(
        message("0 0 * * */8"),
        "step \"*/8\" in day-of-week: a step must be at most 7"
    );
}

#[test]
fn backwards_ranges_are_refused_with_the_wrapping_list() {
    assert_eq!(
        message("0 10-5 * * *"),
        "hour \"10-5\": the range starts after it ends (10 > 5); write the smaller value \
         first, or a list such as 10-23,0-5 for a range that wraps around"
    );
    let e = error("0 10-5 * * *");
    assert_eq!((e.field(), e.value()), (Some(Field::Hour), "10-5"));
    assert!(message("0 0 * NOV-FEB *").starts_with("month \"NOV-FEB\": the range starts after"));
    assert!(message("0 0 * * SAT-MON").contains("such as 6-6,0-1"));
}

#[test]
fn quartz_features_are_not_supported() {
    assert_eq!(
        message("0 0 L * *"),
        "day-of-month \"L\": L (last) is not supported"
    );
    assert_eq!(
        message("0 0 LW * *"),
        "day-of-month \"LW\": L (last) is not supported"
    );
    assert_eq!(
        message("0 0 15W * *"),
        "day-of-month \"15W\": W (nearest weekday) is not supported"
    );
    assert_eq!(
        message("0 0 * * 5L"),
        "day-of-week \"5L\": L (last) is not supported"
    );
    assert_eq!(
        message("0 0 * * 5#3"),
        "day-of-week \"5#3\": # (nth weekday of the month) is not supported"
    );
    assert_eq!(
        message("0 0 ? * MON"),
        "day-of-month \"?\": ? is not supported: use *"
    );
    assert_eq!(
        message("0 0 1 * ?"),
        "day-of-week \"?\": ? is not supported: use *"
    );
    // Names that contain the letters are still names.
    assert_eq!(weekdays("WED"), [3]);
    assert_eq!(months("JUL"), [7]);
}

#[test]
fn empty_list_items() {
    assert_eq!(
        message("1,,2 * * * *"),
        "minute \"1,,2\" has an empty list item"
    );
    assert_eq!(
        message("0 0 * * MON,"),
        "day-of-week \"MON,\" has an empty list item"
    );
}

#[test]
fn expressions_that_can_never_fire() {
    assert_eq!(
        message("0 0 30 2 *"),
        "\"0 0 30 2 *\" never fires: February never has a 30th"
    );
    assert_eq!(
        message("0 0 30,31 2 *"),
        "\"0 0 30,31 2 *\" never fires: February never has a 30th or 31st"
    );
    assert_eq!(
        message("0 0 31 4,6,9,11 *"),
        "\"0 0 31 4,6,9,11 *\" never fires: April, June, September and November never have a \
         31st"
    );
    // A day-of-week starting with * still needs the day to exist.
    assert_eq!(
        message("0 0 31 feb */2"),
        "\"0 0 31 feb */2\" never fires: February never has a 31st"
    );
    assert!(message("0 0 0 31 feb */2").contains("February never has a 31st"));
    let e = error("0 0 30 2 *");
    assert_eq!(
        (e.field(), e.value()),
        (Some(Field::DayOfMonth), "0 0 30 2 *")
    );
    // These do fire: a leap year has February 29th, March has a 31st, and a
    // restricted day-of-week fires on its own.
    for expr in ["0 0 29 2 *", "0 0 31 2,3 *", "0 0 31 2 MON", "0 0 30 2 1-5"] {
        assert!(Schedule::parse(expr).is_ok(), "{expr}");
    }
}

#[test]
fn interval_errors() {
    use std::time::Duration;
    let every = |d| Schedule::every(d).unwrap_err().to_string();
    assert_eq!(
        every(Duration::ZERO),
        "every period 0ns is too short: it must be at least 1s"
    );
    assert_eq!(
        every(Duration::from_millis(1500)),
        "every period 1.5s is not a whole number of seconds"
    );
    assert_eq!(
        every(Duration::from_secs(366 * 86_400 + 1)),
        "every period 31622401s is too long: it must be at most 366 days (31622400s)"
    );
    assert_eq!(
        message("every:15m"),
        "every period \"15m\" is not a value: write every:<seconds>s, such as every:900s"
    );
    assert!(message("every:0s").contains("too short"));
}

#[test]
fn control_characters_stay_on_one_line() {
    // `message` asserts the message has no line break.
    assert!(message("0\n3 * *").contains(r#""0\n3 * *""#));
    message("0 0 * * FR\u{7}I");
}
