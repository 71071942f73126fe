//! The user's own commands (`--enlarge`, `--restore`: kubectl, Ansible, a script), run
//! with `sh -c` as they were written, their failure said in their own words.

use std::process::Command;

/// Runs `cmd` with `sh -c`; its failure, with what it said.
pub fn shell(cmd: &str) -> Result<(), String> {
    let out = Command::new("sh")
        .args(["-c", cmd])
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(format!("{cmd}: {}: {}", out.status, said.trim()))
}
