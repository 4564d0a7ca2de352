//! The bit array of one link: a zero-initialised byte buffer, allocated
//! fallibly, addressed LSB-first (bit `x` is `byte[x >> 3] & (1 << (x & 7))`).
//!
//! The byte layout is RedisBloom's, so the buffer is what SCANDUMP and RDB
//! carry, with no conversion.

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

/// Alignment of every array: whole-word reads for popcount, and all that
/// Redis' allocator promises for 8-byte and larger blocks.
const ALIGN: usize = 8;

/// Whether the CPU has PREFETCHW (CPUID 0x80000001, ECX bit 8), read once.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_prefetchw() -> bool {
    use std::sync::atomic::AtomicU8;
    static KNOWN: AtomicU8 = AtomicU8::new(0); // 0 unknown, 1 no, 2 yes
    match KNOWN.load(Ordering::Relaxed) {
        0 => {
            // CPUID exists on every x86-64 CPU; the extended leaf is checked
            // to exist before it is read.
            use std::arch::x86_64::__cpuid;
            let yes =
                __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0;
            KNOWN.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
        k => k == 2,
    }
}

/// Arrays from this size on are offered transparent huge pages.
pub const HUGE_PAGE_MIN: usize = 4 << 20;

static HUGE_PAGES: AtomicBool = AtomicBool::new(true);

/// Whether new arrays of `HUGE_PAGE_MIN` bytes or more ask for transparent
/// huge pages (Linux, THP in `madvise` or `always` mode). A Bloom filter
/// probes random cache lines: with 4 KiB pages nearly every probe of a large
/// filter also misses the TLB, with 2 MiB pages almost none does.
pub fn set_huge_pages(enabled: bool) {
    HUGE_PAGES.store(enabled, Ordering::Relaxed);
}

pub fn huge_pages() -> bool {
    HUGE_PAGES.load(Ordering::Relaxed)
}

/// Advises the kernel to back the 2 MiB-aligned interior of a large array
/// with huge pages. Only a hint: nothing changes if THP is off.
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    if len < HUGE_PAGE_MIN || !huge_pages() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) & !(HUGE - 1);
        if end > start {
            // SAFETY: (1) `start..end` lies inside the live allocation
            // `ptr..ptr + len` (start rounds up, end rounds down, and the
            // call is made only when end > start); (2) MADV_HUGEPAGE only
            // changes how the kernel backs those pages, never their
            // contents or the mapping's validity; (3) its failure is
            // harmless, so the result is ignored.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ptr;
}

/// The allocator could not provide the bytes, or the size is not
/// addressable on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocError {
    pub bytes: u64,
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not allocate {} bytes", self.bytes)
    }
}

/// An owned, zero-initialised, fixed-size bit array.
pub struct BitArray {
    ptr: NonNull<u8>,
    len: usize,
    /// A new array's huge-page advice waits for its first write: the
    /// system call (1-2 µs on a large array) then costs nothing to a
    /// filter that is reserved and never written, and creation stays as
    /// cheap as the allocation. Pages are only backed once written, so
    /// advice given before the first write covers them all.
    advice_pending: bool,
}

// SAFETY: BitArray owns its buffer exclusively (like Box<[u8]>), and the
// buffer is freed through the global allocator, which any thread may call:
// moving it to another thread moves that ownership.
unsafe impl Send for BitArray {}
// SAFETY: BitArray has no interior mutability: through &BitArray the buffer
// is only read (the prefetch hints change no memory), so shared references
// on several threads cannot race.
unsafe impl Sync for BitArray {}

impl BitArray {
    fn layout(len: usize) -> Result<Layout, AllocError> {
        Layout::from_size_align(len, ALIGN).map_err(|_| AllocError { bytes: len as u64 })
    }

    /// A zeroed array of `bytes` bytes, or an error instead of an abort when
    /// the memory is not there.
    pub fn zeroed(bytes: u64) -> Result<BitArray, AllocError> {
        let len = usize::try_from(bytes).map_err(|_| AllocError { bytes })?;
        if len == 0 {
            return Ok(BitArray {
                ptr: NonNull::dangling(),
                len: 0,
                advice_pending: false,
            });
        }
        let layout = Self::layout(len)?;
        // SAFETY: alloc_zeroed requires a layout of non-zero size: len > 0
        // here (0 returned early above), and Layout::from_size_align
        // checked the alignment and that the size does not overflow.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(AllocError { bytes })?;
        Ok(BitArray {
            ptr,
            len,
            advice_pending: len >= HUGE_PAGE_MIN && huge_pages(),
        })
    }

    /// A copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<BitArray, AllocError> {
        let mut array = BitArray::zeroed(bytes.len() as u64)?;
        array.as_bytes_mut().copy_from_slice(bytes);
        Ok(array)
    }

    /// Takes ownership of a buffer produced by the global allocator.
    ///
    /// # Safety
    /// 1. `ptr` was returned by the process' global allocator for a block of
    ///    at least `len` bytes, and nothing else owns or frees it.
    /// 2. The allocator accepts freeing it with `Layout(len, 8)`: true of
    ///    Redis' allocator, which ignores the layout, so the module may adopt
    ///    a buffer Redis allocated (a loaded RDB string) without copying it.
    /// 3. `ptr` is aligned to 8 bytes when `len >= 8`.
    pub unsafe fn from_raw_parts(ptr: NonNull<u8>, len: usize) -> BitArray {
        // Written already (loaded data, or a block moved by defrag): the
        // kernel may collapse its pages into huge ones from now on.
        advise_huge_pages(ptr.as_ptr(), len);
        BitArray {
            ptr,
            len,
            advice_pending: false,
        }
    }

    /// Gives up ownership: the caller must free the buffer (see
    /// [`BitArray::from_raw_parts`]). Used by defragmentation, which moves
    /// the block and hands back the new address.
    pub fn into_raw_parts(self) -> (NonNull<u8>, usize) {
        let parts = (self.ptr, self.len);
        std::mem::forget(self);
        parts
    }

    /// The number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of addressable bits.
    #[inline]
    pub fn bit_len(&self) -> u64 {
        self.len as u64 * 8
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: (1) ptr is valid for reads of len bytes: allocated with
        // that size by `zeroed`, adopted under `from_raw_parts`' contract,
        // or dangling (non-null, aligned) with len 0; (2) every byte is
        // initialised (zeroed at allocation, or a loaded string); (3) &self
        // keeps `&mut` access out for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    #[inline]
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        self.prepare_writes();
        self.bytes_mut()
    }

    /// Gives the huge-page advice a new array keeps for its first write.
    /// [`BitArray::as_bytes_mut`] calls it; callers of [`BitArray::set`],
    /// which skips it to keep the per-bit path free of the test, call it
    /// once before a run of writes (as `Link` does per item).
    #[inline(always)]
    pub fn prepare_writes(&mut self) {
        if self.advice_pending {
            self.give_advice();
        }
    }

    #[cold]
    #[inline(never)]
    fn give_advice(&mut self) {
        self.advice_pending = false;
        advise_huge_pages(self.ptr.as_ptr(), self.len);
    }

    #[inline(always)]
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: (1) and (2) as in `as_bytes`: ptr is valid for len
        // initialised bytes; (3) &mut self makes this the only access to the
        // buffer for the slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Keeps this array on ordinary pages: a windowed filter's generations
    /// are written sparsely, each soon after it was given back to the
    /// kernel ([`BitArray::zero_from`]); faulting huge pages in there made
    /// the kernel compact memory in the middle of an add (measured: up to
    /// 0.6 s per BF.ADD on a 1 GB window).
    pub fn skip_huge_pages(&mut self) {
        self.advice_pending = false;
    }

    /// Sets every byte from `offset` to the end to zero. Whole pages are
    /// given back to the kernel instead of written (they read back as
    /// zeros), so clearing an array costs what its touched pages cost to
    /// unmap, not a write of every byte: a 107 MB generation of a 1 GB
    /// window, mostly untouched, took 90 ms to overwrite.
    pub fn zero_from(&mut self, offset: usize) {
        let offset = offset.min(self.len);
        #[cfg(target_os = "linux")]
        {
            const PAGE: usize = 4096;
            // Below a few pages, a write is cheaper than a system call.
            const GIVE_BACK_MIN: usize = 16 * PAGE;
            let base = self.ptr.as_ptr() as usize;
            let start = (base + offset).next_multiple_of(PAGE);
            let end = (base + self.len) & !(PAGE - 1);
            if end >= start + GIVE_BACK_MIN {
                // SAFETY: (1) `start..end` lies inside the live allocation
                // `base..base + len` (start rounds up from base + offset,
                // end rounds down from its end, and end > start); (2) the
                // array's memory is private anonymous memory (the system
                // allocator's or Redis' jemalloc's mappings), where
                // MADV_DONTNEED makes the pages read back as zeros and
                // keeps the mapping valid; (3) &mut self: nothing else
                // reads the bytes meanwhile. On failure the bytes are
                // written below instead.
                let given_back = unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED)
                } == 0;
                if given_back {
                    let bytes = self.bytes_mut();
                    bytes[offset..start - base].fill(0);
                    bytes[end - base..].fill(0);
                    return;
                }
            }
        }
        self.bytes_mut()[offset..].fill(0);
    }

    /// Whether bit `bit` is set. `bit` must be below `bit_len()`.
    #[inline(always)]
    pub fn get(&self, bit: u64) -> bool {
        let byte = self.as_bytes()[(bit >> 3) as usize];
        byte & (1 << (bit & 7)) != 0
    }

    /// Sets bit `bit`; true when it was 0 before. Call
    /// [`BitArray::prepare_writes`] first (once per run of sets).
    #[inline(always)]
    pub fn set(&mut self, bit: u64) -> bool {
        let slot = &mut self.bytes_mut()[(bit >> 3) as usize];
        let mask = 1u8 << (bit & 7);
        let was_clear = *slot & mask == 0;
        *slot |= mask;
        was_clear
    }

    /// Hints the CPU to bring the cache line holding `bit` closer. A no-op
    /// on targets without a prefetch instruction or for bits out of range.
    #[inline(always)]
    pub fn prefetch(&self, bit: u64) {
        let index = (bit >> 3) as usize;
        if index < self.len {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: (1) `add(index)` stays inside the allocation, as
            // index < len (checked above); (2) PREFETCHT0 is SSE, part of
            // every x86-64 CPU; it never faults and changes no memory.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(self.ptr.as_ptr().add(index) as *const i8);
            }
        }
    }

    /// Hints the CPU to bring the cache line holding byte `index` closer.
    /// A no-op out of range.
    #[inline(always)]
    pub fn prefetch_byte(&self, index: usize) {
        self.prefetch((index as u64) << 3);
    }

    /// Like `prefetch`, for lines about to be written: PREFETCHW fetches
    /// them ready for modification, saving the ownership request each store
    /// would otherwise make. Plain prefetches on CPUs without it.
    #[inline(always)]
    pub fn prefetch_many_write(&self, bits: &[u64]) {
        #[cfg(target_arch = "x86_64")]
        if has_prefetchw() {
            for &bit in bits {
                let index = (bit >> 3) as usize;
                if index < self.len {
                    // SAFETY: (1) `add(index)` stays inside the allocation,
                    // as index < len (checked above); (2) the CPU has
                    // PREFETCHW (has_prefetchw, from CPUID); (3) it never
                    // faults and changes no memory, as the asm options say
                    // (no stack use, flags preserved, memory only read).
                    unsafe {
                        std::arch::asm!(
                            "prefetchw [{}]",
                            in(reg) self.ptr.as_ptr().add(index),
                            options(nostack, preserves_flags, readonly)
                        );
                    }
                }
            }
            return;
        }
        for &bit in bits {
            self.prefetch(bit);
        }
    }

    /// The number of set bits.
    pub fn count_ones(&self) -> u64 {
        count_ones(self.as_bytes())
    }

    /// A deep copy, or an error if the memory is not there.
    pub fn try_clone(&self) -> Result<BitArray, AllocError> {
        BitArray::from_bytes(self.as_bytes())
    }
}

impl Drop for BitArray {
    fn drop(&mut self) {
        if self.len > 0 {
            let layout = Self::layout(self.len).expect("layout was valid at allocation");
            // SAFETY: (1) ptr came from the global allocator with this
            // layout (`zeroed`), or was adopted under `from_raw_parts`'
            // contract, which allows freeing it with this layout; (2) it is
            // freed exactly once: here, unless `into_raw_parts` gave it up
            // and skipped this drop.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

impl fmt::Debug for BitArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BitArray({} bytes)", self.len)
    }
}

/// Population count of a byte slice, with the POPCNT instruction when the
/// CPU has it (the default x86-64 target does not assume it).
pub fn count_ones(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: count_ones_popcnt needs POPCNT, which the CPU has
            // (checked just above).
            return unsafe { count_ones_popcnt(bytes) };
        }
    }
    count_ones_portable(bytes)
}

/// [`count_ones_portable`] compiled with POPCNT, so that each word's count
/// is one instruction.
///
/// # Safety
/// The CPU must have POPCNT (check with `is_x86_feature_detected!`): on one
/// without it the instruction is illegal.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_ones_popcnt(bytes: &[u8]) -> u64 {
    count_ones_portable(bytes)
}

#[inline(always)]
fn count_ones_portable(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut total = 0u64;
    for word in &mut words {
        total += u64::from(u64::from_ne_bytes(word.try_into().expect("8 bytes")).count_ones());
    }
    for &b in words.remainder() {
        total += u64::from(b.count_ones());
    }
    total
}

#[cfg(test)]
mod zero_from_tests {
    use super::*;

    #[test]
    fn zero_from_clears_exactly_the_tail() {
        for len in [8usize, 4096, 65_536, 300_000, 1 << 20] {
            for offset in [0, 1, 4095, 4096, 70_001, len / 2, len] {
                if offset > len {
                    continue;
                }
                let mut a = BitArray::zeroed(len as u64).unwrap();
                a.as_bytes_mut().fill(0xa5);
                a.zero_from(offset);
                let bytes = a.as_bytes();
                assert!(bytes[..offset].iter().all(|&b| b == 0xa5), "{len} {offset}");
                assert!(bytes[offset..].iter().all(|&b| b == 0), "{len} {offset}");
                // Writable again afterwards.
                a.set(0);
                assert!(a.get(0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_layout_is_lsb_first() {
        let mut a = BitArray::zeroed(16).unwrap();
        assert!(a.set(0));
        assert!(a.set(9));
        assert!(!a.set(9));
        assert!(a.set(127));
        assert_eq!(a.as_bytes()[0], 1);
        assert_eq!(a.as_bytes()[1], 2);
        assert_eq!(a.as_bytes()[15], 0x80);
        assert!(a.get(9) && !a.get(10));
        assert_eq!(a.count_ones(), 3);
    }

    /// The flags of the mapping holding `addr` in /proc/self/smaps
    /// ("hg" once MADV_HUGEPAGE covers it).
    #[cfg(target_os = "linux")]
    fn vm_flags(addr: usize) -> Vec<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = lo <= addr && addr < hi;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.split_whitespace().map(str::to_string).collect();
                }
            }
        }
        panic!("no mapping holds {addr:#x}");
    }

    /// A large array asks for huge pages at its first write, not at its
    /// allocation; writes through `set` alone do not ask (Link calls
    /// `prepare_writes` before them), any `as_bytes_mut` does.
    #[test]
    #[cfg(target_os = "linux")]
    fn huge_page_advice_waits_for_the_first_write() {
        let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
        assert!(
            thp,
            "this kernel has no transparent huge pages: the test needs them"
        );
        let bytes = 16u64 << 20;
        for first_write in ["prepare_writes", "as_bytes_mut"] {
            let mut a = BitArray::zeroed(bytes).unwrap();
            let interior = (a.ptr.as_ptr() as usize).next_multiple_of(2 << 20);
            assert!(a.advice_pending);
            assert!(
                !vm_flags(interior).iter().any(|f| f == "hg"),
                "advised at allocation"
            );
            match first_write {
                "prepare_writes" => a.prepare_writes(),
                _ => a.as_bytes_mut()[12345] = 1,
            }
            assert!(!a.advice_pending);
            assert!(
                vm_flags(interior).iter().any(|f| f == "hg"),
                "{first_write}: no advice"
            );
        }
        // Small arrays never ask; copies of large ones are advised at once.
        assert!(
            !BitArray::zeroed((HUGE_PAGE_MIN - 8) as u64)
                .unwrap()
                .advice_pending
        );
        let copy = BitArray::zeroed(bytes).unwrap().try_clone().unwrap();
        assert!(!copy.advice_pending);
        let interior = (copy.ptr.as_ptr() as usize).next_multiple_of(2 << 20);
        assert!(vm_flags(interior).iter().any(|f| f == "hg"));
    }

    #[test]
    fn huge_request_fails_cleanly() {
        // black_box keeps the optimiser from assuming the allocation succeeds.
        for bytes in [u64::MAX, 1 << 62] {
            let result = std::hint::black_box(BitArray::zeroed(bytes));
            assert!(result.is_err(), "{bytes}");
        }
    }

    #[test]
    fn empty_and_odd_sizes() {
        let a = BitArray::zeroed(0).unwrap();
        assert!(a.is_empty());
        assert_eq!(a.count_ones(), 0);
        let b = BitArray::from_bytes(&[0xff, 0x01, 0x80]).unwrap();
        assert_eq!(b.count_ones(), 10);
        let c = b.try_clone().unwrap();
        assert_eq!(c.as_bytes(), b.as_bytes());
    }
}
