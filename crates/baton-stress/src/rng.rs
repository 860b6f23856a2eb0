//! A small random source for jitter and for choosing victims: xorshift64*,
//! seeded from the kernel. Not for secrets; v2 tokens and run ids use
//! [`hex_token`], which reads the kernel directly.

/// A xorshift64* generator.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded from `getrandom(2)` (or from the pid, should that
    /// fail: jitter needs no secrecy).
    pub(crate) fn from_kernel() -> Self {
        let mut b = [0u8; 8];
        let seed = match rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty()) {
            Ok(8) => u64::from_le_bytes(b),
            _ => u64::from(std::process::id()).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        Self(seed | 1)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A float in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `bytes` random bytes from the kernel, as lowercase hex (v2's
/// `secrets.token_hex(8)` for 8 bytes).
///
/// # Errors
///
/// When the kernel gives no random bytes.
pub(crate) fn hex_token(bytes: usize) -> std::io::Result<String> {
    let mut b = vec![0u8; bytes];
    let mut filled = 0;
    while filled < bytes {
        filled += rustix::rand::getrandom(&mut b[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hex_and_fresh() {
        let a = hex_token(8).unwrap();
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, hex_token(8).unwrap());
        let mut r = Rng::from_kernel();
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }
}
