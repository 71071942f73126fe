#!/usr/bin/env bash
# vendor/h2 is the h2 crate as published on crates.io, plus the steps below and the
# patches in vendor/h2-patches, applied in order; vendor/README.md says what each patch
# does, why, and where upstream stands. The tree stays committed (the build uses it
# offline through `[patch.crates-io]`); this script is how it is made and checked.
#
#   scripts/vendor-h2.sh check     rebuild into a temporary directory and diff it
#                                  against vendor/h2: exit 1, showing the difference,
#                                  if vendor/h2 is not exactly what the steps make
#   scripts/vendor-h2.sh rebuild   remake vendor/h2 (after a patch was changed, or for
#                                  another release: H2_VERSION=0.4.21 H2_SHA256=...)
#   scripts/vendor-h2.sh test      h2's own unit tests and doc tests, and the patches'
#                                  tests, against vendor/h2 (the vendor/h2-tests workspace)
#
# Environment:
#   H2_VERSION, H2_SHA256   the release to build from and its .crate's sha256 (default:
#                           the pinned ones below; a version other than the pinned one
#                           needs its sha256, which the script prints when it is missing)
#   H2_KEEP_WORK=1          when a patch does not apply, keep the work directory (the
#                           tree before that patch, and the tree with its hunks that do
#                           apply and .rej files for the rest) to port the patch by hand
#
# The .crate comes through Cargo (`cargo fetch` of a throwaway package that depends on
# h2 =VERSION), so it uses this machine's registry configuration and Cargo's download
# cache ($CARGO_HOME/registry/cache): a check downloads nothing once Cargo has the crate,
# and the sha256 pinned here is checked whatever the registry served.
set -euo pipefail

# The release vendor/h2 is made from, and the sha256 of its .crate (the registry index's
# `cksum` for it, which Cargo also checks). To move to a new release, see vendor/README.md.
PINNED_VERSION=0.4.20
PINNED_SHA256=7d29020232d6aa3fb1daca64c1127cf662cf97f254ae16c18c05b8ab635fc118

REPO=$(cd "$(dirname "$0")/.." && pwd)
PATCHES="$REPO/vendor/h2-patches"
H2_VERSION=${H2_VERSION:-$PINNED_VERSION}
if [ "$H2_VERSION" = "$PINNED_VERSION" ]; then
    H2_SHA256=${H2_SHA256:-$PINNED_SHA256}
else
    H2_SHA256=${H2_SHA256:-}
fi

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

WORK=""
cleanup() {
    if [ -n "$WORK" ] && [ -d "$WORK" ]; then
        if [ "${KEEP:-0}" = 1 ]; then
            echo "vendor-h2: work directory kept: $WORK" >&2
        else
            rm -rf "$WORK"
        fi
    fi
}
trap cleanup EXIT

sha256_of() {
    sha256sum "$1" | cut -d' ' -f1
}

# Prints the path of h2-$H2_VERSION.crate, checked against H2_SHA256.
fetch_crate() {
    local dir="$WORK/fetch" cargo_home="${CARGO_HOME:-$HOME/.cargo}"
    mkdir -p "$dir/src"
    : >"$dir/src/lib.rs"
    # Its own [workspace], so that no Cargo.toml above the temporary directory claims it.
    cat >"$dir/Cargo.toml" <<EOF
[package]
name = "vendor-h2-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
h2 = "=$H2_VERSION"

[workspace]
EOF
    # Offline first: the crate and the index entries are usually in Cargo's cache, and
    # then a check needs no network; otherwise Cargo downloads them.
    if ! (cd "$dir" && cargo fetch --offline --quiet) >/dev/null 2>&1; then
        (cd "$dir" && cargo fetch --quiet) >&2
    fi
    # The checksum the registry index gives for this release, as Cargo recorded it.
    local indexed
    indexed=$(awk -v v="$H2_VERSION" '
        /^\[\[package\]\]/ { name = ""; ver = "" }
        /^name = / { name = $3 }
        /^version = / { ver = $3 }
        /^checksum = / && name == "\"h2\"" && ver == "\"" v "\"" { gsub(/"/, "", $3); print $3 }
    ' "$dir/Cargo.lock")
    if [ -z "$H2_SHA256" ]; then
        echo "vendor-h2: no H2_SHA256 for h2 $H2_VERSION. The registry index gives" >&2
        echo "  $indexed" >&2
        echo "  Check it (crates.io's page for the version shows it too), then run again with" >&2
        echo "  H2_VERSION=$H2_VERSION H2_SHA256=$indexed $0 ${COMMAND:-rebuild}" >&2
        exit 1
    fi
    if [ "$indexed" != "$H2_SHA256" ]; then
        echo "vendor-h2: the registry index gives h2 $H2_VERSION the sha256 $indexed, not $H2_SHA256" >&2
        exit 1
    fi
    local crate
    for crate in "$cargo_home"/registry/cache/*/"h2-$H2_VERSION.crate"; do
        if [ -f "$crate" ] && [ "$(sha256_of "$crate")" = "$H2_SHA256" ]; then
            echo "$crate"
            return
        fi
    done
    echo "vendor-h2: Cargo fetched h2 $H2_VERSION, but no h2-$H2_VERSION.crate with sha256" >&2
    echo "  $H2_SHA256 is under $cargo_home/registry/cache" >&2
    exit 1
}

# Makes the tree in "$1" (which must not exist): upstream, the steps, the patches.
build_tree() {
    local tree=$1 crate
    crate=$(fetch_crate)
    mkdir -p "$WORK/unpack"
    tar -xzf "$crate" -C "$WORK/unpack"
    mv "$WORK/unpack/h2-$H2_VERSION" "$tree"

    # Step 1: what the build does not use is left out: the examples and benchmarks
    # (and their manifest entries, step 2), Cargo's copy of the original manifest, the
    # crate's own lockfile, its CI files and contributing guide. Kept: the manifest,
    # src/, LICENSE, README.md and CHANGELOG.md.
    (cd "$tree" && rm -rf -- examples benches Cargo.toml.orig Cargo.lock \
        .cargo_vcs_info.json .github .gitignore CONTRIBUTING.md)

    # Step 2: the manifest without the [[example]], [[bench]] and [[test]] targets and
    # without the dev-dependencies (its other tables are as published): vendor/h2 is
    # only built as a dependency, and vendor/h2-tests/unit restores what h2's own tests
    # need. A table runs from its header to the next one, so its blank line goes too.
    awk '
        /^\[/ { drop = ($0 ~ /^\[\[(example|bench|test)\]\]$/ || $0 ~ /^\[(.*\.)?dev-dependencies([.\]])/) }
        !drop { print }
    ' "$tree/Cargo.toml" >"$WORK/Cargo.toml.trimmed"
    mv "$WORK/Cargo.toml.trimmed" "$tree/Cargo.toml"

    # Step 3: the patches, in the order of their numbers. git apply works outside a
    # repository; the ceiling keeps it from finding one above the temporary directory.
    local patch name
    for patch in "$PATCHES"/[0-9][0-9][0-9][0-9]-*.patch; do
        name=$(basename "$patch")
        if ! (cd "$tree" && GIT_CEILING_DIRECTORIES="$(dirname "$tree")" \
            git apply --whitespace=nowarn "$patch") 2>"$WORK/apply.err"; then
            echo "vendor-h2: vendor/h2-patches/$name does not apply to h2 $H2_VERSION" >&2
            echo "  (the patches before it applied); git apply says:" >&2
            sed 's/^/    /' "$WORK/apply.err" >&2
            port_help "$tree" "$patch" "$name"
            exit 1
        fi
    done

    # Step 4: a note in the tree itself, so that whoever opens vendor/h2 learns it is made.
    cat >"$tree/PATCHED.md" <<EOF
# h2 $H2_VERSION, patched for sluice

Made by \`scripts/vendor-h2.sh rebuild\`: the \`h2\` crate $H2_VERSION from crates.io (MIT,
see LICENSE), less its examples, benchmarks and dev-dependencies, with the patches in
\`../h2-patches\`. Do not edit it here: change a patch and rebuild
(\`scripts/vendor-h2.sh check\` fails on any other difference). What each patch does,
and why, and upstream's status: \`../README.md\`.
EOF
}

# After a patch failed: with H2_KEEP_WORK=1, keeps a/ (the tree before the patch) and b/
# (the tree with the hunks that apply, and .rej files for the others), and says how to
# make the patch again from them.
port_help() {
    local tree=$1 patch=$2 name=$3
    if [ "${H2_KEEP_WORK:-0}" != 1 ]; then
        echo "  Run again with H2_KEEP_WORK=1 to keep the trees to port it by hand." >&2
        return
    fi
    cp -R "$tree" "$WORK/a"
    mv "$tree" "$WORK/b"
    (cd "$WORK/b" && GIT_CEILING_DIRECTORIES="$WORK" \
        git apply --reject --whitespace=nowarn "$patch") >/dev/null 2>&1 || true
    KEEP=1
    cat >&2 <<EOF
  $WORK/a is the tree before $name, $WORK/b the same with the hunks that apply
  (the others are in b/**/*.rej). Finish b/ by hand, delete the .rej files, then:
    (cd $WORK && git diff --no-index --no-prefix a b) > vendor/h2-patches/$name.new
  keep the description at the top of the old patch, replace the old one with it, and run
  H2_VERSION=$H2_VERSION H2_SHA256=$H2_SHA256 $0 rebuild
  again (the patches after it may need the same).
EOF
}

cmd_rebuild() {
    WORK=$(mktemp -d)
    build_tree "$WORK/h2"
    rm -rf "$REPO/vendor/h2"
    cp -R "$WORK/h2" "$REPO/vendor/h2"
    echo "vendor-h2: vendor/h2 is h2 $H2_VERSION with $(find "$PATCHES" -name '[0-9]*.patch' | wc -l) patches"
    if [ "$H2_VERSION" != "$PINNED_VERSION" ]; then
        echo "vendor-h2: now pin it in $0:"
        echo "  PINNED_VERSION=$H2_VERSION"
        echo "  PINNED_SHA256=$H2_SHA256"
    fi
}

cmd_check() {
    WORK=$(mktemp -d)
    build_tree "$WORK/h2"
    # Not -N: it would take a file that is on one side only, and empty, for no difference.
    if ! (cd "$WORK" && diff -ru h2 "$REPO/vendor/h2") >"$WORK/diff"; then
        echo "vendor-h2: vendor/h2 is not h2 $H2_VERSION plus the steps in $0 and vendor/h2-patches:" >&2
        cat "$WORK/diff" >&2
        echo "vendor-h2: change a patch in vendor/h2-patches (then rebuild), not vendor/h2" >&2
        exit 1
    fi
    echo "vendor-h2: vendor/h2 is h2 $H2_VERSION plus vendor/h2-patches ($(find "$PATCHES" -name '[0-9]*.patch' | wc -l) patches)"
}

cmd_test() {
    # The fixture tests read the HPACK test stories of h2's repository (fixtures/hpack),
    # which the published crate leaves out; every other unit test and doc test runs.
    cargo test --locked --manifest-path "$REPO/vendor/h2-tests/Cargo.toml" --workspace \
        -- --skip hpack::test::fixture
}

COMMAND=${1:-}
case "$COMMAND" in
rebuild) cmd_rebuild ;;
check) cmd_check ;;
test) cmd_test ;;
*) usage ;;
esac
