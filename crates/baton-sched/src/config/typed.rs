//! A key's value once read ([`Value`]), before it takes its place in the
//! typed configuration, and the model field types it turns into and back
//! ([`Typed`], for `baton config`): one variant per type, so that a key's
//! [`super::keys::Type`], its default and its field all speak the same
//! value.
//!
//! This module owns only the words and the conversions. It must never read
//! what is written (that is [`super::value`]) nor name a key.

use std::path::PathBuf;
use std::time::Duration;

use super::catch_up::CatchUp;
use super::command::Command;
use super::listen::Listen;
use super::otlp_endpoint::OtlpEndpoint;
use super::overlap::Overlap;
use super::store_url::StoreUrl;
use super::webhook_url::WebhookUrl;
use super::zone::Zone;

/// A value as read, before it takes its place in the typed configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Not set: an optional key left out, or a limit of 0 (none).
    Unset,
    Bool(bool),
    Count(u32),
    Size(u64),
    Duration(Duration),
    Codes(Vec<i32>),
    CatchUp(CatchUp),
    Overlap(Overlap),
    Zone(Zone),
    Path(PathBuf),
    Name(String),
    Command(Command),
    Env(Vec<(String, String)>),
    Listen(Listen),
    Url(StoreUrl),
    Webhook(WebhookUrl),
    Otlp(OtlpEndpoint),
    SslMode(baton_pg::SslMode),
}

/// A model field's type: what [`Value`] it is read from, and shown as.
pub(crate) trait Typed: Sized {
    /// The field's value; `None` for a value of another type.
    fn from_value(v: Value) -> Option<Self>;
    /// The value, to be shown.
    fn to_value(&self) -> Value;
}

/// Each type and the variant it is read from, and `Option` of it, `None`
/// being [`Value::Unset`].
macro_rules! typed {
    ($($t:ty => $v:ident),* $(,)?) => {$(
        impl Typed for $t {
            fn from_value(v: Value) -> Option<Self> {
                match v {
                    Value::$v(x) => Some(x),
                    _ => None,
                }
            }
            fn to_value(&self) -> Value {
                Value::$v(self.clone())
            }
        }
        impl Typed for Option<$t> {
            fn from_value(v: Value) -> Option<Self> {
                match v {
                    Value::Unset => Some(None),
                    v => <$t>::from_value(v).map(Some),
                }
            }
            fn to_value(&self) -> Value {
                self.as_ref().map_or(Value::Unset, Typed::to_value)
            }
        }
    )*};
}

typed! {
    bool => Bool,
    u32 => Count,
    u64 => Size,
    Duration => Duration,
    Vec<i32> => Codes,
    CatchUp => CatchUp,
    Overlap => Overlap,
    Zone => Zone,
    PathBuf => Path,
    String => Name,
    Command => Command,
    Vec<(String, String)> => Env,
    Listen => Listen,
    StoreUrl => Url,
    WebhookUrl => Webhook,
    OtlpEndpoint => Otlp,
    baton_pg::SslMode => SslMode,
}
