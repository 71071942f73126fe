//! examples/bench/: the Kubernetes manifest is the YAML it says it is, and its command
//! lines work with the real `sluice`. Five generators run as the kubelet would start them
//! (the manifest's start-barrier script in /bin/sh, its args with `$(VAR)` expanded, the
//! results volume a directory), against a lab backend on 127.0.0.1 for 200 ms at a tenth
//! of the rate instead of the service for 60 s; then the merge Job's command line merges
//! their files. And the manifest's own generator command line, only the target changed,
//! runs until stopped with SIGTERM (as a failed Job stops its pods), and keeps its results.
//!
//! The YAML is read by Python's PyYAML (no YAML crate in the workspace).

mod support;

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::backend;

const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/bench/k8s-indexed-job.yaml"
);

/// The manifest's documents, as JSON.
fn manifest() -> Vec<Value> {
    let python = support::python();
    let out = Command::new(&python)
        .args([
            "-c",
            "import json, sys, yaml\n\
             json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)",
            MANIFEST,
        ])
        .output()
        .unwrap_or_else(|e| panic!("{python} runs: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'yaml'"),
        "this test reads the YAML with PyYAML, which {python} lacks: scripts/test.sh \
         installs it into target/test-venv (then SLUICE_PYTHON=target/test-venv/bin/python), \
         or apt-get install python3-yaml"
    );
    assert!(
        out.status.success(),
        "{MANIFEST} is not valid YAML: {stderr}"
    );
    let docs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in {MANIFEST}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap_or_else(|| panic!("not a string: {s}"))
                .into()
        })
        .collect()
}

/// The value after `flag` in a command line.
fn after<'a>(args: &'a [String], flags: &[&str]) -> Option<&'a str> {
    let i = args.iter().position(|a| flags.contains(&a.as_str()))?;
    args.get(i + 1).map(String::as_str)
}

/// What the kubelet makes of `$(VAR)` in a container's command and args: the variable's
/// value when the container declares it, `$$` an escaped `$`, anything else unchanged.
fn kubelet_expand(text: &str, env: &[(&str, String)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some((name, r)) = after.strip_prefix('(').and_then(|r| r.split_once(')')) {
            match env.iter().find(|(n, _)| *n == name) {
                Some((_, value)) => out.push_str(value),
                None => out.push_str(&format!("$({name})")),
            }
            rest = r;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `--rate` steps divided by ten: 2000,4000 -> 200,400.
fn tenth(rates: &str) -> String {
    rates
        .split(',')
        .map(|r| (r.parse::<f64>().unwrap() / 10.0).to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A directory of the test's own, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(label: &str) -> Dir {
        let d = std::env::temp_dir().join(format!(
            "sluice-bench-examples-{label}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The generator Job's one container, as the kubelet would start pod `index`: its
/// command and args expanded, the results volume mounted at `results`, `START_AT`
/// substituted (as the sed in examples/bench/README.md does), and `sluice` on the PATH.
fn generator(
    docs: &[Value],
    index: usize,
    start_at: &str,
    results: &Path,
    edit_args: impl Fn(Vec<String>) -> Vec<String>,
) -> Command {
    let job = find(docs, "Job", "sluice-bench-gen");
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let env = [
        ("JOB_COMPLETION_INDEX", index.to_string()),
        ("START_AT", start_at.to_string()),
    ];
    let mounted = |s: String| s.replace(mount, results.to_str().unwrap());
    let command: Vec<String> = strings(&container["command"])
        .iter()
        .map(|c| mounted(kubelet_expand(c, &env)))
        .collect();
    let args: Vec<String> = strings(&container["args"])
        .iter()
        .map(|a| mounted(kubelet_expand(a, &env)))
        .collect();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_sluice")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new(&command[0]);
    c.args(&command[1..])
        .args(edit_args(args))
        .envs(env)
        .env("PATH", path)
        .env("SLUICE_LOG", "warn");
    c
}

#[test]
#[ignore = "needs python3 with PyYAML"]
fn the_manifest_has_the_structure_its_readme_describes() {
    let docs = manifest();
    assert_eq!(docs.len(), 3, "a PVC and two Jobs");

    let pvc = find(&docs, "PersistentVolumeClaim", "sluice-bench-results");
    assert_eq!(pvc["apiVersion"], "v1");
    assert_eq!(strings(&pvc["spec"]["accessModes"]), ["ReadWriteMany"]);

    let generator = find(&docs, "Job", "sluice-bench-gen");
    let spec = &generator["spec"];
    assert_eq!(generator["apiVersion"], "batch/v1");
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 5);
    assert_eq!(
        spec["parallelism"], spec["completions"],
        "all generators at once"
    );
    assert_eq!(spec["backoffLimit"], 0, "a generator never reruns");
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "sluice:latest");
    let env = c["env"].as_array().unwrap();
    let var = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in the generator's env"))
    };
    assert_eq!(
        var("JOB_COMPLETION_INDEX")["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert_eq!(
        var("START_AT")["value"],
        "__START_AT__",
        "what sed replaces"
    );
    let command = strings(&c["command"]);
    assert_eq!(command[..2], ["/bin/sh", "-c"]);
    assert!(command[2].contains("exec sluice \"$@\""), "{}", command[2]);
    let args = strings(&c["args"]);
    assert_eq!(args[0], "bench");
    assert_eq!(
        args.iter().filter(|a| a.starts_with("http://")).count(),
        1,
        "one target URL: {args:?}"
    );
    assert_eq!(
        after(&args, &["--json"]),
        Some("/results/gen-$(JOB_COMPLETION_INDEX).json")
    );
    assert!(after(&args, &["-d", "--duration"]).is_some());

    // Every pod mounts the one claim at /results.
    let merge = find(&docs, "Job", "sluice-bench-merge");
    assert_eq!(
        merge["spec"]["suspend"], true,
        "the merge waits to be unsuspended"
    );
    for job in [generator, merge] {
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
            pvc["metadata"]["name"]
        );
        let c = &pod["containers"][0];
        assert_eq!(c["volumeMounts"][0]["name"], pod["volumes"][0]["name"]);
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/results");
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    }

    // The merge names every generator's file, and only those.
    let n = spec["completions"].as_u64().unwrap();
    let mut want: Vec<String> = vec!["bench".into(), "merge".into()];
    want.extend((0..n).map(|i| format!("/results/gen-{i}.json")));
    want.extend(["--json".into(), "/results/merged.json".into()]);
    assert_eq!(
        strings(&merge["spec"]["template"]["spec"]["containers"][0]["args"]),
        want
    );
}

#[test]
#[ignore = "needs python3 with PyYAML"]
fn five_generators_start_together_and_their_results_merge() {
    let docs = manifest();
    let addr = backend();
    let dir = Dir::new("run");
    let completions = find(&docs, "Job", "sluice-bench-gen")["spec"]["completions"]
        .as_u64()
        .unwrap() as usize;
    // START_AT in the next second: the barrier really waits (up to a second).
    let start_at = now_s() + 1;
    let pods: Vec<_> = (0..completions)
        .map(|i| {
            generator(&docs, i, &start_at.to_string(), &dir.0, |mut args| {
                let url = args.iter().position(|a| a.starts_with("http://")).unwrap();
                args[url] = format!("http://{addr}/");
                let d = args
                    .iter()
                    .position(|a| a == "-d" || a == "--duration")
                    .unwrap();
                args[d + 1] = "200ms".into();
                // A tenth of the manifest's rate: enough for a debug build on a busy
                // machine, and every generator still sends the same as the others.
                if let Some(r) = args.iter().position(|a| a == "--rate") {
                    args[r + 1] = tenth(&args[r + 1]);
                }
                args
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for (i, pod) in pods.into_iter().enumerate() {
        let out = pod.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "generator {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let mut starts = Vec::new();
    let mut samples = 0;
    for i in 0..completions {
        let file = dir.0.join(format!("gen-{i}.json"));
        let r: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let step = &r["steps"][0];
        assert_eq!(step["errors"], 0, "generator {i}: {step:#}");
        starts.push(step["started_unix_ms"].as_u64().unwrap());
        samples += step["samples"].as_u64().unwrap();
    }
    let (first, last) = (*starts.iter().min().unwrap(), *starts.iter().max().unwrap());
    assert!(first >= start_at * 1000, "{starts:?} before {start_at}");
    assert!(
        last - first < 500,
        "the generators started apart: {starts:?}"
    );

    // The merge Job's command line (the image's entrypoint is `sluice`).
    let merge = find(&docs, "Job", "sluice-bench-merge");
    let args: Vec<String> = strings(&merge["spec"]["template"]["spec"]["containers"][0]["args"])
        .iter()
        .map(|a| a.replace("/results", dir.0.to_str().unwrap()))
        .collect();
    let out: Output = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(&args)
        .env("SLUICE_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("samples"), "{stdout}");
    let merged: Value =
        serde_json::from_slice(&std::fs::read(dir.0.join("merged.json")).unwrap()).unwrap();
    // Each generator sends total / 5: the merged steps carry the total.
    let per_generator = strings(
        &find(&docs, "Job", "sluice-bench-gen")["spec"]["template"]["spec"]["containers"][0]
            ["args"],
    );
    let (key, values) = match after(&per_generator, &["--rate"]) {
        Some(r) => ("rate", tenth(r)),
        None => ("users", after(&per_generator, &["--users"]).unwrap().into()),
    };
    let steps = merged["steps"].as_array().unwrap();
    let values: Vec<f64> = values.split(',').map(|v| v.parse().unwrap()).collect();
    assert_eq!(steps.len(), values.len());
    for (step, v) in steps.iter().zip(&values) {
        assert_eq!(step[key].as_f64(), Some(v * completions as f64), "{key}");
    }
    assert_eq!(steps[0]["samples"].as_u64(), Some(samples));
    assert_eq!(steps[0]["started_unix_ms"].as_u64(), Some(first));
}

/// Whether process `pid` is `sluice` (the barrier's `exec` done) and catches SIGTERM.
fn sluice_catching_sigterm(pid: u32) -> bool {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0);
    exe.is_some_and(|e| e.file_name() == Some("sluice".as_ref())) && caught & (1 << (15 - 1)) != 0
}

#[test]
#[ignore = "needs python3 with PyYAML"]
fn the_generators_own_command_line_runs_and_a_stopped_one_keeps_its_results() {
    // The manifest's args as they are (its duration and rate), but for the target:
    // stopped as a failing Job stops its other pods, with SIGTERM.
    let docs = manifest();
    let addr = backend();
    let dir = Dir::new("stop");
    let mut pod = generator(&docs, 3, &now_s().to_string(), &dir.0, |mut args| {
        let url = args.iter().position(|a| a.starts_with("http://")).unwrap();
        args[url] = format!("http://{addr}/");
        args
    })
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = pod.id();
    let ready = std::time::Instant::now();
    while !sluice_catching_sigterm(pid) {
        if let Some(status) = pod.try_wait().unwrap() {
            let mut stderr = String::new();
            let _ = pod.stderr.take().unwrap().read_to_string(&mut stderr);
            panic!("the generator exited ({status}): {stderr}");
        }
        if ready.elapsed() > Duration::from_secs(10) {
            let _ = pod.kill();
            panic!(
                "after 10 s, {pid} is not a sluice catching SIGTERM (does the barrier exec it?)"
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    let kill = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = pod.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let r: Value =
        serde_json::from_slice(&std::fs::read(dir.0.join("gen-3.json")).unwrap()).unwrap();
    assert_eq!(r["interrupted"], true);
    assert!(r["steps"][0]["samples"].as_u64().unwrap() > 0, "{r:#}");
}

#[test]
#[ignore = "needs python3 with PyYAML"]
fn the_start_barrier_refuses_a_missing_or_missed_start_and_an_unwritable_volume() {
    let docs = manifest();
    let dir = Dir::new("barrier");
    let run = |start_at: &str, results: &Path| {
        let out = generator(&docs, 0, start_at, results, |a| a)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Applied without the sed: the placeholder.
    let (code, stderr) = run("__START_AT__", &dir.0);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("START_AT is '__START_AT__'"), "{stderr}");
    // A pod scheduled a minute after the others started.
    let (code, stderr) = run(&(now_s() - 60).to_string(), &dir.0);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("refusing to run late"), "{stderr}");
    // The volume cannot be written: said before the run, not after it.
    let (code, stderr) = run(&now_s().to_string(), &dir.0.join("missing"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is not writable"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(&dir.0).unwrap().count(),
        0,
        "no probe left"
    );
}
