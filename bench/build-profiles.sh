#!/usr/bin/env bash
# bench/build-profiles.sh: what each Cargo build profile costs to build, and what it gives.
#
# For each profile (Cargo.toml's `release`, what `cargo install` and `cargo run --release`
# build, and `dist`, what the release archives and the container ship): a cold build of the
# sluice binary into a fresh target directory, as a user's first build is (dependencies
# downloaded beforehand, every crate compiled), measuring
#   - the wall time of the build;
#   - its peak memory: the resident memory of all the build's processes together (cargo,
#     rustc, build scripts, the C compiler, the linker), sampled every 0.2 s; what a small
#     VM must hold, page cache aside;
#   - the binary's size.
# Then, unless COMPARE=0, bench/compare.sh with the first profile's binary as `sluice` and
# the second's as `sluice-base`: CPU per request on HTTP/1.1, TLS and HTTP/2 against nginx
# and HAProxy, in the same rounds, so the two builds' cost per request is compared under
# the same noise.
#
# Usage:  [PROFILES="release dist"] [COMPARE=1] [RUNS=3] [HTTPS=1] bench/build-profiles.sh
# About 10 minutes of builds, then compare.sh's run (about 12 minutes with HTTPS).
# Results: bench/runs/<date>-build-profiles/ (summary.md, results.jsonl) and compare.sh's
# own directory; the binaries stay in target/build-profiles/.

set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROFILES=(${PROFILES:-release dist})
COMPARE=${COMPARE:-1}
# A run of its own: -2, -3, ... when the day has one (an earlier run is never written over).
OUT=$REPO/bench/runs/$(date -u +%Y-%m-%d)-build-profiles
n=2; base=$OUT; while [[ -e $OUT ]]; do OUT=$base-$n; n=$((n + 1)); done
WORK=$(mktemp -d /tmp/sluice-build-profiles.XXXXXX)
# The binaries are kept, for a rerun of compare.sh on them.
BINS=$REPO/target/build-profiles
trap 'rm -rf "$WORK"' EXIT
log() { printf '[build-profiles %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
mkdir -p "$OUT"
: >"$OUT/results.jsonl"

(cd "$REPO" && cargo fetch --locked -q)

# peak_rss_kib PID: the largest sum of resident memory over PID and all its descendants,
# sampled until PID is gone.
peak_rss_kib() {
    local root=$1 peak=0 now
    while kill -0 "$root" 2>/dev/null; do
        now=$(ps -e -o pid=,ppid=,rss= | awk -v root="$root" '
            { parent[$1] = $2; rss[$1] = $3 }
            END {
                for (p in parent) {
                    for (q = p; q > 1; q = parent[q]) if (q == root) { sum += rss[p]; break }
                }
                print sum + 0
            }')
        (( now > peak )) && peak=$now
        sleep 0.2
    done
    echo "$peak"
}

# build PROFILE: a cold build; appends its figures to results.jsonl.
build() {
    local profile=$1 dir=$WORK/target-$1 start end peak_file=$WORK/peak-$1
    log "cold build, profile $profile, into $dir"
    start=$(date +%s.%N)
    (cd "$REPO" && CARGO_TARGET_DIR=$dir CARGO_INCREMENTAL=0 \
        exec cargo build --locked --profile "$profile" -p sluice >"$WORK/build-$profile.log" 2>&1) &
    local pid=$!
    peak_rss_kib "$pid" >"$peak_file" &
    wait "$pid" || { tail -20 "$WORK/build-$profile.log" >&2; exit 1; }
    end=$(date +%s.%N)
    wait
    local bin=$dir/$profile/sluice
    [[ $profile == dev ]] && bin=$dir/debug/sluice
    mkdir -p "$BINS"
    cp "$bin" "$BINS/sluice-$profile"
    printf '{"profile":"%s","build_s":%.0f,"peak_rss_mib":%d,"binary_mib":%.1f}\n' \
        "$profile" "$(echo "$end - $start" | bc)" "$(( $(cat "$peak_file") / 1024 ))" \
        "$(echo "scale=1; $(stat -c %s "$bin") / 1048576" | bc)" | tee -a "$OUT/results.jsonl"
    rm -rf "$dir"
}

for profile in "${PROFILES[@]}"; do build "$profile"; done

{
    echo "# Build profiles: build cost against what the binary gives"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), git $(git -C "$REPO" rev-parse --short HEAD)"
    echo "- command: \`PROFILES=\"${PROFILES[*]}\" bench/build-profiles.sh\`"
    echo "- machine: $(nproc) CPUs, $(free -g | awk '/^Mem/ {print $2}') GiB; $(rustc --version)"
    echo
    echo "| profile | cold build | peak memory of the build | binary |"
    echo "|---|---:|---:|---:|"
    python3 - "$OUT/results.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    took = f"{r['build_s'] // 60:.0f} min {r['build_s'] % 60:.0f} s"
    print(f"| {r['profile']} | {took} | {r['peak_rss_mib']:,} MiB | {r['binary_mib']} MiB |")
PY
} >"$OUT/summary.md"
cat "$OUT/summary.md"

if [[ $COMPARE != 0 && ${#PROFILES[@]} -ge 2 ]]; then
    log "CPU per request: bench/compare.sh, ${PROFILES[0]} as sluice, ${PROFILES[1]} as sluice-base"
    SLUICE=$BINS/sluice-${PROFILES[0]} BASELINE=$BINS/sluice-${PROFILES[1]} \
        BASELINE_LABEL="${PROFILES[1]} profile" "$REPO/bench/compare.sh" 2> >(tee "$WORK/compare.log" >&2)
    echo >>"$OUT/summary.md"
    run=$(sed -n 's|.*results in .*/bench/runs/||p' "$WORK/compare.log" | tail -n1)
    echo "CPU per request of the two builds: [\`bench/runs/$run\`](../$run/summary.md) (\`sluice\` is the ${PROFILES[0]} profile, \`sluice-base\` the ${PROFILES[1]})." >>"$OUT/summary.md"
fi
