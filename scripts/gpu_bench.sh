#!/usr/bin/env bash
# The gallery run (docs/gallery.md): `tcl bench` on the fixture models on a CUDA machine.
#
# Usage: OUT=/path/to/out bash scripts/gpu_bench.sh [fixture names, default: all six]
# Runs from the repository root without installing tcl (PYTHONPATH=.); needs torch with CUDA and
# libcst importable (on the H200 image: unpack the carried wheel first, see scripts/gpu_verify.sh).
# One `tcl bench` per file, so that a slow file cannot lose the others' results; attention.py is
# benchmarked with --unsafe-fixes (its padding-mask branch becomes torch.where only then).
# Writes $OUT/bench_<file>.json and $OUT/bench_<file>.txt, then $OUT/bench.json + bench.png.
set -uo pipefail
OUT=${OUT:?set OUT to a results folder}
PY=${PYTHON:-python3}
ITERS=${TCL_BENCH_ITERS:-100}
REPEATS=${TCL_BENCH_REPEATS:-5}
mkdir -p "$OUT"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
FILES=("$@")
[ ${#FILES[@]} -eq 0 ] && FILES=(loops mlp_debug attention moe_router losses train_step)
for file in "${FILES[@]}"; do
    extra=()
    [ "$file" = attention ] && extra=(--unsafe-fixes)
    timeout "${TCL_BENCH_FILE_LIMIT:-1800}" $PY -m tcl bench "fixtures/$file.py" --device cuda --modes default,reduce-overhead \
        --iters "$ITERS" --repeats "$REPEATS" --warmup 10 --json "$OUT/bench_$file.json" "${extra[@]}" \
        > "$OUT/bench_$file.txt" 2>&1
    tail -n 4 "$OUT/bench_$file.txt"
done
$PY - "$OUT" <<'PY'
import glob, json, os, sys
from tcl.bench import format_table, plot
out = sys.argv[1]
order = ["loops", "mlp_debug", "attention", "moe_router", "losses", "train_step"]
rows = []
for name in order:
    path = os.path.join(out, f"bench_{name}.json")
    if os.path.exists(path):
        rows += json.load(open(path))
json.dump(rows, open(os.path.join(out, "bench.json"), "w"), indent=2)
print(format_table(rows))
plot(rows, os.path.join(out, "bench.png"))
PY
