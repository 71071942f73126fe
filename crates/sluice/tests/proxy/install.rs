//! What installing sluice brings: `--version` with the commit, shell completions and a
//! man page made from the CLI, a systemd unit that verifies, and readiness told to
//! systemd over $NOTIFY_SOCKET.

use super::harness::*;
use std::os::unix::net::UnixDatagram;
use std::process::Command;
use std::time::Duration;

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.env("SLUICE_LOG", "warn");
    c
}

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let version = stdout(sluice().arg("--version"));
    assert!(
        version.starts_with(&format!("sluice {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let head = Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(["rev-parse", "--short=12", "HEAD"])
        .output();
    match head {
        Ok(out) if out.status.success() => {
            let head = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert!(
                version.contains(&format!("(commit {head})")),
                "{version} is not of {head}"
            );
        }
        _ => eprintln!("no git here: the version cannot be checked against a commit"),
    }
}

#[test]
fn completions_are_valid_shell_and_know_every_subcommand() {
    let script = stdout(sluice().args(["completions", "bash"]));
    let dir = TempDir::new("completions");
    let path = dir.file("sluice.bash", &script);
    let checked = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    for sub in ["serve", "check", "reload", "import", "bench", "lab"] {
        assert!(script.contains(sub), "no {sub} in the bash completions");
    }
    assert!(stdout(sluice().args(["completions", "zsh"])).contains("#compdef sluice"));
}

#[test]
fn the_man_page_renders_with_groff() {
    let page = stdout(sluice().arg("man"));
    assert!(page.contains(".TH sluice"), "{page}");
    let dir = TempDir::new("man");
    let path = dir.file("sluice.1", &page);
    let rendered = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww"])
        .arg(&path)
        .output();
    let Ok(rendered) = rendered else {
        panic!("groff is needed (scripts/test.sh installs groff-base)");
    };
    let text = String::from_utf8_lossy(&rendered.stdout);
    let warnings = String::from_utf8_lossy(&rendered.stderr);
    assert!(
        rendered.status.success() && warnings.trim().is_empty(),
        "{warnings}"
    );
    for sub in ["serve", "import", "completions"] {
        assert!(text.contains(sub), "no {sub} in the man page:\n{text}");
    }
}

#[test]
fn the_systemd_unit_verifies() {
    let Ok(found) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("no systemd-analyze on this machine: the unit is not verified");
        return;
    };
    assert!(found.status.success());
    let unit = std::fs::read_to_string(repo().join("dist/sluice.service")).unwrap();
    // The unit's binary path, pointed at this build (verify checks it is executable).
    let unit = unit.replace("/usr/local/bin/sluice", env!("CARGO_BIN_EXE_sluice"));
    let dir = TempDir::new("unit");
    let path = dir.file("sluice.service", &unit);
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    // Without a running systemd it may note that; nothing about the unit itself.
    let about_unit: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("sluice.service"))
        .collect();
    assert!(out.status.success() && about_unit.is_empty(), "{said}");
    for key in [
        "Type=notify",
        "ExecReload=",
        "sluice reload -c",
        "User=sluice",
        "LimitNOFILE=",
    ] {
        assert!(unit.contains(key), "no {key}");
    }
}

#[test]
fn serve_tells_systemd_it_is_ready_reloading_and_stopping() {
    let dir = TempDir::new("notify");
    let socket = dir.0.join("notify.sock");
    let listener = UnixDatagram::bind(&socket).unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let config = dir.file(
        "s.toml",
        "[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nreturn = 204\n",
    );
    let mut child = sluice()
        .args(["serve", "-c"])
        .arg(&config)
        .env("NOTIFY_SOCKET", &socket)
        .env("TMPDIR", &dir.0)
        .spawn()
        .unwrap();
    let mut buf = [0u8; 4096];
    let mut next = || {
        let n = listener.recv(&mut buf).expect("a notification within 20 s");
        String::from_utf8_lossy(&buf[..n]).to_string()
    };
    let ready = next();
    assert!(
        ready.contains("READY=1") && ready.contains("STATUS=serving"),
        "{ready}"
    );
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
    let reloading = next();
    assert!(
        reloading.contains("RELOADING=1") && reloading.contains("MONOTONIC_USEC="),
        "{reloading}"
    );
    let again = next();
    assert!(
        again.contains("READY=1") && again.contains("reloaded"),
        "{again}"
    );
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(next().contains("STOPPING=1"));
    assert!(child.wait().unwrap().success());
}
