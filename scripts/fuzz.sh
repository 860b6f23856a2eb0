#!/usr/bin/env bash
# The fuzzing campaign: every cargo-fuzz target in fuzz/ for SECONDS each
# (default 3600), all at once, each starting from its committed seeds
# (fuzz/seeds/TARGET) and growing its own corpus in fuzz/corpus/TARGET.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
#
# Needs the nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz --locked
#
# Each target's libFuzzer log goes to fuzz/logs/TARGET.log; a crash leaves
# its input in fuzz/artifacts/TARGET/ and makes this script exit 1 (replay:
# cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-…). The last
# lines print each target's runs, coverage and corpus size.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs=${1:-3600}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

cargo +nightly fuzz build -O
mkdir -p logs
pids=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  cargo +nightly fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 \
    >"logs/$t.log" 2>&1 &
  pids+=($!)
done

failed=0
for i in "${!targets[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed=1
  fi
done

printf '%-8s %12s %8s %8s %8s  %s\n' target runs cov ft corpus crashes
for t in "${targets[@]}"; do
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' || echo '?')
  last=$(grep -E '^#[0-9]+' "logs/$t.log" | tail -1)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
  crashes=$(find "artifacts/$t" -type f | wc -l)
  [ "$crashes" -eq 0 ] || failed=1
  printf '%-8s %12s %8s %8s %8s  %s\n' "$t" "$runs" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes"
done
exit "$failed"
