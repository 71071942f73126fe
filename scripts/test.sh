#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, every test, and validation of
# every example config. Works on a fresh Debian machine with Rust: it installs the few
# system tools the tests use itself (curl; nginx, which a test compares ketama hashing with;
# a venv with h11, the differential test's reference parser, and PyYAML, which reads the
# example Kubernetes manifest; chromium, headless, which opens the `sluice bench --html`
# report in a test; prometheus, for promtool, which checks the /metrics output; goaccess,
# which reads the access log; prometheus-node-exporter, which `sluice lab` reads as a
# remote tier in a test; h2load, which multiplexes HTTP/2 streams in a test; openssl,
# which makes a test's certificate; pebble, Let's Encrypt's test CA, which a test gets a
# certificate from; apache2-utils, whose htpasswd writes the bcrypt users of the tests of
# access rules; haproxy, which checks the lab's generated haproxy.cfg; groff, which
# renders `sluice man`; systemd-analyze, where the machine has it, verifies dist/'s unit;
# dnsmasq, the DNS server whose records the tests of `dns` servers change; PostgreSQL and
# MariaDB, whose sessions `sluice lab` reads in a test, directly and through their
# Prometheus exporters, and Redis, whose INFO it reads,
# behind an app in Debian's python3 with psycopg2 and PyMySQL; Java 17 and Maven, which
# build and run lab/spring-app, the Spring Boot app a test reads through Micrometer;
# mdbook, by cargo install, which builds the manual in docs/ as a site).
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything missing is found first and listed in one plan, then installed: apt packages
# without their recommendations and never upgrading an installed one by name (apt still
# upgrades an installed library when a new package needs a newer version of it: the plan
# names each), Python packages into a virtual environment of this checkout's own (never
# the system's or the user's), mdbook by cargo install, rustfmt and clippy by rustup.
need_apt=()
command -v curl >/dev/null || need_apt+=(curl)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need_apt+=(nginx)
command -v promtool >/dev/null || need_apt+=(prometheus)
command -v goaccess >/dev/null || need_apt+=(goaccess)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v prometheus-node-exporter >/dev/null || need_apt+=(prometheus-node-exporter)
command -v h2load >/dev/null || need_apt+=(nghttp2-client)
command -v openssl >/dev/null || need_apt+=(openssl)
command -v pebble >/dev/null || need_apt+=(pebble)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need_apt+=(haproxy)
command -v htpasswd >/dev/null || need_apt+=(apache2-utils)
command -v groff >/dev/null || need_apt+=(groff-base)
command -v dnsmasq >/dev/null || [ -x /usr/sbin/dnsmasq ] || need_apt+=(dnsmasq-base)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
[ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server)
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v prometheus-mysqld-exporter >/dev/null || need_apt+=(prometheus-mysqld-exporter)
command -v prometheus-postgres-exporter >/dev/null || need_apt+=(prometheus-postgres-exporter)
command -v java >/dev/null || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need_apt+=(maven)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import psycopg2" 2>/dev/null || need_apt+=(python3-psycopg2)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import pymysql" 2>/dev/null || need_apt+=(python3-pymysql)
command -v gunicorn >/dev/null || need_apt+=(gunicorn)
command -v perf >/dev/null || need_apt+=(linux-perf)
# python3 -m venv needs ensurepip, which Debian ships apart, in python3-venv.
python3 -c "import ensurepip" 2>/dev/null || need_apt+=(python3-venv)

# The differential test compares sluice's HTTP/1.1 parser with Python's h11; the example
# Kubernetes manifest is read with PyYAML; brotli and zstandard decode the compressed
# answers of the compression tests. All live in this venv (under the target
# directory, kept across runs); the tests run its interpreter as SLUICE_PYTHON.
target=${CARGO_TARGET_DIR:-target}
[[ $target = /* ]] || target=$PWD/$target
venv=$target/test-venv
need_pip=()
for module in h11:h11 yaml:pyyaml brotli:brotli zstandard:zstandard; do
    "$venv/bin/python" -c "import ${module%%:*}" 2>/dev/null || need_pip+=("${module#*:}")
done

need_rustup=()
for component in rustfmt clippy; do
    cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1 || need_rustup+=("$component")
done
MDBOOK=$(command -v mdbook || echo "${CARGO_HOME:-$HOME/.cargo}/bin/mdbook")
need_mdbook=0
[ -x "$MDBOOK" ] || need_mdbook=1

if [ ${#need_apt[@]} -gt 0 ] || [ ${#need_pip[@]} -gt 0 ] || [ ${#need_rustup[@]} -gt 0 ] || [ $need_mdbook = 1 ]; then
    echo "== to install:"
    [ ${#need_apt[@]} -eq 0 ] || echo "   apt-get, without recommendations: ${need_apt[*]}"
    [ ${#need_pip[@]} -eq 0 ] || echo "   pip, into $venv: ${need_pip[*]}"
    [ ${#need_rustup[@]} -eq 0 ] || echo "   rustup component: ${need_rustup[*]}"
    [ $need_mdbook = 0 ] || echo "   cargo install --locked: mdbook (into ${CARGO_HOME:-$HOME/.cargo}/bin)"
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    plan=$(apt-get install -s --no-install-recommends --no-upgrade "${need_apt[@]}")
    upgrades=$(sed -n 's/^Inst \([^ ]*\) \[\([^]]*\)\] (\([^ ]*\).*/     \1 \2 -> \3/p' <<<"$plan")
    echo "== apt-get adds $(grep -c '^Inst [^ ]* (' <<<"$plan") packages, dependencies included"
    if [ -n "$upgrades" ]; then
        echo "   and upgrades $(wc -l <<<"$upgrades") installed ones, which the new ones need newer:"
        echo "$upgrades"
    fi
    $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends --no-upgrade "${need_apt[@]}"
fi
if [ ${#need_pip[@]} -gt 0 ]; then
    "$venv/bin/python" -c "import sys" 2>/dev/null || python3 -m venv --clear "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${need_pip[@]}"
fi
export SLUICE_PYTHON=$venv/bin/python
[ ${#need_rustup[@]} -eq 0 ] || rustup component add "${need_rustup[@]}"
[ $need_mdbook = 0 ] || cargo install --locked --quiet mdbook

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== vendor/h2 is h2 0.4.20 from crates.io plus vendor/h2-patches"
bash scripts/vendor-h2.sh check
echo "== no crate's module graph has a cycle"
for src in crates/*/src; do
    python3 scripts/module-graph.py "$src" --top >/dev/null
    python3 scripts/module-graph.py "$src" >/dev/null
done
echo "== no broken relative link or anchor in README.md and docs/"
python3 scripts/doc-links.py
echo "== mdbook build docs (the manual as a site)"
"$MDBOOK" build docs >/dev/null
echo "== bench/runs and lab/runs: indexed, small, no machine paths"
python3 bench/runs.py check
echo "== cargo test, every tier (--include-ignored: the tests that need the tools above)"
# Tests a machine cannot run without something test.sh does not install are skipped by
# name, each said below and at the end: a skip is never a pass.
skip=()
skipped=()
# The import corpus is outside the repository (its configs carry their own licences):
# $SLUICE_NGINX_CORPUS, or ../shared/nginx-corpus beside the checkout.
corpus=${SLUICE_NGINX_CORPUS:-../shared/nginx-corpus}
if [ -d "$corpus" ]; then
    SLUICE_NGINX_CORPUS="$(cd "$corpus" && pwd)"
    export SLUICE_NGINX_CORPUS
elif [ -n "${SLUICE_NGINX_CORPUS:-}" ]; then
    echo "== SLUICE_NGINX_CORPUS=$SLUICE_NGINX_CORPUS is not a directory"
    exit 1
else
    skip+=(--skip nginx_corpus::)
    skipped+=("the import corpus tests: no ../shared/nginx-corpus and no SLUICE_NGINX_CORPUS")
fi
# systemd-analyze comes with systemd itself, which a test run must not install (it
# would replace the machine's init system's packages).
if ! command -v systemd-analyze >/dev/null; then
    skip+=(--skip the_systemd_unit_verifies)
    skipped+=("the systemd unit's verification: no systemd-analyze (comes with systemd)")
fi
test_log=$(mktemp)
trap 'rm -f "$test_log"' EXIT
cargo test --workspace --locked -- --include-ignored ${skip[@]+"${skip[@]}"} 2>&1 | tee "$test_log"
# A test still ignored here did not run: it is not a pass.
if grep -E '^test result: .* [1-9][0-9]* ignored' "$test_log"; then
    echo "== FAILED: the tests above were ignored even with --include-ignored"
    exit 1
fi
for s in ${skipped[@]+"${skipped[@]}"}; do echo "== SKIPPED (not passed): $s"; done
echo "== h2's own unit and doc tests and the patches' tests, against vendor/h2"
bash scripts/vendor-h2.sh test
echo "== sluice check examples/*.toml"
cargo run --quiet --locked -p sluice -- check -c examples/*.toml
if [ ${#skipped[@]} -gt 0 ]; then
    echo "== all checks passed but ${#skipped[@]} skipped (above), which did not run"
else
    echo "== all checks passed"
fi
