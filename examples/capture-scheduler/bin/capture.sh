#!/bin/sh
# Stand-in for the seed's capture step (`capture_weekly.py`).
#   --register-only                 the daily job: register contracts only
#   --days N --max-calls M          the weekly job: also capture N days
# CAPTURE_FAKE chooses how it behaves: ok (default), fail (exit 1, retried),
# fatal (exit 2, never retried), flaky (fails the first two attempts), hang
# (never ends: the step timeout stops it).
set -eu
mode=${CAPTURE_FAKE:-ok}
echo "capture: occurrence ${BATON_OCCURRENCE:-?} run ${BATON_RUN_ID:-?} fence ${BATON_FENCE:-?} attempt ${BATON_ATTEMPT:-1}: $*"
case "$mode" in
  ok) ;;
  fail) echo "capture: broker session refused the login" >&2; exit 1 ;;
  fatal) echo "capture: bad arguments" >&2; exit 2 ;;
  flaky)
    if [ "${BATON_ATTEMPT:-1}" -le 2 ]; then
      echo "capture: broker timed out (attempt ${BATON_ATTEMPT:-1})" >&2; exit 1
    fi ;;
  hang) echo "capture: waiting on the broker forever"; while :; do sleep 60; done ;;
  *) echo "capture: unknown CAPTURE_FAKE=$mode" >&2; exit 2 ;;
esac
if [ "${1:-}" = "--register-only" ]; then
  echo "capture: registered 412 contracts"
else
  echo "capture: registered 412 contracts; captured 7 days (1,312 of at most 1,500 calls)"
fi
