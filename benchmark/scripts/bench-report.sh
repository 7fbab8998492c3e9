#!/usr/bin/env bash
# The benchmark report: docs/bench-results.md and docs/bench.svg, from the
# results of `cargo bench -p aqs-benchmark` (the semaphore and mutex suites)
# and of bench-jdk.sh under TARGET ($CARGO_TARGET_DIR, by default
# target/bench).
#
#   benchmark/scripts/bench-report.sh          report the results already there
#   benchmark/scripts/bench-report.sh --run    run both Rust suites and both JDK anchors first
#   AQS_BENCH_QUICK=1 benchmark/scripts/bench-report.sh --run    the same, quick
#
# The rendering is bench_report.py (python3, standard library only).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/bench}

case "${1:-}" in
  "") ;;
  --run)
    cargo bench -p aqs-benchmark
    bash benchmark/scripts/bench-jdk.sh
    ;;
  *)
    sed -n '2,11p' "$0"
    exit 2
    ;;
esac
python3 benchmark/scripts/bench_report.py --target "${CARGO_TARGET_DIR}"
