//! Software prefetch: ask the cache for a line an upcoming event will read.
//!
//! At 10k flows and more the links, the packets in flight and the flows do
//! not fit in cache, and each event starts with a miss on the state it
//! names. The engine knows the next event while it runs this one, so it
//! asks for that event's first lines early and the two misses overlap with
//! work instead of following it.

/// Hint that the cache line holding `*r` will be read soon.
#[inline(always)]
pub fn line<T>(r: &T) {
    at(r as *const T as *const u8);
}

/// Hint that `lines` cache lines from the start of `*r` will be read soon.
#[inline(always)]
pub fn lines<T>(r: &T, lines: usize) {
    let p = r as *const T as *const u8;
    for i in 0..lines {
        at(p.wrapping_add(i * 64));
    }
}

#[inline(always)]
fn at(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, even on an invalid
    // address, and reads or writes nothing the program can observe.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
