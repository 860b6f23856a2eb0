#!/usr/bin/env bash
# Renders examples/capture-scheduler/baton.toml into this directory, as it
# would be installed: the binary at /usr/local/bin/baton, the configuration
# at /etc/baton/baton.toml (its relative state_dir then is /etc/baton/state),
# a host in UTC, and an environment holding PATH only, so the renders do not
# depend on the checkout or on who runs this. The GitHub workflows name the
# configuration inside the repository, under the runner's checkout.
#
#   cargo build -p baton && deploy/capture-scheduler/render.sh [OUT]
#
# BATON names the binary that renders (default: target/debug/baton); OUT the
# directory (default: this one). The test `render_deploy_is_fresh` runs this
# script into a temporary directory and fails when the result differs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
baton="${BATON:-$root/target/debug/baton}"
out="${1:-$here}"
config="$root/examples/capture-scheduler/baton.toml"

render() {
  local dir="$1"
  shift
  local as=/etc/baton/baton.toml
  [ "$1" = github ] && as=examples/capture-scheduler/baton.toml
  rm -rf "${out:?}/$dir"
  env -i PATH=/usr/bin:/bin "$baton" render "$@" \
    --config "$config" \
    --config-path-as "$as" \
    --bin /usr/local/bin/baton \
    --host-tz UTC \
    --out "$out/$dir"
}

render cron cron
render cron-per-job cron --per-job
render systemd systemd
render systemd-per-job systemd --per-job
render github github
render env env
