#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, every test, and validation of
# every example config. Works on a fresh Debian machine with Rust: it installs the few
# system tools the tests use itself (curl; nginx, which a test compares ketama hashing with;
# python3 with h11, the differential test's reference parser, and PyYAML, which reads the
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
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "== installing ${need_apt[*]}"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
# The differential test compares sluice's HTTP/1.1 parser with Python's h11; the
# example Kubernetes manifest is read with PyYAML.
for module in h11:h11 yaml:pyyaml; do
    if ! python3 -c "import ${module%%:*}" 2>/dev/null; then
        echo "== installing ${module#*:} (pip)"
        python3 -m pip install --quiet "${module#*:}" || python3 -m pip install --quiet --break-system-packages "${module#*:}"
    fi
done
for component in rustfmt clippy; do
    cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$component"
done

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== no crate's module graph has a cycle"
for src in crates/*/src; do
    python3 scripts/module-graph.py "$src" --top >/dev/null
    python3 scripts/module-graph.py "$src" >/dev/null
done
echo "== no broken relative link or anchor in README.md and docs/"
python3 scripts/doc-links.py
echo "== mdbook build docs (the manual as a site)"
MDBOOK=$(command -v mdbook || echo "${CARGO_HOME:-$HOME/.cargo}/bin/mdbook")
[ -x "$MDBOOK" ] || cargo install --locked --quiet mdbook
"$MDBOOK" build docs >/dev/null
echo "== bench/runs: indexed, small, no machine paths"
python3 bench/runs.py check
echo "== cargo test, every tier (--include-ignored: the tests that need the tools above)"
# The import corpus is outside the repository: $SLUICE_NGINX_CORPUS, or ../shared/nginx-corpus
# beside the checkout. Without either its tests are skipped, said below, never passed.
corpus=${SLUICE_NGINX_CORPUS:-../shared/nginx-corpus}
corpus_skip=()
if [ -d "$corpus" ]; then
    export SLUICE_NGINX_CORPUS="$(cd "$corpus" && pwd)"
elif [ -n "${SLUICE_NGINX_CORPUS:-}" ]; then
    echo "== SLUICE_NGINX_CORPUS=$SLUICE_NGINX_CORPUS is not a directory"
    exit 1
else
    corpus_skip=(--skip nginx_corpus::)
fi
test_log=$(mktemp)
cargo test --workspace --locked -- --include-ignored ${corpus_skip[@]+"${corpus_skip[@]}"} 2>&1 | tee "$test_log"
# A test still ignored here did not run: it is not a pass.
if grep -E '^test result: .* [1-9][0-9]* ignored' "$test_log"; then
    echo "== FAILED: the tests above were ignored even with --include-ignored"
    exit 1
fi
rm -f "$test_log"
if [ ${#corpus_skip[@]} -gt 0 ]; then
    echo "== SKIPPED (not passed): the import corpus tests: no ../shared/nginx-corpus and no SLUICE_NGINX_CORPUS"
fi
echo "== sluice check examples/*.toml"
cargo run --quiet --locked -p sluice -- check -c examples/*.toml
echo "== all checks passed"
