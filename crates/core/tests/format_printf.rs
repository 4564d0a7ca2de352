//! `tdigest::format::write_7_0` against the C library's own
//! `snprintf("%.17g")`, which Redis 7.0 replies doubles with: the module
//! formats RESP2 doubles itself on 7.0, so the two must agree on every
//! double, byte for byte.

use std::ffi::{c_char, c_int, CStr};

use ferrobloom_core::tdigest::format::{write_7_0, Buf70};

extern "C" {
    fn snprintf(buf: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
}

fn printf_17g(x: f64) -> String {
    let mut buf = [0 as c_char; 64];
    // SAFETY: the buffer holds 64 bytes and snprintf writes at most that
    // many, NUL included; the format takes exactly one double.
    let n = unsafe { snprintf(buf.as_mut_ptr(), buf.len(), c"%.17g".as_ptr(), x) };
    assert!(n > 0 && (n as usize) < buf.len());
    // SAFETY: snprintf NUL-terminated what it wrote.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_str()
        .expect("ASCII")
        .to_string()
}

fn check(x: f64) {
    let mut buf: Buf70 = [0; 32];
    assert_eq!(
        write_7_0(x, &mut buf),
        printf_17g(x),
        "bits {:#018x}",
        x.to_bits()
    );
}

#[test]
fn random_bit_patterns() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        check(f64::from_bits(state));
    }
}

#[test]
fn values_people_send_and_edges() {
    let mut values = vec![
        0.0,
        -0.0,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        5e-324,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ];
    for e in -330..=310 {
        let p = 10f64.powi(e);
        values.extend([p, p.next_up(), p.next_down(), -p, 0.5 * p, 9.5 * p]);
    }
    for i in 0..20_000 {
        let i = f64::from(i);
        // Whole numbers, halves, a thousandth, a latency in ms.
        values.extend([i, i + 0.5, i / 1000.0, i * 1.1, i / 7.0, i * 1e15]);
    }
    // Around the switch between the plain and the exponent form.
    for base in [1e16, 1e17, 1e-4, 1e-5] {
        let mut x = base;
        for _ in 0..64 {
            values.extend([x, -x]);
            x = x.next_down();
        }
    }
    values.into_iter().for_each(check);
}
