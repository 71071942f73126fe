#!/usr/bin/env bash
# Coverage-guided fuzzing of sluice's HTTP/1 codec (fuzz/, cargo-fuzz + libFuzzer).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60)
#
# Runs request_head, chunked and response_head one after another, each for the given
# time in one process (-jobs=1). Each corpus (fuzz/corpus/<target>, not committed) is
# seeded from fuzz/seeds/<target>. Needs the nightly toolchain. The network is used only
# to install cargo-fuzz when it is missing and to fetch the fuzz crate's dependencies the
# first time; the fuzzing runs themselves are offline. A crash or failed property leaves
# its input in fuzz/artifacts/<target>/ and makes the script exit 1 once every target
# has run; each target's log is fuzz/artifacts/<target>/fuzz.log.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "the nightly toolchain is needed: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install --locked cargo-fuzz
fi

cd fuzz
cargo +nightly fetch --locked --target "$(rustc +nightly -vV | sed -n 's/^host: //p')"
export CARGO_NET_OFFLINE=true
cargo +nightly fuzz build

failed=()
for target in request_head chunked response_head; do
    echo "== $target: ${seconds}s"
    mkdir -p "corpus/$target" "artifacts/$target"
    log="artifacts/$target/fuzz.log"
    touch "artifacts/$target/.started"
    status=0
    cargo +nightly fuzz run "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -jobs=1 -print_final_stats=1 >"$log" 2>&1 || status=$?
    # With -jobs, libFuzzer also leaves the job's log as fuzz-<job>.log here: it is in $log.
    rm -f fuzz-0.log
    grep -E '^#[0-9]+[[:space:]]+DONE' "$log" || true
    found=$(find "artifacts/$target" -maxdepth 1 -type f -newer "artifacts/$target/.started" \
        \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
    echo "corpus: $(find "corpus/$target" -type f | wc -l) files; new failing inputs: $found"
    if [ "$status" -ne 0 ] || [ "$found" -gt 0 ]; then
        grep -E -A1 'panicked at' "$log" | head -4 || true
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "== failures in: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
echo "== no failures"
