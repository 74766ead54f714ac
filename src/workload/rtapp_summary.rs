//! rt-app's log as a summary: per thread, the count and sums of its log rows and histograms of
//! the slack and wakeup latency columns, kept as rows are logged. Its size grows with the
//! logarithm of the largest value, not with the number of rows, so a run that keeps no rows
//! (`logs=summary`) takes memory in proportion to its threads, not to its simulated time.

use super::rtapp::LogRow;

/// Values below this are counted exactly; above, with [`SIG_BITS`] significant bits.
const EXACT: u64 = 64;
/// Significant bits of a counted value at or above [`EXACT`] (6: within 1/32 below it).
const SIG_BITS: u32 = 6;

/// A histogram of non-negative values: exact below [`EXACT`], log-linear above it (each power
/// of two split in 32 buckets), grown to the largest bucket seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hist {
    counts: Vec<u32>,
}

impl Hist {
    /// The bucket of `v`.
    fn index(v: u64) -> usize {
        if v < EXACT {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros();
        let shift = msb + 1 - SIG_BITS;
        // The top SIG_BITS bits of v lie in 32..64; each power of two above EXACT adds 32.
        ((shift as u64) * (EXACT / 2) + (v >> shift)) as usize
    }

    /// The least value of bucket `i`.
    fn low(i: usize) -> u64 {
        let i = i as u64;
        if i < EXACT {
            return i;
        }
        let half = EXACT / 2;
        let shift = (i - half) / half;
        (i - shift * half) << shift
    }

    pub fn add(&mut self, v: u64) {
        let i = Self::index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] = self.counts[i].saturating_add(1);
    }

    pub fn merge(&mut self, o: &Hist) {
        if o.counts.len() > self.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a = a.saturating_add(*b);
        }
    }

    /// The values counted, in ascending order of buckets: (bucket's least value, count).
    fn buckets(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| (Self::low(i), u64::from(n)))
    }
}

/// A signed column's distribution: negative values by magnitude, the rest as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignedHist {
    neg: Hist,
    pos: Hist,
}

impl SignedHist {
    pub fn add(&mut self, v: i64) {
        if v < 0 {
            self.neg.add(v.unsigned_abs());
        } else {
            self.pos.add(v as u64);
        }
    }

    pub fn merge(&mut self, o: &SignedHist) {
        self.neg.merge(&o.neg);
        self.pos.merge(&o.pos);
    }

    /// The `p`-th percentile (0..=100) of `n` counted values, as the least value of its bucket
    /// (for a negative bucket, the value of least magnitude); `None` without values.
    pub fn percentile(&self, p: u32, n: u64) -> Option<i64> {
        if n == 0 {
            return None;
        }
        // The rank of the value: the least with at least p% of the values at or below it.
        let rank = (u64::from(p) * n).div_ceil(100).max(1);
        let mut seen = 0u64;
        for (v, c) in self.neg.buckets().rev() {
            seen += c;
            if seen >= rank {
                return Some(-(v as i64));
            }
        }
        for (v, c) in self.pos.buckets() {
            seen += c;
            if seen >= rank {
                return Some(v as i64);
            }
        }
        None
    }
}

/// The percentiles the summary reports.
pub const PERCENTILES: &[u32] = &[50, 90, 99];

/// One thread's (or a set of threads') log rows, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowSummary {
    pub rows: u64,
    pub period_sum: u64,
    pub run_sum: u64,
    pub slack_sum: i64,
    pub wu_lat_sum: u64,
    pub slack_min: i64,
    pub slack_max: i64,
    pub wu_lat_max: u64,
    pub slack: SignedHist,
    pub wu_lat: SignedHist,
}

impl RowSummary {
    pub fn add(&mut self, r: &LogRow) {
        if self.rows == 0 {
            (self.slack_min, self.slack_max) = (r.slack, r.slack);
        }
        self.rows += 1;
        self.period_sum = self.period_sum.saturating_add(r.period);
        self.run_sum = self.run_sum.saturating_add(r.run);
        self.slack_sum = self.slack_sum.saturating_add(r.slack);
        self.wu_lat_sum = self.wu_lat_sum.saturating_add(r.wu_lat);
        self.slack_min = self.slack_min.min(r.slack);
        self.slack_max = self.slack_max.max(r.slack);
        self.wu_lat_max = self.wu_lat_max.max(r.wu_lat);
        self.slack.add(r.slack);
        self.wu_lat.add(r.wu_lat as i64);
    }

    pub fn merge(&mut self, o: &RowSummary) {
        if o.rows == 0 {
            return;
        }
        if self.rows == 0 {
            (self.slack_min, self.slack_max) = (o.slack_min, o.slack_max);
        }
        self.rows += o.rows;
        self.period_sum = self.period_sum.saturating_add(o.period_sum);
        self.run_sum = self.run_sum.saturating_add(o.run_sum);
        self.slack_sum = self.slack_sum.saturating_add(o.slack_sum);
        self.wu_lat_sum = self.wu_lat_sum.saturating_add(o.wu_lat_sum);
        self.slack_min = self.slack_min.min(o.slack_min);
        self.slack_max = self.slack_max.max(o.slack_max);
        self.wu_lat_max = self.wu_lat_max.max(o.wu_lat_max);
        self.slack.merge(&o.slack);
        self.wu_lat.merge(&o.wu_lat);
    }

    /// The mean of a column's sum over the rows (0 without rows), for the report.
    pub fn mean(&self, sum: f64) -> f64 {
        sum / self.rows.max(1) as f64
    }

    /// The summary as JSON: counts, sums, means, and the slack's and wakeup latency's least,
    /// greatest and percentiles (us; percentiles within 1/32 below the value from 64 us up).
    pub fn json(&self) -> serde_json::Value {
        let pct = |h: &SignedHist| -> serde_json::Map<String, serde_json::Value> {
            PERCENTILES.iter().map(|&p| (format!("p{p}"), serde_json::json!(h.percentile(p, self.rows)))).collect()
        };
        serde_json::json!({
            "rows": self.rows,
            "period_us": { "sum": self.period_sum, "mean": self.mean(self.period_sum as f64) },
            "run_us": { "sum": self.run_sum, "mean": self.mean(self.run_sum as f64) },
            "slack_us": {
                "sum": self.slack_sum,
                "mean": self.mean(self.slack_sum as f64),
                "min": if self.rows > 0 { Some(self.slack_min) } else { None },
                "max": if self.rows > 0 { Some(self.slack_max) } else { None },
                "percentiles": pct(&self.slack),
            },
            "wu_lat_us": {
                "sum": self.wu_lat_sum,
                "mean": self.mean(self.wu_lat_sum as f64),
                "max": if self.rows > 0 { Some(self.wu_lat_max) } else { None },
                "percentiles": pct(&self.wu_lat),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_64_and_within_a_32nd_above() {
        for v in 0..EXACT {
            assert_eq!(Hist::low(Hist::index(v)), v);
        }
        for v in [64u64, 65, 100, 127, 128, 1000, 2047, 123_456, u64::MAX / 3, u64::MAX] {
            let lo = Hist::low(Hist::index(v));
            assert!(lo <= v && v - lo <= v / 32, "{v}: bucket from {lo}");
            // The bucket's least value is in the same bucket.
            assert_eq!(Hist::index(lo), Hist::index(v), "{v}");
        }
        // Buckets ascend with their values.
        let idx: Vec<usize> = (0..5000u64).map(Hist::index).collect();
        assert!(idx.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn percentiles_walk_negative_values_first() {
        let mut h = SignedHist::default();
        for v in [-10i64, -3, 0, 5, 7, 9, 20, 30, 40, 50] {
            h.add(v);
        }
        assert_eq!(h.percentile(10, 10), Some(-10));
        assert_eq!(h.percentile(20, 10), Some(-3));
        assert_eq!(h.percentile(50, 10), Some(7));
        assert_eq!(h.percentile(100, 10), Some(50));
        assert_eq!(h.percentile(50, 0), None);
        // Above 64, the bucket's least value.
        let mut h = SignedHist::default();
        h.add(1000);
        assert_eq!(h.percentile(99, 1), Some(992));
    }

    #[test]
    fn a_merged_summary_is_the_summary_of_all_rows() {
        let row = |slack, wu_lat| LogRow { period: 2000, run: 500, slack, wu_lat, ..LogRow::default() };
        let rows = [row(-5, 3), row(100, 70), row(7, 0), row(-200, 1000)];
        let mut all = RowSummary::default();
        rows.iter().for_each(|r| all.add(r));
        let (mut a, mut b) = (RowSummary::default(), RowSummary::default());
        rows[..1].iter().for_each(|r| a.add(r));
        rows[1..].iter().for_each(|r| b.add(r));
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!((all.rows, all.slack_sum, all.slack_min, all.slack_max, all.wu_lat_max), (4, -98, -200, 100, 1000));
        let j = all.json();
        assert_eq!(j["wu_lat_us"]["percentiles"]["p50"], 3);
        assert_eq!(j["slack_us"]["percentiles"]["p50"], -5);
        assert_eq!(j["period_us"]["mean"], 2000.0);
        let mut empty = RowSummary::default();
        empty.merge(&RowSummary::default());
        assert_eq!(empty.json()["slack_us"]["min"], serde_json::Value::Null);
    }
}
