#!/usr/bin/env bash
# The training benchmarks of benchmarks/README.md in one short run, ending with one summary table.
#
#   bash benchmarks/run_all.sh [--data cifar10-jpg.tar.gz] [--out DIR] [--quick] [--dry-run]
#
# For a GPU machine with TensorFlow (pip install -e ".[test]": the post's ImageDataGenerator and
# train.py also need its tf_keras and scipy). --data defaults to ../shared/data/cifar10-jpg.tar.gz
# beside the checkout when it is there, else synthetic images. Each benchmark writes DIR/NAME.json
# and DIR/NAME.log (DIR: a new folder under /tmp); one that fails is marked in the table and the
# others still run. --quick: tiny sizes (a check that everything runs, not figures to record).
# --dry-run: print the commands only. Sized for under 10 minutes on one GPU. PYTHON picks the
# interpreter, GPUS the number of GPUs (default: as many as TensorFlow lists).
set -u -o pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
data=""
out=""
quick=0
dry_run=0
while [ $# -gt 0 ]; do
    case "$1" in
        --data) data="${2:?--data needs a path}"; shift 2 ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        --quick) quick=1; shift ;;
        --dry-run) dry_run=1; shift ;;
        -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run_all.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$data" ] && [ -f "$repo/../shared/data/cifar10-jpg.tar.gz" ]; then
    data="$repo/../shared/data/cifar10-jpg.tar.gz"
fi
if [ "$dry_run" = 0 ]; then
    if [ -z "$out" ]; then
        out="$(mktemp -d "${TMPDIR:-/tmp}/envcheck-benchmarks.XXXXXX")" || exit 2
    fi
    mkdir -p "$out" || exit 2
fi
cd "$repo" || exit 2
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

data_flag=()
if [ -n "$data" ]; then data_flag=(--data "$data"); fi
if [ "$quick" = 1 ]; then
    pipeline=(--images 256 --rounds 1)
    post=(--images 256 --val-images 64 --steps 2 --rounds 1)
    throughput=(--steps 2 --variants post,mixed)
else
    pipeline=(--images 20000 --rounds 5)
    post=(--images 20000 --val-images 1000 --steps 200 --rounds 3)
    throughput=(--steps 100)
fi
count_gpus='import tensorflow as tf; print(len(tf.config.list_physical_devices("GPU")))'
gpus="${GPUS:-$("$python" -c "$count_gpus" 2>/dev/null || echo 0)}"

# run NAME COMMAND...: NAME.json from stdout, NAME.log from stderr; a failure is noted, not fatal.
run() {
    local name="$1"
    shift
    echo "== $name: $*" >&2
    if [ "$dry_run" = 1 ]; then return 0; fi
    local started=$SECONDS
    "$@" >"$out/$name.json" 2>"$out/$name.log"
    local status=$?
    echo "   exit $status after $((SECONDS - started)) s" >&2
}

run input_pipeline "$python" benchmarks/input_pipeline.py "${pipeline[@]}" ${data_flag[@]+"${data_flag[@]}"} --json
run post_trainer "$python" benchmarks/post_trainer.py "${post[@]}" ${data_flag[@]+"${data_flag[@]}"} --json
if [ "$gpus" -ge 1 ]; then
    run train_throughput_1 "$python" benchmarks/train_throughput.py "${throughput[@]}" --gpus 1 --json
else
    run train_throughput_1 "$python" benchmarks/train_throughput.py "${throughput[@]}" --gpus 0 --json
fi
if [ "$gpus" -ge 2 ]; then
    run train_throughput_all "$python" benchmarks/train_throughput.py "${throughput[@]}" --json
elif [ "$dry_run" = 0 ]; then
    echo "fewer than 2 GPUs: the 1-GPU run is the all-GPU run" >"$out/train_throughput_all.skipped"
fi
run validate "$python" -m envcheck validate --train ${data_flag[@]+"${data_flag[@]}"} --json

# Multi-GPU scaling (envcheck validate --scaling): MiniGoogLeNet on 1..N GPUs at 64 per replica,
# the input pipeline alone, the all-reduce of its gradients, each GPU alone; the bottleneck named.
if [ "$quick" = 1 ]; then scaling=(--steps 2); else scaling=(--steps 30); fi
run validate_scaling "$python" -m envcheck validate --scaling "${scaling[@]}" --plot "${out:-DIR}/scaling.png" --json

# --- The trainer's speed options: the post's configuration (float32, no XLA, one step per call),
# what envcheck train chooses here, and each precision and XLA, per GPU and on all GPUs, held
# against the post's 794 images/s per Titan X and its 3.9x on four (summary.py prints both). What
# envcheck.train.speed chooses on a GPU (XLA_FASTER, the precision by compute capability) is
# checked against these figures.
if [ "$quick" = 1 ]; then
    speed_steps=(--steps 2)
    speed_variants=fp32,auto
else
    speed_steps=(--steps 200)
    speed_variants=fp32,auto,bf16,fp16,jit,bf16+jit
fi
speed_gpus=0
if [ "$gpus" -ge 1 ]; then speed_gpus=1; fi
run speed_1 "$python" benchmarks/train_throughput.py "${speed_steps[@]}" --gpus "$speed_gpus" \
    --variants "$speed_variants" --json
if [ "$gpus" -ge 2 ]; then
    run speed_all "$python" benchmarks/train_throughput.py "${speed_steps[@]}" --gpus "$gpus" --variants fp32,auto --json
elif [ "$dry_run" = 0 ]; then
    echo "fewer than 2 GPUs: no all-GPU figure to hold against the post's 3.9x on four" >"$out/speed_all.skipped"
fi

if [ "$dry_run" = 1 ]; then exit 0; fi
echo >&2
echo "results in $out" >&2
"$python" benchmarks/summary.py "$out"
"$python" -c 'import json, sys; print("scaling:", json.load(open(sys.argv[1]))["analysis"]["verdict"])' \
    "$out/validate_scaling.json" 2>/dev/null || echo "scaling: see $out/validate_scaling.log"
