//! Reading users' input files (scenario, machine, background, rt-app, grid and trace files),
//! each bounded by `crate::limits` so that a huge or endless file (a device, a pipe) is an error
//! naming the file rather than an unbounded read.

/// The text of a user's input file (`what` names it in errors), at most `max` bytes after
/// decoding `gz` (gunzip) when it is set: a larger or endless file (a device, a pipe) is an
/// error naming the file and the limit rather than an unbounded read.
pub fn read_input(path: &std::path::Path, what: &str, max: u64, gz: bool) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    let mut r: Box<dyn Read> = if gz { Box::new(flate2::read::GzDecoder::new(f)) } else { Box::new(f) };
    let mut bytes = Vec::new();
    (&mut r)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "{what} {} is larger than {} (schedsim reads at most that much)",
            path.display(),
            crate::limits::bytes_text(max)
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("{what} {}: not UTF-8 text ({e})", path.display()))
}

/// Read a scenario, machine, background, rt-app or grid file: [`read_input`] with
/// [`MAX_INPUT_FILE_BYTES`](crate::limits::MAX_INPUT_FILE_BYTES).
pub fn read_input_file(path: impl AsRef<std::path::Path>, what: &str) -> Result<String, String> {
    read_input(path.as_ref(), what, crate::limits::MAX_INPUT_FILE_BYTES, false)
}
