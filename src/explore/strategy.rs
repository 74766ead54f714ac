//! The explorer's strategies for the choice point of same-time actions
//! ([`crate::sim::queue::ChoiceStrategy`]), and the replay of recorded choices.
//!
//! Every strategy records the choices that differ from FIFO as `(choice point, candidate
//! index)`: that sparse list, not the strategy, is what a replay token carries.

use crate::sim::perturbation::ReplayPicks;
use crate::sim::queue::ChoiceStrategy;
use crate::sim::Prng;

/// Which strategy explores the order of same-time actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Every choice uniformly among the candidates.
    Random,
    /// Probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS
    /// 2010): a random priority per CPU, the highest-priority CPU's action first, and
    /// `depth - 1` priority change points at random choice-point indices.
    Pct,
    /// Delay-bounded (Emmi, Qadeer, Rakamarić, POPL 2011): FIFO except at `depth` random choice
    /// points, where a later candidate goes first.
    Delay,
}

impl Kind {
    pub const NAMES: &'static [&'static str] = &["random", "pct", "delay"];

    pub fn parse(s: &str) -> Result<Kind, String> {
        match s {
            "random" => Ok(Kind::Random),
            "pct" => Ok(Kind::Pct),
            "delay" => Ok(Kind::Delay),
            _ => Err(format!("--strategy '{s}': expected one of {}", Kind::NAMES.join(", "))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Random => "random",
            Kind::Pct => "pct",
            Kind::Delay => "delay",
        }
    }
}

#[derive(Debug, Clone)]
enum State {
    Random,
    Pct {
        /// Priority per owner (index: CPU; the last slot for actions without a CPU); 0 means
        /// not yet drawn. Initial priorities are `depth ..`; change point `i` lowers the chosen
        /// owner to `depth - 1 - i`.
        prio: Vec<u64>,
        /// Choice-point indices where the chosen owner's priority drops (sorted).
        change: Vec<u64>,
        next_change: usize,
    },
    Delay {
        /// Choice-point indices where a later candidate goes first (sorted).
        points: Vec<u64>,
        next: usize,
    },
    Replay(ReplayPicks),
}

/// One run's strategy state plus the choices it made that differ from FIFO.
#[derive(Debug, Clone)]
pub struct Explorer {
    rng: Prng,
    state: State,
    /// `(choice point, candidate index)` for every choice that was not index 0.
    pub picks: Vec<(u64, u32)>,
}

impl Explorer {
    /// The strategy of run `run` of an exploration: its draws come only from `(seed, run)`.
    /// `owners` is the number of CPUs; `points` the number of choice points an unperturbed run
    /// meets (PCT's and delay's range for their random indices); `depth` PCT's bug depth or the
    /// delay bound.
    pub fn new(kind: Kind, seed: u64, run: u64, owners: u32, points: u64, depth: u32) -> Explorer {
        let mut rng = Prng::new(seed ^ 0xE8F1_0BE5_0000_0000, run.wrapping_mul(2).wrapping_add(1));
        let points = points.max(1);
        let state = match kind {
            Kind::Random => State::Random,
            Kind::Pct => {
                let n = owners as usize + 1;
                // A random permutation of the priorities depth .. depth + n (Fisher-Yates).
                let mut prio: Vec<u64> = (0..n as u64).map(|i| depth as u64 + i).collect();
                for i in (1..n).rev() {
                    let j = rng.range(0, i as u64) as usize;
                    prio.swap(i, j);
                }
                let mut change: Vec<u64> = (0..depth.saturating_sub(1)).map(|_| rng.range(0, points - 1)).collect();
                change.sort_unstable();
                State::Pct { prio, change, next_change: 0 }
            }
            Kind::Delay => {
                let mut p: Vec<u64> = (0..depth).map(|_| rng.range(0, points - 1)).collect();
                p.sort_unstable();
                p.dedup();
                State::Delay { points: p, next: 0 }
            }
        };
        Explorer { rng, state, picks: Vec::new() }
    }

    /// Replay recorded choices: `picks[i].1` at choice point `picks[i].0`, FIFO elsewhere.
    pub fn replay(picks: Vec<(u64, u32)>) -> Explorer {
        Explorer { rng: Prng::new(0, 0), state: State::Replay(ReplayPicks::new(picks)), picks: Vec::new() }
    }

    /// The recorded picks of the strategy a queue's chooser holds (empty if it holds none).
    pub fn picks_of(c: &crate::sim::Chooser) -> Vec<(u64, u32)> {
        match c {
            crate::sim::Chooser::Strategy(s) => {
                s.as_any().downcast_ref::<Explorer>().map(|e| e.picks.clone()).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    fn pick(&mut self, point: u64, owners: &[u32]) -> usize {
        let n = owners.len();
        match &mut self.state {
            State::Random => self.rng.range(0, n as u64 - 1) as usize,
            State::Pct { prio, change, next_change, .. } => {
                let last = prio.len() - 1;
                let slot = |o: u32| (o as usize).min(last);
                let mut best = 0;
                for (i, &o) in owners.iter().enumerate() {
                    if prio[slot(o)] > prio[slot(owners[best])] {
                        best = i;
                    }
                }
                while *next_change < change.len() && change[*next_change] <= point {
                    // Change point i (1-based) lowers the chosen owner to depth - i, below every
                    // initial priority.
                    *next_change += 1;
                    let d = change.len() as u64 + 1;
                    prio[slot(owners[best])] = d - *next_change as u64;
                }
                best
            }
            State::Delay { points, next } => {
                let mut c = 0;
                while *next < points.len() && points[*next] <= point {
                    *next += 1;
                    c = self.rng.range(1, n as u64 - 1) as usize;
                }
                c
            }
            State::Replay(r) => r.pick(point, n),
        }
    }
}

impl ChoiceStrategy for Explorer {
    fn choose(&mut self, point: u64, owners: &[u32]) -> usize {
        let c = self.pick(point, owners);
        if c != 0 {
            self.picks.push((point, c as u32));
        }
        c
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn box_clone(&self) -> Box<dyn ChoiceStrategy> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(e: &mut Explorer, sizes: &[(usize, &[u32])]) -> Vec<usize> {
        sizes.iter().enumerate().map(|(i, (n, o))| e.choose(i as u64, &o[..*n])).collect()
    }

    #[test]
    fn strategies_are_deterministic_per_run_and_replay_reproduces_them() {
        let owners: &[u32] = &[0, 1, 2, 3];
        let sizes: Vec<(usize, &[u32])> = (0..200).map(|i| (2 + i % 3, owners)).collect();
        for kind in [Kind::Random, Kind::Pct, Kind::Delay] {
            let mut a = Explorer::new(kind, 7, 3, 4, 200, 3);
            let mut b = Explorer::new(kind, 7, 3, 4, 200, 3);
            let ca = drive(&mut a, &sizes);
            assert_eq!(ca, drive(&mut b, &sizes));
            let mut r = Explorer::replay(a.picks.clone());
            assert_eq!(drive(&mut r, &sizes), ca, "{kind:?}");
            assert_eq!(r.picks, a.picks);
        }
    }

    #[test]
    fn delay_deviates_at_most_depth_times_and_pct_orders_by_cpu() {
        let owners: &[u32] = &[0, 1, 2];
        let sizes: Vec<(usize, &[u32])> = (0..500).map(|_| (3, owners)).collect();
        for run in 0..20 {
            let mut d = Explorer::new(Kind::Delay, 1, run, 3, 500, 2);
            drive(&mut d, &sizes);
            assert!(d.picks.len() <= 2, "{:?}", d.picks);
            // PCT with depth 1 (no change point): the same CPU wins every time.
            let mut p = Explorer::new(Kind::Pct, 1, run, 3, 500, 1);
            let c = drive(&mut p, &sizes);
            assert!(c.iter().all(|&x| x == c[0]));
        }
    }
}
