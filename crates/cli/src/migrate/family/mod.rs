//! The types `migrate` copies, each behind one [`Family`]: how a value of
//! the type is read at the source, written at the destination and
//! verified. A new type implements [`Family`] and joins [`FAMILIES`].

mod bloom;
mod cms;
mod cuckoo;
mod tdigest;
mod topk;
mod whole;
mod window;

use super::copy::Ends;
use crate::conn::Server;
use crate::Result;

/// One type of value `migrate` copies.
pub trait Family: Sync {
    /// The key type (TYPE) of its values.
    fn type_name(&self) -> &'static str;
    /// Its values in words, plural: `Bloom filters`, `Count-Min sketches`
    /// (joined by [`names`]).
    fn name(&self) -> &'static str;
    /// One value in words, for the run's count: `filter`, `Count-Min
    /// sketch` (plural by `fmt::noun`).
    fn noun(&self) -> &'static str {
        "filter"
    }
    /// What the bytes copied are, in words: `bit arrays`, `cells`.
    fn data(&self) -> &'static str {
        "bit arrays"
    }
    /// Reads at the source, before anything is written, what the copy
    /// needs (its header, its size); None when the key is gone.
    fn prepare(&self, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>>;
    /// Why the destination cannot hold values of this type (said after a
    /// key's name), or None when every master of it can.
    fn refused_by(&self, _dst: &Server) -> Result<Option<String>> {
        Ok(None)
    }
    /// Of this family's jobs, one by one, why the destination cannot hold
    /// it (said after its key's name), or None; asked before anything is
    /// copied, once [`Family::refused_by`] admitted the family.
    fn refused_jobs(&self, _dst: &mut Server, jobs: &[&Job]) -> Result<Vec<Option<String>>> {
        Ok(vec![None; jobs.len()])
    }
    /// Whether the destination's temporary key holds the recorded partial
    /// copy of `job`, whose memory is then already taken.
    fn holds_partial(&self, _dst: &mut Server, _job: &Job) -> Result<bool> {
        Ok(false)
    }
    /// Copies `job` into its temporary key, verifies it and puts it in
    /// place: the summary line, or `Ok(Err(why))` when the destination
    /// cannot take this value (the others are still copied).
    fn copy(&self, ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>>;
}

/// Every type `migrate` copies, in the order it names them.
const FAMILIES: [&dyn Family; 6] = [
    &bloom::Bloom,
    &window::Window,
    &cuckoo::Cuckoo,
    &cms::Cms,
    &topk::TopKFamily,
    &tdigest::TDigestFamily,
];

/// The family of a key type, if `migrate` copies it.
pub fn of(type_name: &str) -> Option<&'static dyn Family> {
    FAMILIES.into_iter().find(|f| f.type_name() == type_name)
}

/// The family a key of no copied type is read as: Bloom, whose
/// BF.SCANDUMP says the key is gone, or what else it is.
pub fn fallback() -> &'static dyn Family {
    &bloom::Bloom
}

/// Whether migrate copies keys of this type.
pub fn is_copied_type(type_name: &str) -> bool {
    of(type_name).is_some()
}

/// Every family, in order.
pub fn all() -> impl Iterator<Item = &'static dyn Family> {
    FAMILIES.into_iter()
}

/// `Bloom, windowed and Cuckoo filters, Count-Min and Top-K sketches and
/// t-digests`: what migrate copies, in words.
pub fn names() -> String {
    join_names(&FAMILIES.map(|f| f.name()))
}

/// Plural phrases joined, those that share their last word (`filters`)
/// saying it once.
fn join_names(names: &[&str]) -> String {
    let and = |words: &[&str]| match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => words.concat(),
    };
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for name in names {
        let (head, noun) = name.rsplit_once(' ').unwrap_or(("", name));
        match groups.last_mut() {
            Some((n, heads)) if *n == noun => heads.push(head),
            _ => groups.push((noun, vec![head])),
        }
    }
    let phrases: Vec<String> = groups
        .iter()
        .map(|(noun, heads)| match and(heads) {
            // A name of one word (`t-digests`).
            head if head.is_empty() => noun.to_string(),
            head => format!("{head} {noun}"),
        })
        .collect();
    and(&phrases.iter().map(String::as_str).collect::<Vec<_>>())
}

/// What [`Family::prepare`] read at the source.
pub struct Prepared {
    /// The SCANDUMP header the copy starts from (empty for a type copied
    /// otherwise): a resume compares it with the recorded one.
    pub header: Vec<u8>,
    /// Bytes of data to copy (for the progress bar and the memory check).
    pub data_bytes: u64,
    /// A value the stream cannot carry (a Cuckoo filter without items:
    /// CF.SCANDUMP exports nothing of it) is created again with these
    /// arguments.
    pub recreate: Option<Vec<String>>,
    /// A Count-Min sketch's bytes per cell (None for filters): cells of
    /// other sizes than 4 load on FerroBloom only.
    pub cell_size: Option<u64>,
    /// A Top-K sketch's first item holding a NUL byte, which a module
    /// that cuts items there (RedisBloom 2.8.2) cannot hold.
    pub nul_item: Option<Vec<u8>>,
}

/// One filter to copy.
pub struct Job {
    pub key: Vec<u8>,
    pub dest: Vec<u8>,
    pub family: &'static dyn Family,
    pub header: Vec<u8>,
    pub data_bytes: u64,
    pub recreate: Option<Vec<String>>,
    pub cell_size: Option<u64>,
    pub nul_item: Option<Vec<u8>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_a_shared_noun_once() {
        assert_eq!(
            names(),
            "Bloom, windowed and Cuckoo filters, Count-Min and Top-K sketches and t-digests"
        );
        assert_eq!(join_names(&["Bloom filters"]), "Bloom filters");
        assert_eq!(
            join_names(&["Bloom filters", "Cuckoo filters"]),
            "Bloom and Cuckoo filters"
        );
    }
}
