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

/// `page` rendered by groff as plain text; fails on any warning of groff's.
fn render(page: &std::path::Path) -> String {
    let rendered = Command::new("groff")
        // Long lines and no hyphenation: a phrase is found whole on its line.
        .args(["-man", "-Tutf8", "-ww", "-rLL=250n", "-rHY=0"])
        .arg(page)
        .output();
    let Ok(rendered) = rendered else {
        panic!("groff is needed (scripts/test.sh installs groff-base)");
    };
    let warnings = String::from_utf8_lossy(&rendered.stderr);
    assert!(
        rendered.status.success() && warnings.trim().is_empty(),
        "{}: {warnings}",
        page.display()
    );
    // Bold is overstruck (F backspace F): read it as plain text.
    let mut plain = String::new();
    for c in String::from_utf8_lossy(&rendered.stdout).chars() {
        match c {
            '\u{8}' => {
                plain.pop();
            }
            c => plain.push(c),
        }
    }
    plain
}

/// The lines of `heading`'s section in a rendered page: up to the next heading (a
/// line that is not indented).
fn section(page: &str, heading: &str) -> Option<String> {
    let mut lines = page.lines().skip_while(|l| *l != heading);
    lines.next()?;
    let body = lines.take_while(|l| l.is_empty() || l.starts_with(' '));
    Some(body.collect::<Vec<_>>().join("\n"))
}

#[test]
#[ignore = "needs groff"]
fn the_man_page_renders_with_groff() {
    let page = stdout(sluice().arg("man"));
    assert!(page.contains(".TH sluice"), "{page}");
    let dir = TempDir::new("man");
    let plain = render(&dir.file("sluice.1", &page));
    for sub in ["serve", "import", "completions"] {
        assert!(plain.contains(sub), "no {sub} in the man page:\n{plain}");
    }
    for heading in ["FILES", "ENVIRONMENT", "EXIT STATUS", "SIGNALS"] {
        assert!(
            section(&plain, heading).is_some(),
            "no {heading} in the man page:\n{plain}"
        );
    }
    // Their fonts are roff's escapes, rendered as text.
    assert!(
        plain.contains("serve, reload and status read -c FILE"),
        "{plain}"
    );
}

/// Every subcommand's own page, as `man sluice-serve` finds it: each renders and says
/// how it exits; serve's, check's and bench's have what applies to them of FILES,
/// ENVIRONMENT, EXIT STATUS and SIGNALS (with the codes their code returns).
#[test]
#[ignore = "needs groff"]
fn each_subcommand_has_a_page_with_its_exit_status() {
    let dir = TempDir::new("man-pages");
    let out = sluice()
        .args(["man", "--dir"])
        .arg(&dir.0)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = |sub: &str| render(&dir.0.join(format!("sluice-{sub}.1")));
    // An exit code is an entry's term: the first word of its line.
    let codes = |text: &str| -> Vec<String> {
        let exits = section(text, "EXIT STATUS").unwrap_or_default();
        let terms = exits.lines().filter_map(|l| l.split_whitespace().next());
        terms
            .filter(|t| t.parse::<u8>().is_ok())
            .map(String::from)
            .collect()
    };
    for sub in [
        "serve", "check", "reload", "status", "bench", "lab", "import", "plan",
    ] {
        let text = page(sub);
        assert!(codes(&text).contains(&"0".into()), "{sub}:\n{text}");
    }
    let has = |text: &str, heading: &str, what: &[&str]| {
        let Some(s) = section(text, heading) else {
            panic!("no {heading}:\n{text}");
        };
        for w in what {
            assert!(s.contains(w), "no {w} in {heading}:\n{s}");
        }
    };
    let serve = page("serve");
    has(&serve, "FILES", &["sluice.toml", "sluice-*.pid"]);
    has(
        &serve,
        "ENVIRONMENT",
        &["SLUICE_LOG", "NOTIFY_SOCKET", "TMPDIR"],
    );
    has(&serve, "SIGNALS", &["SIGHUP", "SIGTERM, SIGINT", "SIGUSR1"]);
    assert_eq!(codes(&serve), ["0", "1", "2", "130"], "{serve}");
    let check = page("check");
    has(&check, "FILES", &["sluice.toml"]);
    has(&check, "EXIT STATUS", &["no file was named"]);
    assert_eq!(codes(&check), ["0", "2"], "{check}");
    assert!(section(&check, "SIGNALS").is_none(), "{check}");
    let bench = page("bench");
    has(&bench, "EXIT STATUS", &["--fail-if threshold was crossed"]);
    has(&bench, "SIGNALS", &["SIGTERM, SIGINT"]);
    assert_eq!(codes(&bench), ["0", "1", "2", "3", "130"], "{bench}");
}

#[test]
#[ignore = "needs systemd-analyze"]
fn the_systemd_unit_verifies() {
    let systemd_analyze = crate::support::tool("systemd-analyze");
    let unit = std::fs::read_to_string(repo().join("dist/sluice.service")).unwrap();
    // The unit's binary path, pointed at this build (verify checks it is executable).
    let unit = unit.replace("/usr/local/bin/sluice", env!("CARGO_BIN_EXE_sluice"));
    let dir = TempDir::new("unit");
    let path = dir.file("sluice.service", &unit);
    let out = Command::new(systemd_analyze)
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

/// Whether `path` is in a build context that `.dockerignore` rules shape: the last rule
/// that matches the path or one of its parents decides (`!` lets it in). Only the
/// rule forms dist's file uses: whole path segments, `*` for any one segment.
fn in_context(rules: &str, path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let matches = |pattern: &str| {
        let segments: Vec<&str> = pattern.split('/').collect();
        segments.len() <= parts.len()
            && segments
                .iter()
                .zip(&parts)
                .all(|(s, p)| *s == "*" || s == p)
    };
    let mut included = true;
    for rule in rules.lines().map(str::trim) {
        if rule.is_empty() || rule.starts_with('#') {
            continue;
        }
        let (keep, pattern) = match rule.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, rule),
        };
        if matches(pattern) {
            included = keep;
        }
    }
    included
}

/// Docker cannot run here: what can be checked without it is that every file the
/// Dockerfile's build stage copies exists and is in the build context its
/// `.dockerignore` leaves (a `COPY vendor vendor` outside it failed the build).
#[test]
fn the_container_build_context_holds_everything_the_dockerfile_copies() {
    let dockerfile = std::fs::read_to_string(repo().join("dist/Dockerfile")).unwrap();
    let rules = std::fs::read_to_string(repo().join("dist/Dockerfile.dockerignore")).unwrap();
    let mut sources = Vec::new();
    for line in dockerfile.lines() {
        let Some(args) = line.strip_prefix("COPY ") else {
            continue;
        };
        let words: Vec<&str> = args.split_whitespace().collect();
        if words.iter().any(|w| w.starts_with("--from")) {
            continue;
        }
        sources.extend(words[..words.len() - 1].iter().map(|s| s.to_string()));
    }
    assert!(sources.len() >= 4, "COPY sources read: {sources:?}");
    for source in &sources {
        assert!(
            repo().join(source).exists(),
            "{source} is not in the repository"
        );
        assert!(
            in_context(&rules, source),
            "{source} is copied but left out of the build context"
        );
    }
    assert!(!in_context(&rules, "target/release/sluice"));
    assert!(!in_context(&rules, "crates/sluice/target/x"));
}

#[test]
#[ignore = "needs python3 with PyYAML"]
fn the_kubernetes_manifest_runs_sluice_on_its_config() {
    let path = repo().join("dist/kubernetes.yaml");
    let python = crate::support::python();
    let out = Command::new(&python)
        .args(["-c", "import json, sys, yaml\njson.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{python} runs (SLUICE_PYTHON, with PyYAML: scripts/test.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = |kind: &str, name: &str| {
        docs.as_array()
            .unwrap()
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
            .clone()
    };
    let toml = find("ConfigMap", "sluice")["data"]["sluice.toml"]
        .as_str()
        .unwrap()
        .to_string();
    let config = sluice_config::parse("sluice.toml", &toml).unwrap_or_else(|e| panic!("{e}"));
    let port = config.listeners[0].bind.port();
    let pod = &find("Deployment", "sluice")["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(
        container["args"],
        serde_json::json!(["serve", "-c", "/etc/sluice/sluice.toml"])
    );
    assert_eq!(container["ports"][0]["containerPort"], port);
    assert_eq!(container["volumeMounts"][0]["mountPath"], "/etc/sluice");
    assert_eq!(pod["volumes"][0]["configMap"]["name"], "sluice");
    let service = find("Service", "sluice");
    assert_eq!(
        service["spec"]["selector"],
        find("Deployment", "sluice")["spec"]["selector"]["matchLabels"]
    );
    // The upstream follows the headless Service of the app in DNS, on its port.
    let headless = find("Service", "app-headless");
    assert_eq!(headless["spec"]["clusterIP"], "None");
    let followed = &config.upstreams[0].discover[0].query;
    let sluice_config::DnsQuery::Address { host, port } = followed else {
        panic!("not an address lookup: {followed:?}");
    };
    assert_eq!(host, "app-headless.default.svc.cluster.local");
    assert_eq!(headless["spec"]["ports"][0]["port"], *port);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sluice_processes_with_one_config_send_each_key_to_the_same_server() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    let list: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    let config = format!(
        "workers = 2\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"chat\"\n[upstream.chat]\nbalance = \"hash\"\nhash_key = \"$arg_room\"\nservers = [{}]\n",
        list.join(", ")
    );
    let one = SluiceProcess::serve("one.toml", &config, "warn").await;
    let two = SluiceProcess::serve("two.toml", &config, "warn").await;
    let mut used = std::collections::HashSet::new();
    for room in 0..200 {
        let path = format!("/chat?room={room}");
        let (a, b) = (get(one.addr(), &path).await, get(two.addr(), &path).await);
        let (a, b) = (
            a.header("x-backend").unwrap().to_string(),
            b.header("x-backend").unwrap().to_string(),
        );
        assert_eq!(a, b, "room {room}: the two processes disagree");
        used.insert(a);
    }
    assert_eq!(used.len(), 3, "200 rooms use all three servers");
}

#[test]
fn the_certbot_deploy_hook_copies_a_lineage_for_the_sluice_group() {
    // certbot's layout: a live/NAME directory whose key only root reads.
    let dir = super::harness::TempDir::new("certbot-hook");
    let lineage = dir.0.join("live/example.com");
    std::fs::create_dir_all(&lineage).unwrap();
    std::fs::write(lineage.join("fullchain.pem"), "CHAIN\n").unwrap();
    std::fs::write(lineage.join("privkey.pem"), "KEY\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        lineage.join("privkey.pem"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let group = String::from_utf8(Command::new("id").arg("-gn").output().unwrap().stdout).unwrap();
    let out = Command::new(repo().join("dist/certbot-deploy-hook"))
        .env("RENEWED_LINEAGE", &lineage)
        .env("SLUICE_TLS_DIR", dir.0.join("tls"))
        .env("SLUICE_GROUP", group.trim())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let copies = dir.0.join("tls/example.com");
    let mode = |f: &str| {
        std::fs::metadata(copies.join(f))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(
        std::fs::read_to_string(copies.join("privkey.pem")).unwrap(),
        "KEY\n"
    );
    assert_eq!(
        std::fs::read_to_string(copies.join("fullchain.pem")).unwrap(),
        "CHAIN\n"
    );
    assert_eq!(
        (mode("privkey.pem"), mode("fullchain.pem"), mode("")),
        (0o640, 0o644, 0o750)
    );
    // No temporary file left beside them.
    assert_eq!(std::fs::read_dir(&copies).unwrap().count(), 2);
}
