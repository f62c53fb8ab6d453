#!/usr/bin/env bash
# GPU checks, run on the lent GPU machine from the repository root (never by the tests or CI):
#   read time and peak GPU memory at 128K and 1M tokens, and the passkey at 128K, for the bundled model,
#   and the 128K read of a random-weight model of Llama 3.2 1B's shape.
# Nothing can be fetched there and at most 64 MiB travel per call, so the pieces come in ignored folders:
#   .whl/   wheels of what the machine lacks: transformers 5.23, gguf, platformdirs, sqlite-utils, sqlite-fts4,
#           click-default-group and needlehaystack (the machine's own torch runs them)
#   .gpu1/ .gpu2/ .gpu3/  the bundled GGUF file in three parts (split -b), with its SHA-256 in .gpu3/sha256;
#   carried folders do not outlast their call, so the calls before this one copy their part to /tmp/gguf-parts
# Results go to $OUT (at most 8 files come back): gpu.txt, log.txt and one JSON-lines file per run.
set -u
OUT=${OUT:-/tmp/gpu-out}
WORK=/tmp/gpu-work
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 INFINIPOT_HOME=$WORK/home
exec > >(tee "$OUT/log.txt") 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/pp && ln -sfn "$PWD" /tmp/pp/infinipot
export PYTHONPATH=/tmp/site:/tmp/pp
mkdir -p /tmp/gguf-parts && cp .gpu3/part-* /tmp/gguf-parts/
cat /tmp/gguf-parts/part-* > "$WORK/smollm2.gguf"
(cd "$WORK" && sha256sum -c "$OLDPWD/.gpu3/sha256") || exit 1
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  python3 -c "import flash_attn; print('flash_attn', flash_attn.__version__)" 2>&1 | tail -1
  nproc
} | tee "$OUT/gpu.txt"
IP="python3 -m infinipot.app.cli --device cuda"
MODEL=$WORK/smollm2.gguf
step() {  # name, seconds, command...: run with a time limit, copy its JSON lines to $OUT/name.jsonl
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date +%T), limit ${limit}s)"
  local began=$SECONDS
  timeout "$limit" "$@" --out "$WORK/$name"
  echo "== $name: exit $? after $((SECONDS - began)) s"
  cat "$WORK/$name"/*.jsonl > "$OUT/$name.jsonl" 2>/dev/null
}
step niah-128k 130 $IP bench niah --model "$MODEL" --lengths 128k --depths 0.1,0.5,0.9 --trials 1 \
  --methods infinipot --evidence-pot 0
step niah-1m 150 $IP bench niah --model "$MODEL" --lengths 1m --depths 0.5 --trials 1 --methods infinipot --evidence-pot 0
step speed-128k 90 $IP bench speed --model "$MODEL" --lengths 128k --methods infinipot --repeats 1
CONVERTED=$(dirname "$(ls "$INFINIPOT_HOME"/models/*/config.json | head -1)")
timeout 50 python3 -m benchmarks.gpu.random_model --shape llama-3.2-1b --tokenizer-from "$CONVERTED" --out "$WORK/rnd-1b"
step speed-128k-random-1b 90 $IP bench speed --model "$WORK/rnd-1b" --lengths 128k --methods infinipot --repeats 1
echo "== done $(date +%T)"
