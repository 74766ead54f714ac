//! Controls: published figures of an experiment's baseline row that no variant changes in the
//! model (issue 31, item 3; docs/unknowns.md §9). A calibration (`reproduce X --calibrate`,
//! `crate::sweep::calibrate`) fits the named unknowns to them, and only to them: a control is a
//! figure of the baseline row (the plan's first variant) by construction, since it names no
//! row, so no patched row, and no normalized or withheld figure, can be one.
//! `tests/controls.rs` holds the other half of the definition: no variant moves a control
//! beyond its spread in the default state.

use crate::run::RunResult;
use crate::workload::Metric;

/// One control: a figure of the baseline row, its published value and spread, and where each
/// comes from.
#[derive(Debug, Clone, Copy)]
pub struct Control {
    /// The figure of one run (like [`super::Plan::figure`]); a row's figure is its mean over
    /// the seeds.
    pub figure: fn(&RunResult) -> Metric,
    /// The published value, in the figure's unit.
    pub published: f64,
    /// The published spread (or, where the source gives none, what is used: `spread_source`
    /// says which and why), in the figure's unit; positive.
    pub spread: f64,
    /// Where the spread comes from.
    pub spread_source: &'static str,
    /// Where the published value comes from.
    pub source: &'static str,
}

impl Control {
    /// The figure's name (from a run's metric).
    pub fn name(&self, r: &RunResult) -> &'static str {
        (self.figure)(r).name
    }

    /// The residual of a simulated value in spreads: (simulated - published) / spread.
    pub fn residual(&self, simulated: f64) -> f64 {
        (simulated - self.published) / self.spread
    }
}

/// The mean of each control's figure over `runs` (one row's seeds), in the controls' order.
pub fn means(controls: &[Control], runs: &[&RunResult]) -> Vec<f64> {
    controls
        .iter()
        .map(|c| {
            let n = runs.len().max(1) as f64;
            runs.iter().map(|r| (c.figure)(r).value).sum::<f64>() / n
        })
        .collect()
}

/// The loss of a row's control means: the sum of squared residuals in spreads.
pub fn loss(controls: &[Control], means: &[f64]) -> f64 {
    controls.iter().zip(means).map(|(c, m)| c.residual(*m).powi(2)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing(_: &RunResult) -> Metric {
        Metric { name: "x", unit: "us", lower_is_better: true, value: 0.0 }
    }

    #[test]
    fn loss_is_the_sum_of_squared_residuals_in_spreads() {
        let c = |published, spread| Control { figure: nothing, published, spread, spread_source: "", source: "" };
        let cs = [c(9.0, 1.0), c(12.0, 2.0)];
        // (11 - 9)/1 = 2, (9 - 12)/2 = -1.5: 4 + 2.25.
        assert_eq!(cs[0].residual(11.0), 2.0);
        assert_eq!(cs[1].residual(9.0), -1.5);
        assert_eq!(loss(&cs, &[11.0, 9.0]), 6.25);
        assert_eq!(loss(&cs, &[9.0, 12.0]), 0.0);
    }
}
