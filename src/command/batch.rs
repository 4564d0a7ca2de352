//! The replies of a batch (BF.MADD, BF.MEXISTS, BF.INSERT, CF.MEXISTS,
//! CF.INSERT, CMS.INCRBY, CMS.QUERY, TOPK.ADD, TOPK.INCRBY, the
//! TDIGEST.* reads of several values): booleans, small integers, counts,
//! doubles or nulls, and now and then an error or a byte string. Kept
//! compact (two bytes per answer; counts, errors and byte strings aside).
//! A batch of a few replies (the usual CMS.INCRBY or TOPK.ADD of one item)
//! holds them in itself; a larger one in buffers kept per thread and
//! reused from command to command, so a batch allocates nothing once the
//! buffers have grown to its size and drops nothing item by item.
//! Commands run on the main thread, so in practice there is one pair of
//! buffers.

use std::cell::Cell;

use super::CommandError;

/// Buffers larger than this are not kept: one huge batch must not hold its
/// memory afterwards.
const KEPT_CAPACITY: usize = 1 << 16;

/// Replies a batch holds in itself: the thread's buffers are not touched
/// (two thread-local accesses, which in a loaded module are calls, and
/// their bookkeeping cost more than a one-item command's own work). Three
/// is the most that keeps the inline form inside the room of the two
/// buffers (the storage's tag lives in a vector's capacity), so that a
/// batch, and every reply and outcome holding one, stays as small.
const INLINE: usize = 3;

const _: () = assert!(std::mem::size_of::<Storage>() == 2 * std::mem::size_of::<Vec<i64>>());

thread_local! {
    static SPARE: Cell<Buffers> = const { Cell::new(Buffers::new()) };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    No,
    Yes,
    /// An integer in both protocols (CF.INSERTNX: 1, 0, -1).
    Int(i8),
    /// `:-1` in RESP2, `#f` in RESP3 (CF.INSERT: no room for the item).
    NoRoom,
    /// The next of the batch's counts (CMS.INCRBY, CMS.QUERY; TDIGEST.RANK).
    Count,
    /// The next of the batch's eight-byte values, a double the server
    /// formats (TDIGEST.QUANTILE, CDF, BYRANK).
    Double,
    /// A null (TOPK.ADD: no item expelled).
    Null,
    /// The next of the batch's byte strings (TOPK.ADD: the item expelled).
    Bytes,
    /// The next of the batch's errors (kept with its byte strings).
    Error,
}

/// The answers, and the counts and doubles (their bits) of the answers
/// that have one, in order.
#[derive(Clone, Debug, Default, PartialEq)]
struct Buffers {
    answers: Vec<Answer>,
    counts: Vec<i64>,
}

impl Buffers {
    const fn new() -> Buffers {
        Buffers {
            answers: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// The thread's buffers, empty, with room for `answers` and `counts`.
    fn take(answers: usize, counts: usize) -> Buffers {
        let mut buffers = SPARE.with(Cell::take);
        buffers.answers.reserve(answers);
        buffers.counts.reserve(counts);
        buffers
    }
}

/// Where a batch's answers are.
#[derive(Clone, Debug, PartialEq)]
enum Storage {
    /// At most [`INLINE`] answers, in the batch.
    Inline {
        len: u8,
        counts_len: u8,
        answers: [Answer; INLINE],
        counts: [i64; INLINE],
    },
    /// The thread's buffers, given back when the batch drops.
    Spare(Buffers),
}

impl Storage {
    const EMPTY: Storage = Storage::Inline {
        len: 0,
        counts_len: 0,
        answers: [Answer::No; INLINE],
        counts: [0; INLINE],
    };
}

/// The replies of one batch, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    storage: Storage,
    /// The errors and byte strings, in order: rare, so not reused (empty,
    /// and never allocated, in most batches).
    extras: Vec<Extra>,
}

/// What an [`Answer::Error`] or an [`Answer::Bytes`] holds.
#[derive(Clone, Debug, PartialEq)]
enum Extra {
    Error(CommandError),
    Bytes(Box<[u8]>),
}

/// One reply of a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BatchReply<'b> {
    Bool(bool),
    Int(i64),
    /// Sent with `RedisModule_ReplyWithDouble`, as `Reply::ServerDouble`.
    Double(f64),
    NoRoom,
    Null,
    Bytes(&'b [u8]),
    Error(&'b CommandError),
}

impl Batch {
    /// An empty batch with room for `n` replies.
    #[inline]
    pub fn with_capacity(n: usize) -> Batch {
        Batch::with_room(n, 0)
    }

    /// [`Batch::with_capacity`] of a batch of counts or doubles.
    #[inline]
    pub fn of_counts(n: usize) -> Batch {
        Batch::with_room(n, n)
    }

    #[inline]
    fn with_room(answers: usize, counts: usize) -> Batch {
        let storage = if answers <= INLINE {
            Storage::EMPTY
        } else {
            Storage::Spare(Buffers::take(answers, counts))
        };
        Batch {
            storage,
            extras: Vec::new(),
        }
    }

    /// `n` "not present" replies (MEXISTS on a key without a filter).
    pub fn all_false(n: usize) -> Batch {
        let mut replies = Batch::with_capacity(n);
        (0..n).for_each(|_| replies.push_bool(false));
        replies
    }

    /// Adds an answer, and its count when it has one.
    #[inline(always)]
    fn push_answer(&mut self, answer: Answer, count: Option<i64>) {
        match &mut self.storage {
            Storage::Inline {
                len,
                counts_len,
                answers,
                counts,
            } if usize::from(*len) < INLINE => {
                answers[usize::from(*len)] = answer;
                *len += 1;
                if let Some(count) = count {
                    // Never more counts than answers: in bounds.
                    counts[usize::from(*counts_len)] = count;
                    *counts_len += 1;
                }
            }
            Storage::Spare(buffers) => {
                buffers.answers.push(answer);
                if let Some(count) = count {
                    buffers.counts.push(count);
                }
            }
            Storage::Inline { .. } => self.spill().push_answer(answer, count),
        }
    }

    /// Moves a full inline batch into the thread's buffers.
    #[cold]
    #[inline(never)]
    fn spill(&mut self) -> &mut Batch {
        let (answers, counts) = self.parts();
        let mut buffers = Buffers::take(2 * INLINE, 2 * INLINE);
        buffers.answers.extend_from_slice(answers);
        buffers.counts.extend_from_slice(counts);
        self.storage = Storage::Spare(buffers);
        self
    }

    /// The answers and the counts, in order.
    #[inline(always)]
    fn parts(&self) -> (&[Answer], &[i64]) {
        match &self.storage {
            Storage::Inline {
                len,
                counts_len,
                answers,
                counts,
            } => (
                &answers[..usize::from(*len)],
                &counts[..usize::from(*counts_len)],
            ),
            Storage::Spare(buffers) => (&buffers.answers, &buffers.counts),
        }
    }

    #[inline]
    pub fn push_bool(&mut self, value: bool) {
        self.push_answer(if value { Answer::Yes } else { Answer::No }, None);
    }

    #[inline]
    pub fn push_int(&mut self, value: i8) {
        self.push_answer(Answer::Int(value), None);
    }

    #[inline]
    pub fn push_no_room(&mut self) {
        self.push_answer(Answer::NoRoom, None);
    }

    /// A count, clamped to the largest integer a reply holds.
    #[inline]
    pub fn push_count(&mut self, value: u64) {
        self.push_answer(Answer::Count, Some(value.min(i64::MAX as u64) as i64));
    }

    #[inline]
    pub fn push_null(&mut self) {
        self.push_answer(Answer::Null, None);
    }

    pub fn push_bytes(&mut self, bytes: Box<[u8]>) {
        self.push_answer(Answer::Bytes, None);
        self.extras.push(Extra::Bytes(bytes));
    }

    /// An integer reply (TDIGEST.RANK: -2, -1 or a rank).
    #[inline]
    pub fn push_integer(&mut self, value: i64) {
        self.push_answer(Answer::Count, Some(value));
    }

    #[inline]
    pub fn push_double(&mut self, value: f64) {
        self.push_answer(Answer::Double, Some(value.to_bits() as i64));
    }

    pub fn push_error(&mut self, error: CommandError) {
        self.push_answer(Answer::Error, None);
        self.extras.push(Extra::Error(error));
    }

    /// Adds the reply to one item: a boolean or an error.
    #[inline]
    pub fn push(&mut self, reply: Result<bool, CommandError>) {
        match reply {
            Ok(value) => self.push_bool(value),
            Err(e) => self.push_error(e),
        }
    }

    pub fn len(&self) -> usize {
        self.parts().0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = BatchReply<'_>> {
        let (answers, counts) = self.parts();
        let mut extras = self.extras.iter();
        let mut counts = counts.iter();
        answers.iter().map(move |a| match a {
            Answer::No => BatchReply::Bool(false),
            Answer::Yes => BatchReply::Bool(true),
            Answer::Int(v) => BatchReply::Int(i64::from(*v)),
            Answer::NoRoom => BatchReply::NoRoom,
            Answer::Count => BatchReply::Int(*counts.next().expect("a count per Count answer")),
            Answer::Double => BatchReply::Double(f64::from_bits(
                *counts.next().expect("bits per Double answer") as u64,
            )),
            Answer::Null => BatchReply::Null,
            Answer::Bytes | Answer::Error => match extras.next().expect("one per Bytes or Error") {
                Extra::Bytes(bytes) => BatchReply::Bytes(bytes),
                Extra::Error(e) => BatchReply::Error(e),
            },
        })
    }

    /// The replies as a plain array (tests compare with these).
    #[cfg(test)]
    pub fn to_replies(&self) -> Vec<super::Reply<'static>> {
        self.iter()
            .map(|r| match r {
                BatchReply::Bool(v) => super::Reply::Bool(v),
                BatchReply::Int(v) => super::Reply::Integer(v),
                BatchReply::Double(v) => super::Reply::ServerDouble(v),
                // As RESP2 sends it.
                BatchReply::NoRoom => super::Reply::Integer(-1),
                BatchReply::Null => super::Reply::Null,
                BatchReply::Bytes(b) => super::Reply::Bulk(b.to_vec().into()),
                BatchReply::Error(e) => super::Reply::Error(e.clone()),
            })
            .collect()
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let Storage::Spare(buffers) = &mut self.storage else {
            return;
        };
        let mut kept = std::mem::take(buffers);
        if kept.answers.capacity() > KEPT_CAPACITY {
            kept.answers = Vec::new();
        }
        if kept.counts.capacity() > KEPT_CAPACITY {
            kept.counts = Vec::new();
        }
        kept.answers.clear();
        kept.counts.clear();
        SPARE.with(|spare| spare.set(kept));
    }
}

#[cfg(test)]
mod tests {
    use super::super::Reply;
    use super::*;

    /// Where a batch's answers and counts are, if in the thread's buffers.
    fn buffers(batch: &Batch) -> Option<(*const Answer, *const i64)> {
        match &batch.storage {
            Storage::Inline { .. } => None,
            Storage::Spare(b) => Some((b.answers.as_ptr(), b.counts.as_ptr())),
        }
    }

    #[test]
    fn replies_in_order_and_buffers_reused() {
        let mut first = Batch::with_capacity(INLINE + 3);
        first.push_bool(true);
        first.push(Err(CommandError::Arity));
        first.push_bool(false);
        assert_eq!(
            first.to_replies(),
            [
                Reply::Bool(true),
                Reply::Error(CommandError::Arity),
                Reply::Bool(false)
            ]
        );
        let address = buffers(&first).expect("a large batch takes the buffers").0;
        drop(first);
        let second = Batch::with_capacity(INLINE + 1);
        assert_eq!(second.len(), 0);
        assert_eq!(buffers(&second).map(|b| b.0), Some(address));
        drop(second);
        let mut large = Batch::with_capacity(KEPT_CAPACITY + 1);
        large.push_bool(true);
        drop(large);
        let after_large = Batch::with_capacity(INLINE + 1);
        assert_eq!(after_large.len(), 0);
        let Storage::Spare(kept) = &after_large.storage else {
            panic!("a batch larger than the inline room takes the buffers");
        };
        assert!(
            kept.answers.capacity() <= KEPT_CAPACITY,
            "the huge buffer was not kept"
        );
    }

    /// A small batch takes no buffer; one that outgrows the inline room
    /// moves into the buffers and keeps every reply in order.
    #[test]
    fn small_batches_inline_and_spill_in_order() {
        let mut small = Batch::of_counts(1);
        small.push_count(5);
        assert_eq!(buffers(&small), None);
        assert_eq!(small.to_replies(), [Reply::Integer(5)]);

        let mut growing = Batch::with_capacity(1);
        let mut expected = Vec::new();
        for i in 0..(3 * INLINE) as u64 {
            match i % 4 {
                0 => {
                    growing.push_count(i);
                    expected.push(Reply::Integer(i as i64));
                }
                1 => {
                    growing.push_bool(true);
                    expected.push(Reply::Bool(true));
                }
                2 => {
                    growing.push_error(CommandError::Arity);
                    expected.push(Reply::Error(CommandError::Arity));
                }
                _ => {
                    growing.push_double(i as f64 / 2.0);
                    expected.push(Reply::ServerDouble(i as f64 / 2.0));
                }
            }
            assert_eq!(buffers(&growing).is_some(), i as usize >= INLINE);
            assert_eq!(growing.to_replies(), expected);
            assert_eq!(growing.clone().to_replies(), expected);
        }
    }

    #[test]
    fn doubles_and_integers_share_the_counts_buffer() {
        for n in [INLINE, INLINE + 4] {
            let mut batch = Batch::of_counts(n);
            batch.push_double(-0.0);
            batch.push_integer(-2);
            batch.push_double(f64::NAN);
            batch.push_double(1e308);
            let replies = batch.to_replies();
            assert!(
                matches!(replies[0], Reply::ServerDouble(v) if v == 0.0 && v.is_sign_negative())
            );
            assert_eq!(replies[1], Reply::Integer(-2));
            assert!(matches!(replies[2], Reply::ServerDouble(v) if v.is_nan()));
            assert_eq!(replies[3], Reply::ServerDouble(1e308));
        }
    }

    #[test]
    fn nulls_and_byte_strings_in_order() {
        let mut batch = Batch::with_capacity(4);
        batch.push_null();
        batch.push_bytes(b"a\0b".to_vec().into_boxed_slice());
        batch.push_error(CommandError::Arity);
        batch.push_bytes(Box::new([]));
        assert_eq!(
            batch.clone().to_replies(),
            [
                Reply::Null,
                Reply::Bulk(b"a\0b".to_vec().into()),
                Reply::Error(CommandError::Arity),
                Reply::Bulk(Vec::new().into())
            ]
        );
    }

    #[test]
    fn counts_between_errors_in_order_and_reused() {
        let mut counts = Batch::of_counts(INLINE + 3);
        counts.push_count(7);
        counts.push_error(CommandError::Arity);
        counts.push_count(u64::MAX);
        assert_eq!(
            counts.to_replies(),
            [
                Reply::Integer(7),
                Reply::Error(CommandError::Arity),
                Reply::Integer(i64::MAX)
            ]
        );
        let address = buffers(&counts).expect("in the buffers").1;
        drop(counts);
        assert_eq!(
            buffers(&Batch::of_counts(INLINE + 1)).map(|b| b.1),
            Some(address)
        );
    }
}
