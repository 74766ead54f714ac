//! Seeded pseudo-random streams. One master seed; every stream is derived from it with
//! SplitMix64, and each stream is a xoshiro256** generator. Value-stable by construction (no
//! external crate whose output could change between versions).

/// SplitMix64 step, used to derive stream seeds.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A xoshiro256** stream.
#[derive(Debug, Clone)]
pub struct Prng {
    s: [u64; 4],
}

impl Prng {
    /// The stream numbered `stream` of master seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut st = seed ^ stream.wrapping_mul(0xD134_2543_DE82_EF95);
        let s = [splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st)];
        Prng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `[lo, hi]` (inclusive). Uses a 128-bit multiply, no floats.
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        // The draw is at most `hi - lo`, so adding it to `lo` cannot overflow: no check for it
        // on this hot path (every modelled line transfer draws here).
        lo.wrapping_add(self.below(hi - lo + 1))
    }

    /// Uniform integer in `[0, width)` for `width >= 1` (the draw of [`Prng::range`], for a
    /// caller that keeps widths precomputed). Uses a 128-bit multiply, no floats.
    #[inline]
    pub fn below(&mut self, width: u64) -> u64 {
        ((self.next_u64() as u128 * width as u128) >> 64) as u64
    }

    /// One draw standing for the sum of `n` draws of [`Prng::below`]`(width)`: the same mean
    /// (`n * (width - 1) / 2`, exactly), the same variance (`n * (width^2 - 1) / 12`, to within
    /// a relative `4 / sqrt(n * width^2)`) and the same range of means, from one uniform draw
    /// of `W` values centred on that mean, `W^2 - 1 = n * (width^2 - 1)` rounded to the parity
    /// that centres it. The shape is flat where the sum's is bell-like (its tails stop at 1.73
    /// standard deviations). `n == 1` is exactly `below(width)`; `n == 0` or `width <= 1` draws
    /// nothing and gives 0. For charging many independent transfers of one kind with one draw
    /// (docs/costs.md, "One draw per distance").
    #[inline]
    pub fn sum_below(&mut self, n: u64, width: u64) -> u64 {
        if n == 0 || width <= 1 {
            return 0;
        }
        let w = u128::from(width);
        // The largest sum, and the square of the width of the one draw.
        let top = u128::from(n) * (w - 1);
        let square = u128::from(n) * (w * w - 1) + 1;
        let mut draw = square.isqrt();
        // Centred: `top - (draw - 1)` is even (`top + 1 - draw` even); and `draw <= top + 1`.
        if (top + 1 - draw.min(top + 1)) % 2 != 0 {
            draw += 1;
        }
        let draw = draw.min(top + 1);
        let start = (top + 1 - draw) / 2;
        let draw = u64::try_from(draw).unwrap_or(u64::MAX);
        u64::try_from(start).unwrap_or(u64::MAX).saturating_add(self.below(draw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = Prng::new(42, 1);
        let mut b = Prng::new(42, 1);
        let mut c = Prng::new(42, 2);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    /// One draw for a sum of draws: exactly `below` for one, the sum's exact mean and (within
    /// the rounding of the width) its variance for many, and within the sum's range.
    #[test]
    fn sum_below_has_the_sums_mean_and_variance() {
        let mut a = Prng::new(3, 0);
        let mut b = Prng::new(3, 0);
        for width in [2, 7, 61, 200] {
            assert_eq!(a.sum_below(1, width), b.below(width));
        }
        assert_eq!(a.sum_below(0, 50), 0);
        assert_eq!(a.sum_below(9, 1), 0);
        assert_eq!(a.next_u64(), b.next_u64(), "nothing drawn for an empty or fixed sum");
        for (n, width) in [(2u64, 2u64), (5, 61), (300, 61), (1000, 7), (37, 200)] {
            let top = n * (width - 1);
            let samples: u64 = 20_000;
            let mut r = Prng::new(11, n);
            let v: Vec<u64> = (0..samples).map(|_| r.sum_below(n, width)).collect();
            let (lo, hi) = (*v.iter().min().unwrap(), *v.iter().max().unwrap());
            assert!(hi <= top, "n={n} width={width}: {hi} > {top}");
            // In integers: S samples, their sum and sum of squares; the sum of draws has
            // variance n * (width^2 - 1) / 12.
            let (s, sum) = (i128::from(samples), v.iter().map(|&x| i128::from(x)).sum::<i128>());
            let squares = v.iter().map(|&x| i128::from(x) * i128::from(x)).sum::<i128>();
            let var12 = i128::from(n) * (i128::from(width) * i128::from(width) - 1);
            // The mean within four standard errors (and half a unit) of top / 2:
            // (2 * sum - top * S)^2 * 12 <= 64 * S * var12 + 12 * S^2.
            let d = 2 * sum - i128::from(top) * s;
            assert!(d * d * 12 <= 64 * s * var12 + 12 * s * s, "n={n} width={width}: mean {sum}/{s}");
            // The variance within 6% plus the rounding of the draw's width (4 / sqrt(n w^2)):
            // |12 * (S * squares - sum^2) - S^2 * var12| <= (6 / 100 + 4 / root) * S^2 * var12.
            let root = i128::from((n * width * width).isqrt());
            let got = 12 * (s * squares - sum * sum) - s * s * var12;
            assert!(got.abs() * 100 * root <= (6 * root + 400) * s * s * var12, "n={n} width={width}: variance");
            // A flat draw centred on the mean: its ends are as far from the sum's.
            assert!((lo + hi).abs_diff(top) * 1000 <= hi - lo + 1 + 1000, "n={n} width={width}: {lo}..={hi}");
        }
    }

    #[test]
    fn range_stays_in_bounds() {
        let mut r = Prng::new(7, 0);
        for _ in 0..10_000 {
            let v = r.range(100, 134);
            assert!((100..=134).contains(&v));
        }
        assert_eq!(r.range(5, 5), 5);
    }
}
