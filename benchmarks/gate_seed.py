"""The seeded slowdown of the gate's proof (docs/check.md#on-the-h200): a decisions file that renames one recorded
kernel `cutlass_`, keyed exactly as `tritonhook decisions` keys it, so that recording the same workload again with
`--apply` gives a current run in which that one kernel regressed (the fp32 FFMA matmul of
benchmarks/workloads/own_kernels.py: 3.8% slower renamed on the H200) and every other build is identical.

    python benchmarks/gate_seed.py --store S --recording ID --kernel matmul_kernel --constexpr PRECISION=ieee -o seed.json
"""

import argparse
import json

from tritonhook import __version__
from tritonhook.decisions.keep import capture_key
from tritonhook.decisions.model import Choice, Decision, Evidence, file_json
from tritonhook.store import Store
from tritonhook.sweep import load


def seed(store: Store, recording: str, kernel: str, constexprs: dict, name: str) -> Decision:
    """The decision renaming the build of `kernel` in `recording` whose constexprs include `constexprs` (one
    build, launched by one or more signatures); its evidence says it is a seed, not a measurement."""
    loaded = load(store, recording)
    chosen = {s.capture_id: s for s in loaded.signatures if s.kernel == kernel and s.capture_id is not None
              and all(str(s.constexprs.get(k)) == v for k, v in constexprs.items())}
    if len(chosen) != 1:
        raise SystemExit(f"recording {loaded.id}: {len(chosen)} builds of {kernel} with {constexprs}, want 1")
    chosen = list(chosen.values())
    capture = store.get(chosen[0].capture_id)
    key = capture_key(store, capture, loaded.device)
    evidence = Evidence(kernel, 1.0, None, None, "seeded for the gate's proof", "-", __version__, "seed", None)
    return Decision(key, Choice(name), evidence)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--recording", required=True)
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                        help="picks the build among the kernel's specializations (repeatable)")
    parser.add_argument("--name", default="cutlass_", help="the name prefix the decision applies")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    decision = seed(Store(args.store), args.recording, args.kernel,
                    dict(item.split("=", 1) for item in args.constexpr), args.name)
    with open(args.output, "w") as out:
        json.dump(file_json([(decision, None)], __version__), out, indent=1)
    print(f"seeded {decision.choice.label} for {decision.evidence.kernel} {decision.key.short}")


if __name__ == "__main__":
    main()
