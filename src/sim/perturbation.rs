//! Perturbations of a run: what the interleaving explorer (`crate::explore`) is free to change
//! (the choices that differ from FIFO at same-time actions, and re-seeded jitter streams),
//! their replay ([`ReplayPicks`]), and replay tokens: a perturbation as one short printable
//! word, `schedsim run ... --replay TOKEN`.
//!
//! Token layout: the version prefix `x1.`, then base64url (no padding) of: the number of picks,
//! each pick as (choice-point delta from the previous pick, candidate index), the number of
//! jitter entries, each as (CPU delta from the previous entry, salt), every number an unsigned
//! LEB128 varint; then two check bytes (FNV-1a of the body, folded to 16 bits) so that a
//! mistyped token is an error rather than another run.

use super::queue::ChoiceStrategy;

/// What a run changes from the unperturbed one: the choices that differ from FIFO and the
/// re-seeded jitter streams. Both lists are sorted (by choice point, by CPU).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Perturbation {
    /// `(choice point, candidate index)`, index > 0.
    pub picks: Vec<(u64, u32)>,
    /// `(CPU, salt)`: that CPU's jitter stream is re-seeded with the salt after boot.
    pub jitter: Vec<(u32, u32)>,
}

impl Perturbation {
    /// The replay token (`x1.` + base64url).
    pub fn token(&self) -> String {
        encode(self)
    }

    /// Read a replay token (a clear error for a bad one).
    pub fn parse(t: &str) -> Result<Perturbation, String> {
        decode(t)
    }

    pub fn is_empty(&self) -> bool {
        self.picks.is_empty() && self.jitter.is_empty()
    }

    /// Number of perturbed items (choices plus salts).
    pub fn len(&self) -> usize {
        self.picks.len() + self.jitter.len()
    }
}

/// The replay of recorded choices: `picks[i].1` at choice point `picks[i].0`, FIFO elsewhere.
#[derive(Debug, Clone)]
pub struct ReplayPicks {
    picks: Vec<(u64, u32)>,
    next: usize,
}

impl ReplayPicks {
    pub fn new(picks: Vec<(u64, u32)>) -> ReplayPicks {
        ReplayPicks { picks, next: 0 }
    }

    /// The candidate to take at choice point `point` among `n`.
    pub fn pick(&mut self, point: u64, n: usize) -> usize {
        while self.next < self.picks.len() && self.picks[self.next].0 < point {
            self.next += 1;
        }
        match self.picks.get(self.next) {
            Some(&(p, c)) if p == point => c as usize % n,
            _ => 0,
        }
    }
}

impl ChoiceStrategy for ReplayPicks {
    fn choose(&mut self, point: u64, owners: &[u32]) -> usize {
        self.pick(point, owners.len())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn box_clone(&self) -> Box<dyn ChoiceStrategy> {
        Box::new(self.clone())
    }
}

/// The version prefix of tokens this build writes and reads.
pub const PREFIX: &str = "x1.";

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn check16(body: &[u8]) -> [u8; 2] {
    let mut h: u32 = 0x811c_9dc5;
    for &b in body {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    let f = (h ^ (h >> 16)) as u16;
    f.to_le_bytes()
}

/// The token of `p` (picks and jitter entries must be sorted, as [`Perturbation`] keeps them).
pub fn encode(p: &Perturbation) -> String {
    let mut body = Vec::new();
    put_varint(&mut body, p.picks.len() as u64);
    let mut last = 0u64;
    for &(point, pick) in &p.picks {
        put_varint(&mut body, point - last);
        put_varint(&mut body, pick as u64);
        last = point;
    }
    put_varint(&mut body, p.jitter.len() as u64);
    let mut last = 0u32;
    for &(cpu, salt) in &p.jitter {
        put_varint(&mut body, (cpu - last) as u64);
        put_varint(&mut body, salt as u64);
        last = cpu;
    }
    let c = check16(&body);
    body.extend_from_slice(&c);
    let mut s = String::from(PREFIX);
    for chunk in body.chunks(3) {
        let n = chunk.len();
        let v =
            (chunk[0] as u32) << 16 | (*chunk.get(1).unwrap_or(&0) as u32) << 8 | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..=n {
            s.push(B64[(v >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    s
}

/// Read a token. Errors say what is wrong with it (prefix, alphabet, length, check bytes,
/// order), naming the `--replay` flag.
pub fn decode(token: &str) -> Result<Perturbation, String> {
    let bad = |why: &str| format!("--replay '{token}': {why}");
    let Some(rest) = token.strip_prefix(PREFIX) else {
        return Err(if token.starts_with('x') && token.contains('.') {
            bad(&format!("token version not supported by this build (expected the prefix `{PREFIX}`)"))
        } else {
            bad(&format!(
                "not a replay token (expected `{PREFIX}` followed by base64url, as printed by `schedsim explore`)"
            ))
        });
    };
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut bytes = Vec::with_capacity(rest.len() * 3 / 4);
    for ch in rest.chars() {
        let Some(v) = B64.iter().position(|&b| b as char == ch) else {
            return Err(bad(&format!("character '{}' is not base64url (A-Z a-z 0-9 - _)", ch.escape_default())));
        };
        bits = bits << 6 | v as u32;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            bytes.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    if rest.len() % 4 == 1 || bytes.len() < 3 {
        return Err(bad("token is truncated"));
    }
    if bits != 0 {
        return Err(bad("the token was altered (its last character is not what an encoder writes)"));
    }
    let (body, c) = bytes.split_at(bytes.len() - 2);
    if check16(body) != c {
        return Err(bad("check bytes do not match (the token was altered or cut)"));
    }
    let mut at = 0usize;
    let mut next = || -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = body.get(at) else { return Err(bad("token is truncated")) };
            at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("a number in the token is too long"))
    };
    let mut p = Perturbation::default();
    let n = next()?;
    let mut point = 0u64;
    for i in 0..n {
        let d = next()?;
        if i > 0 && d == 0 {
            return Err(bad("choice points are not in increasing order"));
        }
        point = point.checked_add(d).ok_or_else(|| bad("choice point out of range"))?;
        let pick = u32::try_from(next()?).map_err(|_| bad("candidate index out of range"))?;
        if pick == 0 {
            return Err(bad("a recorded choice picks the FIFO candidate (index 0), which is never recorded"));
        }
        p.picks.push((point, pick));
    }
    let n = next()?;
    let mut cpu = 0u32;
    for i in 0..n {
        let d = u32::try_from(next()?).map_err(|_| bad("CPU out of range"))?;
        if i > 0 && d == 0 {
            return Err(bad("jitter CPUs are not in increasing order"));
        }
        cpu = cpu.checked_add(d).ok_or_else(|| bad("CPU out of range"))?;
        let salt = u32::try_from(next()?).map_err(|_| bad("jitter salt out of range"))?;
        p.jitter.push((cpu, salt));
    }
    if at != body.len() {
        return Err(bad("trailing bytes after the perturbation"));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let cases = [
            Perturbation::default(),
            Perturbation { picks: vec![(0, 1)], jitter: vec![] },
            Perturbation { picks: vec![(3, 2), (4, 1), (1 << 40, 7)], jitter: vec![(0, 5), (31, u32::MAX)] },
        ];
        for p in cases {
            let t = encode(&p);
            assert!(t.starts_with(PREFIX));
            assert!(t[PREFIX.len()..].bytes().all(|b| B64.contains(&b)), "{t}");
            assert_eq!(decode(&t).unwrap(), p, "{t}");
        }
    }

    #[test]
    fn bad_tokens_are_clear_errors() {
        let good = encode(&Perturbation { picks: vec![(10, 1), (12, 3)], jitter: vec![(1, 99)] });
        let e = decode("hello").unwrap_err();
        assert!(e.contains("not a replay token"), "{e}");
        let e = decode(&good.replacen("x1.", "x9.", 1)).unwrap_err();
        assert!(e.contains("version not supported"), "{e}");
        let e = decode(&format!("{good}!")).unwrap_err();
        assert!(e.contains("not base64url"), "{e}");
        let e = decode(&good[..good.len() - 2]).unwrap_err();
        assert!(e.contains("truncated") || e.contains("check bytes"), "{e}");
        // One character changed: the check bytes catch it.
        let mut t: Vec<char> = good.chars().collect();
        let i = PREFIX.len() + 1;
        t[i] = if t[i] == 'A' { 'B' } else { 'A' };
        let e = decode(&t.into_iter().collect::<String>()).unwrap_err();
        assert!(e.contains("check bytes") || e.contains("order") || e.contains("range"), "{e}");
        assert!(e.starts_with("--replay '"), "{e}");
    }
}
