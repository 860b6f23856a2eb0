//! Statements sent unnamed, with their parameters' types: how every
//! statement with parameters reaches the server, so that nothing outlives
//! the transaction it ran in.
//!
//! A statement prepared by name stays on the server connection that parsed
//! it. Behind a pooler in transaction mode (PgBouncer's `pool_mode =
//! transaction`) the next transaction may run on another server connection,
//! where that name is unknown or, worse, names another client's statement.
//! So this crate never prepares a statement by name: each one is parsed,
//! bound and run unnamed in a single round trip (tokio-postgres'
//! `query_typed`), which needs each parameter's type up front. [`Param`]
//! says it, per Rust type, at compile time, so a parameter's type is never
//! guessed by the server from a statement it has not seen.
//!
//! What it never does: prepare a named statement, or send a parameter
//! whose type it does not know.

use tokio_postgres::types::{ToSql, Type};

/// A parameter's value copied, so that its statement may be sent after the
/// call that made it has returned.
pub(crate) type Owned = Box<dyn ToSql + Send + Sync>;

/// A value sent as a statement's parameter, with its PostgreSQL type.
pub(crate) trait Param: Sync {
    /// The value, as the driver encodes it.
    fn sql(&self) -> &(dyn ToSql + Sync);
    /// The type the statement's parameter is declared as.
    fn ty(&self) -> Type;
    /// A copy of the value, encoded as [`Param::sql`] is.
    fn owned(&self) -> Owned;
}

macro_rules! param {
    ($($rust:ty => $pg:ident as $own:ty),* $(,)?) => {$(
        impl Param for $rust {
            fn sql(&self) -> &(dyn ToSql + Sync) {
                self
            }
            fn ty(&self) -> Type {
                Type::$pg
            }
            fn owned(&self) -> Owned {
                Box::new(<$own>::from(self.clone()))
            }
        }
        impl Param for Option<$rust> {
            fn sql(&self) -> &(dyn ToSql + Sync) {
                self
            }
            fn ty(&self) -> Type {
                Type::$pg
            }
            fn owned(&self) -> Owned {
                Box::new(self.clone().map(<$own>::from))
            }
        }
    )*};
}

param! {
    bool => BOOL as bool,
    i32 => INT4 as i32,
    i64 => INT8 as i64,
    String => TEXT as String,
    &str => TEXT as String,
}

impl Param for &[&str] {
    fn sql(&self) -> &(dyn ToSql + Sync) {
        self
    }
    fn ty(&self) -> Type {
        Type::TEXT_ARRAY
    }
    fn owned(&self) -> Owned {
        Box::new(
            self.iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<String>>(),
        )
    }
}

impl<T: Param + ?Sized> Param for &T {
    fn sql(&self) -> &(dyn ToSql + Sync) {
        (**self).sql()
    }
    fn ty(&self) -> Type {
        (**self).ty()
    }
    fn owned(&self) -> Owned {
        (**self).owned()
    }
}

/// `params` as the driver's typed statements take them.
pub(crate) fn typed<'a>(params: &'a [&'a (dyn Param + 'a)]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params.iter().map(|p| (p.sql(), p.ty())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_postgres::types::IsNull;

    #[test]
    fn each_value_declares_the_type_of_its_column() {
        let (text, none, n, pid, yes) = ("a", None::<i64>, 7_i64, 3_i32, true);
        let job: &&str = &"job";
        let params: [&dyn Param; 6] = [&text, &none, &n, &pid, &yes, &job];
        let types: Vec<Type> = typed(&params).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            types,
            [
                Type::TEXT,
                Type::INT8,
                Type::INT8,
                Type::INT4,
                Type::BOOL,
                Type::TEXT
            ]
        );
    }

    #[test]
    fn a_copy_encodes_as_its_value_does() {
        let (text, none, n, yes) = ("a", None::<i64>, 7_i64, true);
        let list: &[&str] = &["x", "y"];
        let params: [&dyn Param; 5] = [&text, &none, &n, &yes, &list];
        for p in params {
            let (mut direct, mut copied) = (Default::default(), Default::default());
            let a = p.sql().to_sql_checked(&p.ty(), &mut direct).unwrap();
            let b = p.owned().to_sql_checked(&p.ty(), &mut copied).unwrap();
            assert_eq!(matches!(a, IsNull::Yes), matches!(b, IsNull::Yes));
            assert_eq!(direct, copied, "{:?}", p.ty());
        }
    }
}
