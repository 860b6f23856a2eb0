#!/usr/bin/env bash
# Builds baton's Debian package and its debug symbols:
#
#   scripts/deb.sh [--profile NAME] [--no-build] [--out DIR] [--fast]
#   dpkg -i target/debian/baton_*.deb
#
# It builds the binary (`cargo build --release -p baton`; --profile another
# profile, --no-build uses the one already built), has that binary write its
# man pages (`baton man --dir`, gzipped) and its bash, zsh and fish completion
# scripts into target/PROFILE/package/, checks that crates/baton/debian/baton.service
# is what this binary renders for the package's configuration, then runs
# `cargo deb --no-build --dbgsym`: DIR (default target/debian) gets
# baton_VERSION-1_ARCH.deb, the binary stripped, and
# baton-dbgsym_VERSION-1_ARCH.ddeb, its debug symbols under
# /usr/lib/debug/.build-id/. --fast compresses less (the package test).
#
# Needs cargo-deb (`cargo install cargo-deb --locked`) and objcopy (binutils).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
profile=release
build=1
out="$root/target/debian"
fast=()
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out="$2"; shift 2 ;;
    --fast) fast=(--fast); shift ;;
    *) echo "scripts/deb.sh: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
  esac
done
command -v cargo-deb >/dev/null 2>&1 || {
  echo "scripts/deb.sh: cargo-deb is not installed: cargo install cargo-deb --locked" >&2
  exit 2
}
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$profile" in
  dev) dir="$target/debug" ;;
  *) dir="$target/$profile" ;;
esac
[ "$build" = 0 ] || cargo build --locked -p baton --profile "$profile"
[ -x "$dir/baton" ] || { echo "scripts/deb.sh: no $dir/baton: build it first" >&2; exit 2; }

gen="$dir/package"
rm -rf "$gen"
mkdir -p "$gen/man" "$gen/completions"
"$dir/baton" man --dir "$gen/man" >/dev/null
gzip -9n "$gen/man/"*.1
gzip -9nc "$root/README.md" >"$gen/README.md.gz"
# Run by name from PATH, as the package's /usr/bin/baton is: each script
# then asks the `baton` the shell finds.
(
  cd /
  export PATH="$dir:$PATH"
  baton completions bash >"$gen/completions/baton"
  baton completions zsh >"$gen/completions/_baton"
  baton completions fish >"$gen/completions/baton.fish"
)

unit="$root/crates/baton/debian/baton.service"
if ! env -i PATH=/usr/bin:/bin "$dir/baton" render systemd \
  --config "$root/crates/baton/debian/baton.toml" \
  --config-path-as /etc/baton/baton.toml --bin /usr/bin/baton | cmp -s - "$unit"; then
  echo "scripts/deb.sh: $unit is not what this baton renders; render it again:" >&2
  echo "  $dir/baton render systemd --config crates/baton/debian/baton.toml --config-path-as /etc/baton/baton.toml --bin /usr/bin/baton > crates/baton/debian/baton.service" >&2
  exit 1
fi

if [ "$build" = 0 ]; then
  # The binary keeps what debug information its build gave it (at least its
  # symbols): a variable that turned that off for the build (such as
  # CARGO_PROFILE_DEV_DEBUG=0) must not make cargo deb skip the dbgsym file.
  unset "CARGO_PROFILE_$(printf %s "$profile" | tr 'a-z-' 'A-Z_')_DEBUG"
fi
mkdir -p "$out"
cargo deb --locked -p baton --no-build --profile "$profile" --dbgsym "${fast[@]}" --output "$out"
