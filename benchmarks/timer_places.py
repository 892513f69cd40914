"""How a call's place in its round moves its time under the one timer (`tritonhook.measure.timing`), on one GPU.

    PYTHONPATH=$PWD python benchmarks/timer_places.py --arms 2,7 --out places.json

Every arm of a run is the same callable (an A/A of n arms): whatever separates their medians is the timer's. Per
kernel and arm count, one `bench_interleaved` run; each call's place in its round is known from `round_order`.
Printed per row: the median at each place over the median of all calls (the first place is the call right behind
the stream hold), the spread of the arms' medians (what the timer reports: every arm at every place alike), and
the spread the arms would show if each sat at places a and n-1-a only (the order the timer had before `round_order`:
A B C, C B A), pooled from the same calls. Kernels: a 2048-element add (µs), a 4096^3 bf16 GEMM, the bundled Hopper
attention at D=128 (fp8 non-causal S=1k, bf16 causal S=1k, bf16 non-causal S=16k; needs sm_90).
"""
from __future__ import annotations

import argparse
import json
import platform


def kernels(torch, names: list[str]) -> dict:
    """{name: (callable, inputs)} for the kernels asked for; the attention's as the Hopper tuner builds them
    (`hopper_attention_tune.inputs` and `our_call`, the build as shipped)."""
    import hopper_attention_tune as tune

    made = {}
    for name in names:
        if name == "add":
            made[name] = (lambda x: x + 1.0, (torch.randn(2048, device="cuda"),))
        elif name == "gemm":
            made[name] = (torch.matmul, tuple(torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
                                              for _ in range(2)))
        else:  # attention: attn-<dtype>-<causal|full>-<S>
            _, dtype, mask, seq = name.split("-")
            S, D, causal, fp8 = int(seq), 128, mask == "causal", dtype == "fp8"
            made[name] = (tune.our_call(D, causal, tune.AS_SHIPPED, fp8),
                          tune.inputs(*tune.shape(S, D), S, D, seed=S + D, fp8=fp8))
    return made


def places_row(samples: list[list[float]]) -> dict:
    """From one A/A run's samples (per arm, one per round): the median per place over the median of all calls,
    the arms' medians over it as the timer reports them, and as the order A B C, C B A would have."""
    from tritonhook.measure.stats import median
    from tritonhook.measure.timing import round_order

    arms, rounds = len(samples), len(samples[0])
    at_place = [[] for _ in range(arms)]
    for r in range(rounds):
        for place, arm in enumerate(round_order(r, arms)):
            at_place[place].append(samples[arm][r])
    overall = median([ms for arm in samples for ms in arm])
    by_place = [median(calls) / overall for calls in at_place]
    by_arm = [median(arm) / overall for arm in samples]
    alternating = [median(at_place[a] + at_place[arms - 1 - a]) / overall for a in range(arms)]
    return dict(arms=arms, rounds=rounds, median_ms=overall, by_place=by_place, by_arm=by_arm,
                alternating_order_by_arm=alternating)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default="add,gemm,attn-fp8-full-1024,attn-bf16-causal-1024,attn-bf16-full-16384")
    ap.add_argument("--arms", default="2,7", help="arm counts, comma-separated")
    ap.add_argument("--rep", type=float, default=400.0, help="timed milliseconds per arm")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import contextlib

    import torch

    from tritonhook.measure.timing import bench_interleaved

    rows = []
    for name, (fn, inputs) in kernels(torch, args.kernels.split(",")).items():
        for n in (int(x) for x in args.arms.split(",")):
            results = bench_interleaved([(contextlib.nullcontext, fn)] * n, inputs=inputs, rep_ms=args.rep,
                                        min_reps=8 * n)
            rows.append(dict(kernel=name, **places_row([r.samples_ms for r in results])))
            print(f"done {name} x{n}", flush=True)
    spread = lambda xs: f"{min(xs):.3f}-{max(xs):.3f}"
    print(f"\n{torch.cuda.get_device_name()} | A/A: n arms of one callable | medians over the median of all calls")
    print(f"{'kernel':<24} {'n':>2} {'rounds':>6} {'ms':>9} {'first place':>11} {'places':>11} {'arms':>11} "
          f"{'A B C, C B A':>12}")
    for r in rows:
        print(f"{r['kernel']:<24} {r['arms']:>2} {r['rounds']:>6} {r['median_ms']:>9.4f} {r['by_place'][0]:>11.3f} "
              f"{spread(r['by_place']):>11} {spread(r['by_arm']):>11} {spread(r['alternating_order_by_arm']):>12}")
    if args.out:
        meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, python=platform.python_version(),
                    rep_ms=args.rep)
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
