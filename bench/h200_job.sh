#!/usr/bin/env bash
# The H200 runs behind bench/results/*_h200* and e2e_cuda*, from the repository root on the lent GPU machine, after
# the landing calls (see bench/h200_setup.sh). Usage: bash bench/h200_job.sh STEP... with steps
#   tests           every gpu-marked test                                  -> $OUT/gpu_tests.log
#   e2e             bench_e2e.py: both prompt sets, budgets 8-256 + auto  -> $OUT/e2e_cuda.{md,json}
#   unfused         fused vs unfused target forward, T=0                  -> $OUT/fused_vs_unfused/
#   profile         per-stage graphed times and kernels by name, budget 32 -> $OUT/profile_round.txt
#   notebooks       every notebook but 05 (SGLang's wheel is cp311 only)  -> $OUT/notebooks_h200.md
#   counterfactual  one run at budget 1024 vs real runs at 8-256          -> $OUT/counterfactual_cuda.*
#   reference       the public reference (.reference/ddtree, carried) vs ours -> $OUT/reference_h200.{md,json}
#   e2eoverlap      bench_e2e.py --compare-overlap, 2 prompts a set, budgets 32 128 auto -> $OUT/overlap/e2e_cuda.*
#   decode          bench_decode_linear.py --pdl --sweep: decode kernels' target forward (PDL on/off) vs cuBLAS'
#                                                                           -> $OUT/decode_linear.md
#   treeprofile     profile_tree_build.py --sweep: graphed tree stage per budget, kernels, launch settings
#                                                                           -> $OUT/tree_build_profile.md
#   e2equick        bench_e2e.py, 4 prompts a set, budgets 16-128 + auto (E2E_DRAFTER=DIR: another drafter,
#                   E2E_DECODE_ROWS=N: decode kernels up to N rows, E2E_AUTO_MARGIN=F: auto's margin, E2E_OUT=NAME:
#                   $OUT/NAME instead of $OUT/quick)
#                                                                           -> $OUT/quick/e2e_cuda.*
#   exact           bit-exact mode: check_exact.py (16 prompts x 256 tokens, batch 4 then 1) and its cost
#                   (bench_e2e.py --exact, T=0, budget 128, 2 prompts a set) -> $OUT/exact_h200.*, $OUT/exact_cost/
set -uo pipefail
source bench/h200_setup.sh
for step in "$@"; do
  case $step in
    tests) skip=()  # without the widget wheels (bench/stage_device_wheels.sh) the view and notebook tests cannot load
           python3 -c "import ipywidgets" 2>/dev/null || for f in analysis browser escaping notebooks report training \
             widgets widgets_sweep; do skip+=("--ignore=tests/test_$f.py"); done
           timeout 300 python3 -P -m pytest -m gpu -q -p no:cacheprovider "${skip[@]}" tests 2>&1 \
             | tee "$OUT/gpu_tests.log" | tail -15 ;;
    e2e) timeout 420 python3 -P bench/bench_e2e.py --skip-hf --out "$OUT" 2>&1 | tail -45 ;;
    unfused) timeout 240 python3 -P bench/bench_e2e.py --skip-hf --compare-unfused --budgets 32 128 auto \
               --temperatures 0 --out "$OUT/fused_vs_unfused" 2>&1 | tail -25 ;;
    profile) timeout 200 python3 -P bench/profile_round.py --methods ar dflash ddtree --budget 32 --kernels 2>&1 \
               | tee "$OUT/profile_round.txt" | tail -30 ;;
    notebooks) timeout 400 python3 -P bench/run_notebooks.py --out "$OUT/notebooks_h200.md" 01_explore_trees.ipynb \
                 02_greedy_vs_sampled.ipynb 03_debug_padding_masks.ipynb 04_budget_sweep.ipynb \
                 06_why_trees_win.ipynb 2>&1 | grep -v "TCP without encryption" | tail -12 ;;
    counterfactual) timeout 400 python3 -P bench/bench_counterfactual.py --device cuda --dtype bfloat16 --backend native --prompts 8 \
                      --max-new-tokens 128 --out "$OUT" 2>&1 | tail -25 ;;
    reference) timeout 450 python3 -P bench/bench_reference.py --reference-dir .reference/ddtree --out "$OUT" 2>&1 \
                 | grep -v "it/s]" | tail -40 ;;
    exact) timeout 210 python3 -P bench/check_exact.py --batches 4 1 --out "$OUT" 2>&1 | grep -v "it/s]" | tail -14
           timeout 90 python3 -P bench/bench_e2e.py --skip-hf --exact --budgets 128 --temperatures 0 --prompts 2 \
             --out "$OUT/exact_cost" 2>&1 | tail -14 ;;
    e2eoverlap) timeout 300 python3 -P bench/bench_e2e.py --skip-hf --compare-overlap --prompts 2 --budgets 32 128 auto \
                  --out "$OUT/overlap" 2>&1 | tail -10 ;;
    decode) timeout 450 python3 -P bench/bench_decode_linear.py --pdl --sweep --out "$OUT" 2>&1 | tail -90 ;;
    treeprofile) timeout 300 python3 -P bench/profile_tree_build.py --sweep --out "$OUT" 2>&1 | tail -60 ;;
    e2equick) timeout 300 python3 -P bench/bench_e2e.py --skip-hf --prompts 4 --budgets 16 32 64 128 auto \
                ${E2E_DRAFTER:+--drafter "$E2E_DRAFTER"} ${E2E_DECODE_ROWS:+--decode-rows "$E2E_DECODE_ROWS"} \
                ${E2E_AUTO_MARGIN:+--auto-margin "$E2E_AUTO_MARGIN"} --out "$OUT/${E2E_OUT:-quick}" 2>&1 | tail -8 ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
