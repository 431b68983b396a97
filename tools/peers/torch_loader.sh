#!/usr/bin/env bash
# The dspack Python package against PyTorch's loaders, issue 13's T1-T5 (tools/peers/torch_loader.py
# says what each is), ratios side by side in one run, medians of ROUNDS.
#   tools/peers/torch_loader.sh [SAMPLES=5000] [ROUNDS=3]
# Needs root (drop_caches, FUSE) and a built build/ (dspack, dsbench, the Python package in
# build/python). Datasets are made once under $BENCH_DIR (default /tmp/dspack-bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-5000}
ROUNDS=${2:-3}
export DSPACK=${DSPACK:-$PWD/build/pack/dspack}
export DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
export DSPACK_PYTHONPATH=${DSPACK_PYTHONPATH:-$PWD/build/python}
export W=${BENCH_DIR:-/tmp/dspack-bench}
source tools/peers/lib.sh
bench_tree
exec /usr/bin/python3 tools/peers/torch_loader.py "$N" "$ROUNDS"
