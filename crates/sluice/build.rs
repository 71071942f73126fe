//! Puts the commit sluice is built from into `sluice --version`: `$SLUICE_COMMIT` if set
//! (a build without the repository, such as a container's), else git's HEAD; nothing
//! when neither is known.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SLUICE_COMMIT");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if let Some((own, common)) = git_dirs(&root) {
        watch_head(&own, &common);
    }
    let commit = std::env::var("SLUICE_COMMIT")
        .ok()
        .or_else(|| git_head(&root));
    let version = match commit {
        Some(c) => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
        None => env!("CARGO_PKG_VERSION").to_string(),
    };
    println!("cargo:rustc-env=SLUICE_VERSION={version}");
}

/// The checkout's git directory (its HEAD) and the common one (its branches): both
/// `.git` in a clone; in a worktree (`.git` a file, `gitdir: DIR`) DIR and the
/// repository's, named by DIR's `commondir`.
fn git_dirs(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot = root.join(".git");
    if dot.is_dir() {
        return Some((dot.clone(), dot));
    }
    let text = std::fs::read_to_string(&dot).ok()?;
    let own = root.join(text.strip_prefix("gitdir:")?.trim());
    let common = match std::fs::read_to_string(own.join("commondir")) {
        Ok(dir) => own.join(dir.trim()),
        Err(_) => own.clone(),
    };
    Some((own, common))
}

/// Reruns this script when HEAD moves: HEAD itself, its branch's file (a commit rewrites
/// it; while the branch is only packed, the branches' directory, where a commit creates
/// it), and packed-refs. Not every branch's: a commit on another branch of the
/// repository (another worktree's) leaves this build alone.
fn watch_head(own: &Path, common: &Path) {
    let head = own.join("HEAD");
    let Ok(text) = std::fs::read_to_string(&head) else {
        return;
    };
    let branch = text.strip_prefix("ref: ").map(|r| common.join(r.trim()));
    let refs = branch
        .filter(|b| b.is_file())
        .unwrap_or_else(|| common.join("refs/heads"));
    for path in [head, refs, common.join("packed-refs")] {
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

fn git_head(root: &Path) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
