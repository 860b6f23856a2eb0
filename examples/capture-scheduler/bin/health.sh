#!/bin/sh
# Stand-in for `python -m research_platform health`: HEALTH_FAKE=loss makes
# it report a LOSS (exit 1); a check is never retried.
set -eu
case "${HEALTH_FAKE:-ok}" in
  ok) echo "health: OK (412 contracts, no gaps)" ;;
  loss) echo "health: LOSS: 3 contracts have no candles for 2 days" >&2; exit 1 ;;
  *) echo "health: unknown HEALTH_FAKE" >&2; exit 2 ;;
esac
