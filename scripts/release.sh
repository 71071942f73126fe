#!/usr/bin/env bash
# scripts/release.sh: the release archives, as ripgrep's release workflow makes them: one
# .tar.gz per target holding the binary, its man pages, shell completions, the README,
# the licence, the example configs and dist/'s systemd unit and certbot hook, each with a
# .sha256 beside it and one SHA256SUMS for all.
#
#   x86_64-unknown-linux-gnu   the profile-guided build (scripts/build-pgo.sh, `dist`
#                              profile: fat LTO, stripped of symbols), the build bench/
#                              measures below nginx's CPU per request; --no-pgo for the
#                              plain `dist` build (about 6 minutes instead of 15).
#   aarch64-unknown-linux-gnu  the plain `dist` build, cross-compiled, where a cross
#                              toolchain is present or installs (rustup's target and
#                              Debian's gcc-aarch64-linux-gnu, as root); skipped with a
#                              message otherwise. Run under qemu-aarch64 when it is installed.
#
# Both link glibc dynamically (aws-lc, rustls's cryptography, is C); the oldest glibc the
# binary needs is printed and written in the archive's README.release.
#
# Usage: scripts/release.sh [--no-pgo] [--no-aarch64]     (out: target/archives/)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
PGO=1
AARCH64=1
for arg in "$@"; do
    case $arg in
        --no-pgo) PGO=0 ;;
        --no-aarch64) AARCH64=0 ;;
        *) echo "usage: scripts/release.sh [--no-pgo] [--no-aarch64]" >&2; exit 2 ;;
    esac
done
OUT=$REPO/target/archives
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
SLUICE_COMMIT=$(git rev-parse --short=12 HEAD)
export SLUICE_COMMIT
log() { echo "[release $(date +%H:%M:%S)] $*" >&2; }
rm -rf "$OUT"
mkdir -p "$OUT"

# glibc_needed BIN: the newest GLIBC_x.y symbol version BIN links against.
glibc_needed() {
    objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -n1 | sed 's/GLIBC_//'
}

# package TARGET BIN HOW: the archive for TARGET around BIN, built as HOW says.
package() {
    local target=$1 bin=$2 how=$3 name=sluice-$VERSION-$1
    local dir=$OUT/$name glibc
    glibc=$(glibc_needed "$bin")
    mkdir -p "$dir/doc" "$dir/complete" "$dir/dist"
    cp "$bin" "$dir/sluice"
    # Man pages and completions come from the host's binary: the same clap definitions.
    "$HOST_BIN" man --dir "$dir/doc" >/dev/null
    for shell in bash zsh fish; do
        "$HOST_BIN" completions "$shell" >"$dir/complete/sluice.$shell"
    done
    cp README.md LICENSE "$dir/"
    cp -r examples "$dir/examples"
    cp dist/sluice.service dist/certbot-deploy-hook "$dir/dist/"
    cat >"$dir/README.release" <<EOF
sluice $VERSION ($SLUICE_COMMIT) for $target
Built: $how, on $(date -u '+%Y-%m-%d') with $(rustc --version).
Needs: Linux with glibc $glibc or newer.
Install: copy sluice to /usr/local/bin, doc/*.1 to /usr/local/share/man/man1,
complete/ to your shell's completion directory; dist/sluice.service is the systemd unit.
EOF
    tar -C "$OUT" -czf "$OUT/$name.tar.gz" "$name"
    rm -rf "$dir"
    (cd "$OUT" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
    log "$name.tar.gz: $(du -h "$OUT/$name.tar.gz" | cut -f1), binary $(du -h "$bin" | cut -f1) ($(file -b "$bin" | grep -o 'not stripped\|stripped' | head -n1)), glibc >= $glibc ($how)"
}

# The host's binary: profile-guided or plain.
if (( PGO )); then
    log "x86_64: profile-guided build (scripts/build-pgo.sh)"
    PROFILE=dist scripts/build-pgo.sh
    HOST_BIN=$REPO/target/pgo/dist/sluice
    HOW="profile-guided (scripts/build-pgo.sh), dist profile"
else
    log "x86_64: dist profile"
    cargo build --locked --profile dist -p sluice
    HOST_BIN=$REPO/target/dist/sluice
    HOW="dist profile"
fi
"$HOST_BIN" --version
package x86_64-unknown-linux-gnu "$HOST_BIN" "$HOW"

# aarch64, cross-compiled where the toolchain is here or installs.
aarch64_toolchain() {
    rustup target list --installed | grep -qx aarch64-unknown-linux-gnu \
        || rustup target add aarch64-unknown-linux-gnu >&2 || return 1
    command -v aarch64-linux-gnu-gcc >/dev/null && return 0
    (( EUID == 0 )) && command -v apt-get >/dev/null || return 1
    log "installing gcc-aarch64-linux-gnu (Debian's cross compiler)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu libc6-dev-arm64-cross >&2
}
if (( AARCH64 )); then
    if aarch64_toolchain; then
        log "aarch64: dist profile, cross-compiled"
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
            CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
            AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar \
            cargo build --locked --profile dist -p sluice --target aarch64-unknown-linux-gnu
        ARM_BIN=$REPO/target/aarch64-unknown-linux-gnu/dist/sluice
        if command -v qemu-aarch64 >/dev/null; then
            qemu-aarch64 -L /usr/aarch64-linux-gnu "$ARM_BIN" --version
        fi
        package aarch64-unknown-linux-gnu "$ARM_BIN" "dist profile, cross-compiled"
    else
        log "aarch64: skipped (no cross toolchain: rustup target add aarch64-unknown-linux-gnu and apt-get install gcc-aarch64-linux-gnu)"
    fi
fi

(cd "$OUT" && cat ./*.sha256 >SHA256SUMS && sha256sum --check --quiet SHA256SUMS)
log "done: $(ls "$OUT")"
