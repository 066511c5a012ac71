#!/usr/bin/env bash
# `tcl verify` of the bundled fixtures on a CUDA machine with the inductor backend.
#
# What it needs on that machine (nothing is pip-installed; tcl runs from this working tree):
#   * python with a CUDA build of torch (written for the H200 image: Python 3.12, torch 2.11,
#     triton; triton compiles a small C launcher at first use, so a C compiler (gcc) must exist);
#   * libcst, for the static half of `tcl verify` (tcl/cli.py imports the analyzer; the
#     child processes that run the examples, tcl/verify/child.py, need only torch).  If
#     `import libcst` fails, this script unpacks a carried wheel into a temporary directory and
#     puts it on PYTHONPATH: a cp312 manylinux x86_64 wheel, e.g.
#     libcst-1.7.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl, found in
#     $LIBCST_WHEEL (a file) or in $TCL_WHEELS (a folder, default build/tcl_verify_wheels).
#     Its dependency pyyaml is not needed: tcl never imports libcst's codemod/yaml parts.
#   * nothing else: no network, no compiler beyond triton's, no extra packages.
#
# Usage (from anywhere; OUT is where the results go):
#   OUT=/path/to/out bash scripts/gpu_verify.sh [extra `tcl verify` options, e.g. --jobs 4]
# It runs, from the repository root and without installing tcl:
#   PYTHONPATH=. python -m tcl verify fixtures/ --device cuda --backend inductor --format json \
#       --jobs 8 > $OUT/verify_cuda.json
# Writes $OUT/verify_cuda.json (the JSON report, with per-example wall time in examples[].seconds),
# $OUT/verify_cuda.stderr (progress lines, one per example) and $OUT/verify_cuda_env.txt.
# Exit status: tcl verify's (0 all confirmed or explained, 1 problems, 2 usage error).
# Environment: PYTHON (default python, else python3); TCL_JOBS (worker processes, default 8:
# compiling is CPU-bound, and on the 16-core one-H200 machine 8 workers sharing the GPU took
# 148 s for the 44 fixture examples, 4 took 251 s; `tcl verify` alone defaults to one worker per
# GPU); TCL_VERIFY_LIMIT (seconds for the whole run, default 570: then it is interrupted and the
# JSON report holds the examples that finished, with environment.interrupted = true).

set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:?set OUT to a writable directory}"
mkdir -p "$OUT"
PYTHON=${PYTHON:-$(command -v python || command -v python3)}
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"

if ! "$PYTHON" -c "import libcst" 2>/dev/null; then
  wheel=${LIBCST_WHEEL:-$(ls "${TCL_WHEELS:-build/tcl_verify_wheels}"/libcst-*.whl 2>/dev/null | head -n 1)}
  if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
    echo "gpu_verify: libcst is not importable and no wheel was found (LIBCST_WHEEL / TCL_WHEELS)" >&2
    exit 2
  fi
  site=$(mktemp -d)
  "$PYTHON" -m zipfile -e "$wheel" "$site" || exit 2
  export PYTHONPATH="$site:$PYTHONPATH"
  echo "gpu_verify: using libcst from $wheel" >&2
fi

{
  "$PYTHON" - <<'EOF'
import sys, libcst, torch
from importlib import metadata
try:
    libcst_version = metadata.version("libcst")
except metadata.PackageNotFoundError:
    libcst_version = "?"
print("python", sys.version.split()[0], "| torch", torch.__version__, "| libcst", libcst_version)
print("cuda", torch.cuda.is_available(), torch.version.cuda, [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
EOF
  nproc 2>/dev/null | sed 's/^/cpus /'
} > "$OUT/verify_cuda_env.txt" 2>&1
cat "$OUT/verify_cuda_env.txt" >&2

start=$(date +%s)
timeout --signal=INT --kill-after=20 "${TCL_VERIFY_LIMIT:-570}" \
  "$PYTHON" -m tcl verify fixtures/ --device cuda --backend inductor --format json --jobs "${TCL_JOBS:-8}" "$@" \
  > "$OUT/verify_cuda.json" 2> "$OUT/verify_cuda.stderr"
rc=$?
echo "gpu_verify: tcl verify exited $rc after $(( $(date +%s) - start ))s" | tee -a "$OUT/verify_cuda.stderr" >&2

"$PYTHON" - "$OUT/verify_cuda.json" <<'EOF' >&2 || tail -n 40 "$OUT/verify_cuda.stderr" >&2
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(1)  # no report: the stderr tail is shown instead
env = report["environment"]
print(f"torch {env['torch']} on {env['device']}, backend {env['backend']}: {env['examples']} examples, "
      f"{env['wall_seconds']}s wall, jobs {env['jobs']}")
cols = ("examples", "errors", "seconds", "startup", "confirmed", "not-confirmed", "shadowed", "not-reached", "missed", "recompiles")
print(f"{'file':32}" + "".join(f" {c:>13}" for c in cols))
for row in report["summary"]:
    print(f"{row['file']:32}" + "".join(f" {row[c]:>13}" for c in cols))
for e in report["examples"]:
    if e["status"] != "ok":
        print("problem:", e["name"], e["status"], e["error"])
EOF
exit "$rc"
