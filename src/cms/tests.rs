//! The Count-Min sketch's commands driven without Redis: what each
//! command answers for each kind of key, with the spec's worked numbers.

use ferrobloom_core::cms::{CellSize, CountMinSketch};
use ferrobloom_core::Unguarded;

use super::read::{Info, Query};
use super::{replies, Sketch};
use crate::command::testing::{run, MemKey, TestEnv};
use crate::command::{CommandError, KeyedCommand, Reply};

type Key = MemKey<Sketch>;

fn err(text: &'static std::ffi::CStr) -> Reply<'static> {
    Reply::Error(CommandError::Static(text))
}

fn reply<C: KeyedCommand<Value = Sketch>>(key: &mut Key, line: &str) -> Reply<'static> {
    run::<C>(&TestEnv::client(), key, line).0.reply
}

fn ints(values: &[i64]) -> Reply<'static> {
    Reply::Array(values.iter().map(|&v| Reply::Integer(v)).collect())
}

/// Spec §3.8: a 2×2 sketch with foo incremented by 3 and bar by 5 holds
/// the cells [0, 8, 3, 5] (foo in columns 1, 0; bar in 1, 1).
fn worked_example(cell_size: CellSize) -> Key {
    let mut s = CountMinSketch::new(2, 2, cell_size, &Unguarded).unwrap();
    s.incrby(b"foo", 3).unwrap();
    s.incrby(b"bar", 5).unwrap();
    assert_eq!((0..4).map(|i| s.cell(i)).collect::<Vec<_>>(), [0, 8, 3, 5]);
    MemKey::Held(Sketch::new(s))
}

#[test]
fn query_answers_the_smallest_cell_of_each_item() {
    let mut key = worked_example(CellSize::Four);
    assert_eq!(
        reply::<Query>(&mut key, "CMS.QUERY w foo bar baz"),
        ints(&[3, 5, 3])
    );
    assert_eq!(reply::<Query>(&mut key, "CMS.QUERY w"), err_arity());
}

fn err_arity() -> Reply<'static> {
    Reply::Error(CommandError::Arity)
}

#[test]
fn info_has_8_12s_four_pairs() {
    for size in CellSize::ALL {
        let mut key = worked_example(size);
        assert_eq!(
            reply::<Info>(&mut key, "CMS.INFO w"),
            Reply::Map(vec![
                (c"width", Reply::Integer(2)),
                (c"depth", Reply::Integer(2)),
                (c"count", Reply::Integer(8)),
                (c"cell_size", Reply::Integer(size.bytes() as i64)),
            ])
        );
        assert_eq!(reply::<Info>(&mut key, "CMS.INFO w x"), err_arity());
    }
}

#[test]
fn a_missing_key_or_another_type_is_refused_before_the_arguments() {
    for line in ["CMS.QUERY k a", "CMS.INFO k"] {
        let query = line.starts_with("CMS.QUERY");
        let answer = |key: &mut Key| {
            if query {
                reply::<Query>(key, line)
            } else {
                reply::<Info>(key, line)
            }
        };
        assert_eq!(
            answer(&mut MemKey::Missing),
            err(replies::KEY_DOES_NOT_EXIST)
        );
        assert_eq!(answer(&mut MemKey::Other), err(replies::WRONGTYPE));
    }
}
