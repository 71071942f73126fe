//! `sluice man`: the pages clap makes from the command line (sluice(1) and one per
//! subcommand), each ending with what clap cannot know: the FILES, ENVIRONMENT, EXIT
//! STATUS and SIGNALS that apply to it. Each of those facts is one entry of [`ENTRIES`],
//! naming the pages it belongs on, and the exit codes are [`crate::exit`]'s constants.

use crate::exit::{BAD_INPUT, FAILURE, INTERRUPTED, THRESHOLD_CROSSED};
use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

/// `sluice man`: sluice(1) (roff) on stdout, or with `dir` every page (the command's
/// and one per subcommand, as `sluice-bench-merge.1`) written there.
pub fn man(cli: clap::Command, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let Some(dir) = dir else {
        let mut out = std::io::stdout();
        clap_mangen::Man::new(cli).render(&mut out)?;
        std::io::Write::write_all(&mut out, sections("sluice").as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(cli, dir)
        .with_context(|| format!("writing into {}", dir.display()))?;
    let listed = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for file in listed {
        let path = file?.path();
        let Some(page) = page_of(&path) else {
            continue;
        };
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&sections(&page));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The page a file clap wrote is: `sluice` for sluice.1, `bench-merge` for
/// sluice-bench-merge.1; `None` for any other file in the directory.
fn page_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?.strip_suffix(".1")?;
    match name {
        "sluice" => Some(name.to_string()),
        _ => name.strip_prefix("sluice-").map(str::to_string),
    }
}

/// The roff of `page`'s FILES, ENVIRONMENT, EXIT STATUS and SIGNALS, each section left
/// out when nothing in it applies to the page.
pub fn sections(page: &str) -> String {
    let mut out = String::new();
    for section in [
        Section::Files,
        Section::Environment,
        Section::ExitStatus,
        Section::Signals,
    ] {
        let on_page = ENTRIES
            .iter()
            .filter(|e| e.section == section && e.pages.contains(&page));
        for (i, e) in on_page.enumerate() {
            if i == 0 {
                out.push_str(&format!(".SH {}\n", section.title()));
            }
            out.push_str(&format!(".TP\n{}\n{}\n", e.term, e.text));
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Files,
    Environment,
    ExitStatus,
    Signals,
}

impl Section {
    fn title(self) -> &'static str {
        match self {
            Section::Files => "FILES",
            Section::Environment => "ENVIRONMENT",
            Section::ExitStatus => "EXIT STATUS",
            Section::Signals => "SIGNALS",
        }
    }
}

/// A file, variable, exit code or signal as a page lists it.
enum Term {
    Text(&'static str),
    Code(u8),
}

impl std::fmt::Display for Term {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Term::Text(t) => f.write_str(t),
            Term::Code(c) => write!(f, "{c}"),
        }
    }
}

/// One fact of a section: its term, what it means (roff), and the pages it is on
/// (`sluice` for sluice(1), else the subcommand as in [`page_of`]).
struct Entry {
    section: Section,
    term: Term,
    text: &'static str,
    pages: &'static [&'static str],
}

/// The pages that read a config file, and the commands that log (SLUICE_LOG).
const CONFIG: &[&str] = &["sluice", "serve", "reload", "status", "check"];
const LOGGING: &[&str] = &["sluice", "serve", "demo", "backend"];

/// Every fact of the four sections. A code's text on a subcommand's page says when
/// that command exits with it (found in its code); sluice(1) has the summary.
const ENTRIES: &[Entry] = &[
    // FILES
    Entry {
        section: Section::Files,
        term: Term::Text("sluice.toml"),
        text: r"The config: \fBserve\fR, \fBreload\fR and \fBstatus\fR read \fB-c FILE\fR, this name in the working directory by default; \fBcheck FILE\fR validates one, with the files it names (certificates, keys, static roots).",
        pages: CONFIG,
    },
    Entry {
        section: Section::Files,
        term: Term::Text("$TMPDIR/sluice-*.pid"),
        text: r"The pid file: \fBserve\fR writes it (and removes it when it stops), \fBreload\fR signals the process it names when the config has no [admin] listener. The name is a hash of the config's full path; pid_file in the config moves it.",
        pages: &["sluice", "serve", "reload"],
    },
    Entry {
        section: Section::Files,
        term: Term::Text("access_log"),
        text: r"The file the config's access_log names, if it names one: appended to, and reopened on SIGUSR1.",
        pages: &["serve"],
    },
    Entry {
        section: Section::Files,
        term: Term::Text("nginx.conf"),
        text: r"The nginx config named, and every file its include directives name: read, never written (the translation goes to stdout, the notes to stderr).",
        pages: &["import"],
    },
    Entry {
        section: Section::Files,
        term: Term::Text("$TMPDIR/sluice-lab-PID/"),
        text: r"Each tier's config and log while an experiment runs without \fB--out\fR; removed when it ends.",
        pages: &["lab"],
    },
    // ENVIRONMENT
    Entry {
        section: Section::Environment,
        term: Term::Text("SLUICE_LOG"),
        text: r"The log filter: info (the default), warn, debug, or per module (sluice_proxy=debug).",
        pages: LOGGING,
    },
    Entry {
        section: Section::Environment,
        term: Term::Text("NO_COLOR"),
        text: r"Set and not empty: no colours in the log. Without it, the log has colours only when stderr is a terminal.",
        pages: LOGGING,
    },
    Entry {
        section: Section::Environment,
        term: Term::Text("TMPDIR"),
        text: r"Where the default pid file is written (\fBserve\fR, \fBreload\fR) and \fBlab\fR keeps its tiers' files; /tmp when unset.",
        pages: &["sluice", "serve", "reload", "lab"],
    },
    Entry {
        section: Section::Environment,
        term: Term::Text("NOTIFY_SOCKET"),
        text: r"Set by systemd (Type=notify): sluice says when it is ready, reloading and stopping.",
        pages: &["sluice", "serve"],
    },
    Entry {
        section: Section::Environment,
        term: Term::Text("SLUICE_CPU_RATE"),
        text: r"Iterations per microsecond of \fB--cpu\fR's work, instead of measuring it at start (\fBsluice lab\fR sets it for the tiers it starts).",
        pages: &["backend"],
    },
    // EXIT STATUS: 0
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(0),
        text: r"Success.",
        pages: &[
            "sluice",
            "status",
            "import",
            "completions",
            "man",
            "plan",
            "lab",
            "hash-report",
            "bench-merge",
        ],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(0),
        text: r"Stopped by SIGTERM or SIGINT, after the requests in flight finished or shutdown_grace ran out.",
        pages: &["serve", "demo"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(0),
        text: r"Every file is valid.",
        pages: &["check"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(0),
        text: r"The running sluice reloaded (with [admin]: what changed is printed), or was sent SIGHUP (its log says whether the new config took effect).",
        pages: &["reload"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(0),
        text: r"The run ended and no \fB--fail-if\fR threshold was crossed.",
        pages: &["bench"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(0),
        text: r"Stopped by SIGINT.",
        pages: &["backend"],
    },
    // EXIT STATUS: 1
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(FAILURE),
        text: r"A failure, its cause on stderr: a reload the running sluice refused, a file that cannot be read.",
        pages: &["sluice"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(FAILURE),
        text: r"It could not start (a listen address in use, the pid file not writable) or stop cleanly; the cause is on stderr.",
        pages: &["serve"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(FAILURE),
        text: r"The running sluice refused the reload and keeps its config, its admin API did not answer, or no sluice runs for this config (no pid file, or a stale one).",
        pages: &["reload"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(FAILURE),
        text: r"The config has no [admin] listener, or its admin API did not answer.",
        pages: &["status"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(FAILURE),
        text: r"The nginx config (or a file it includes) cannot be read, or is not nginx's syntax.",
        pages: &["import"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(FAILURE),
        text: r"A failure, its cause on stderr (for example an address that cannot be listened on, a file that cannot be written, a flag's value out of range).",
        pages: &[
            "man",
            "demo",
            "plan",
            "lab",
            "bench",
            "bench-merge",
            "backend",
        ],
    },
    // EXIT STATUS: 2
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"A bad config or bad input (every problem listed, each at file:line:col).",
        pages: &["sluice"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"The config does not validate (every problem listed, each at file:line:col), or the command line cannot be used.",
        pages: &["serve", "status"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"The config does not validate (every problem listed, each at file:line:col): nothing is reloaded, the running sluice keeps its config.",
        pages: &["reload"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"A file does not validate (every problem of every file listed, each at file:line:col), or no file was named.",
        pages: &["check"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"The command line cannot be used (a URL, duration or \fB--fail-if\fR that does not parse); nothing was sent.",
        pages: &["bench"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"A file cannot be read or is not a sluice bench result (\fB--json\fR), or the results cannot be merged.",
        pages: &["bench-merge"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"The experiment or the command line cannot be used (for example \fB--target\fR without \fB--tier\fR, or \fB--print\fR with a name no built-in experiment has).",
        pages: &["lab"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"nginx guards a location with a check sluice cannot make (\fBauth_request\fR, \fBlimit_except\fR, an \fBif\fR answering 4xx, ...), or one it cannot route as nginx did (a guarded regex location): the config is printed all the same, such routes answering 403 where sluice can route them, each named on stderr (\fB--force\fR exits 0); or the command line cannot be used.",
        pages: &["import"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(BAD_INPUT),
        text: r"The command line cannot be used (the message says why).",
        pages: &[
            "man",
            "demo",
            "plan",
            "backend",
            "completions",
            "hash-report",
        ],
    },
    // EXIT STATUS: 3 and 130
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(THRESHOLD_CROSSED),
        text: r"A \fB--fail-if\fR threshold was crossed (each one named on stderr); the results are printed and written all the same.",
        pages: &["sluice", "bench"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(INTERRUPTED),
        text: r"Interrupted (Ctrl-C): a load test still writes what it measured; \fBserve\fR after a second SIGTERM or SIGINT.",
        pages: &["sluice"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(INTERRUPTED),
        text: r"A second SIGTERM or SIGINT came while the requests in flight finished: it exited at once.",
        pages: &["serve", "demo"],
    },
    Entry {
        section: Section::ExitStatus,
        term: Term::Code(INTERRUPTED),
        text: r"Interrupted by SIGINT or SIGTERM: what was measured is printed and written all the same (after a second one, at once, with nothing written).",
        pages: &["bench", "lab"],
    },
    // SIGNALS
    Entry {
        section: Section::Signals,
        term: Term::Text("SIGTERM, SIGINT"),
        text: r"Stop accepting, let requests in flight finish (shutdown_grace), then exit; a second one exits at once.",
        pages: &["sluice", "serve", "demo"],
    },
    Entry {
        section: Section::Signals,
        term: Term::Text("SIGHUP"),
        text: r"Reload the config file (checked first; a bad one is refused and the running config kept).",
        pages: &["sluice", "serve"],
    },
    Entry {
        section: Section::Signals,
        term: Term::Text("SIGUSR1"),
        text: r"Reopen the access log (after logrotate moved it).",
        pages: &["sluice", "serve"],
    },
    Entry {
        section: Section::Signals,
        term: Term::Text("SIGHUP"),
        text: r"Ignored, with a warning: the demo has no config file to reload.",
        pages: &["demo"],
    },
    Entry {
        section: Section::Signals,
        term: Term::Text("SIGTERM, SIGINT"),
        text: r"End the run: what was measured is printed and written, exit 130; a second one exits at once.",
        pages: &["bench", "lab"],
    },
    Entry {
        section: Section::Signals,
        term: Term::Text("SIGINT"),
        text: r"Stop (Ctrl-C); SIGTERM ends it too, by its default action.",
        pages: &["backend"],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_page_lists_the_exit_codes_its_command_uses() {
        let pages = [
            "sluice",
            "serve",
            "reload",
            "status",
            "check",
            "import",
            "completions",
            "man",
            "demo",
            "plan",
            "lab",
            "hash-report",
            "bench",
            "bench-merge",
            "backend",
        ];
        for page in pages {
            let text = sections(page);
            assert!(
                text.contains(".SH EXIT STATUS\n.TP\n0\n"),
                "{page}:\n{text}"
            );
            assert!(text.contains(&format!(".TP\n{BAD_INPUT}\n")), "{page}");
        }
        assert!(sections("bench").contains(&format!(".TP\n{THRESHOLD_CROSSED}\n")));
        assert!(!sections("check").contains(&format!(".TP\n{THRESHOLD_CROSSED}\n")));
        assert!(!sections("check").contains(".SH SIGNALS"));
    }
}
