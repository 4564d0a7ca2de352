//! The replies of a batch (BF.MADD, BF.MEXISTS, BF.INSERT, CF.MEXISTS,
//! CF.INSERT, CMS.INCRBY, CMS.QUERY, TOPK.ADD, TOPK.INCRBY, the
//! TDIGEST.* reads of several values): booleans, small integers, counts,
//! doubles or nulls, and now and then an error or a byte string. Kept compact (a byte per answer; counts, errors and byte
//! strings aside) in one buffer per thread, reused from command to
//! command, so a batch allocates nothing once the buffer has grown to its
//! size and drops nothing item by item. Commands run on the main thread, so in practice
//! there is one buffer.

use std::cell::Cell;

use super::CommandError;

/// Buffers larger than this are not kept: one huge batch must not hold its
/// memory afterwards.
const KEPT_CAPACITY: usize = 1 << 16;

thread_local! {
    static SPARE: Cell<Vec<Answer>> = const { Cell::new(Vec::new()) };
    static SPARE_COUNTS: Cell<Vec<i64>> = const { Cell::new(Vec::new()) };
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

/// The replies of one batch, in order.
#[derive(Debug, PartialEq)]
pub struct Batch {
    answers: Vec<Answer>,
    /// The errors and byte strings, in order: rare, so not reused (empty,
    /// and never allocated, in most batches).
    extras: Vec<Extra>,
    /// Integers too large for an answer and doubles (their bits), in a
    /// buffer reused like the answers' (empty, and never allocated, for
    /// batches without them).
    counts: Vec<i64>,
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
    pub fn with_capacity(n: usize) -> Batch {
        let mut answers = SPARE.with(Cell::take);
        answers.reserve(n);
        Batch {
            answers,
            extras: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// [`Batch::with_capacity`] of a batch of counts or doubles.
    pub fn of_counts(n: usize) -> Batch {
        let mut batch = Batch::with_capacity(n);
        batch.counts = SPARE_COUNTS.with(Cell::take);
        batch.counts.reserve(n);
        batch
    }

    /// `n` "not present" replies (MEXISTS on a key without a filter).
    pub fn all_false(n: usize) -> Batch {
        let mut replies = Batch::with_capacity(n);
        (0..n).for_each(|_| replies.push_bool(false));
        replies
    }

    #[inline]
    pub fn push_bool(&mut self, value: bool) {
        self.answers
            .push(if value { Answer::Yes } else { Answer::No });
    }

    #[inline]
    pub fn push_int(&mut self, value: i8) {
        self.answers.push(Answer::Int(value));
    }

    #[inline]
    pub fn push_no_room(&mut self) {
        self.answers.push(Answer::NoRoom);
    }

    /// A count, clamped to the largest integer a reply holds.
    #[inline]
    pub fn push_count(&mut self, value: u64) {
        self.answers.push(Answer::Count);
        self.counts.push(value.min(i64::MAX as u64) as i64);
    }

    #[inline]
    pub fn push_null(&mut self) {
        self.answers.push(Answer::Null);
    }

    pub fn push_bytes(&mut self, bytes: Box<[u8]>) {
        self.answers.push(Answer::Bytes);
        self.extras.push(Extra::Bytes(bytes));
    }

    /// An integer reply (TDIGEST.RANK: -2, -1 or a rank).
    #[inline]
    pub fn push_integer(&mut self, value: i64) {
        self.answers.push(Answer::Count);
        self.counts.push(value);
    }

    #[inline]
    pub fn push_double(&mut self, value: f64) {
        self.answers.push(Answer::Double);
        self.counts.push(value.to_bits() as i64);
    }

    pub fn push_error(&mut self, error: CommandError) {
        self.answers.push(Answer::Error);
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
        self.answers.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = BatchReply<'_>> {
        let mut extras = self.extras.iter();
        let mut counts = self.counts.iter();
        self.answers.iter().map(move |a| match a {
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
        if self.answers.capacity() <= KEPT_CAPACITY {
            let mut answers = std::mem::take(&mut self.answers);
            answers.clear();
            SPARE.with(|spare| spare.set(answers));
        }
        if self.counts.capacity() != 0 && self.counts.capacity() <= KEPT_CAPACITY {
            let mut counts = std::mem::take(&mut self.counts);
            counts.clear();
            SPARE_COUNTS.with(|spare| spare.set(counts));
        }
    }
}

impl Clone for Batch {
    fn clone(&self) -> Batch {
        let mut copy = Batch::with_capacity(self.len());
        copy.answers.extend_from_slice(&self.answers);
        copy.extras = self.extras.clone();
        copy.counts = self.counts.clone();
        copy
    }
}

#[cfg(test)]
mod tests {
    use super::super::Reply;
    use super::*;

    #[test]
    fn replies_in_order_and_buffers_reused() {
        let mut first = Batch::with_capacity(3);
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
        let address = first.answers.as_ptr();
        drop(first);
        let second = Batch::with_capacity(2);
        assert_eq!(second.len(), 0);
        assert_eq!(second.answers.as_ptr(), address);
        let mut large = Batch::with_capacity(KEPT_CAPACITY + 1);
        large.push_bool(true);
        drop(large);
        assert_eq!(Batch::with_capacity(0).len(), 0);
    }

    #[test]
    fn doubles_and_integers_share_the_counts_buffer() {
        let mut batch = Batch::of_counts(4);
        batch.push_double(-0.0);
        batch.push_integer(-2);
        batch.push_double(f64::NAN);
        batch.push_double(1e308);
        let replies = batch.to_replies();
        assert!(matches!(replies[0], Reply::ServerDouble(v) if v == 0.0 && v.is_sign_negative()));
        assert_eq!(replies[1], Reply::Integer(-2));
        assert!(matches!(replies[2], Reply::ServerDouble(v) if v.is_nan()));
        assert_eq!(replies[3], Reply::ServerDouble(1e308));
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
        let mut counts = Batch::of_counts(3);
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
        let address = counts.counts.as_ptr();
        drop(counts);
        assert_eq!(Batch::of_counts(1).counts.as_ptr(), address);
        assert_eq!(Batch::with_capacity(1).counts.capacity(), 0);
    }
}
