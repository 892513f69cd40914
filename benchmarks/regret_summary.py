"""The table of `benchmarks/sweep_regret_h200.sh`: per workload, the sweep's rows (autotuned ones at the config the
workload ran), the fidelity at that same config, every autotune regret the replay found with why the autotuner
missed it, the in-workload confirmation of those pinned, and the A/A's rows and candidates. Reads the JSON the
script left in a folder, prints a table and writes `regret_summary.json` there.

    python benchmarks/regret_summary.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def summarize(sweep: dict, aa: dict | None, confirm: dict | None) -> dict:
    rows = sweep["rows"]
    tuned = [r for r in rows if (r.get("autotune") or {}).get("configs")]
    regrets = [{"kernel": r["label"], "workload": r["autotune"]["workload"], **r["autotune"]["regret"],
                "against_workload": (r["autotune"].get("against_workload") or {}).get(
                    str(r["autotune"]["regret"]["signature"]))}
               for r in tuned if (r["autotune"].get("regret") or {}).get("verdict") == "faster"]
    fidelity = sweep.get("fidelity") or {}
    found = {"rows": len(rows), "ok": sum(r["status"] == "ok" for r in rows), "autotuned": len(tuned),
             "candidates": len(sweep.get("candidates", [])), "times_s": sweep.get("times_s"),
             "fidelity": {k: fidelity.get(k) for k in ("signatures", "within", "share", "median_ratio")},
             "off": [{"kernel": r["label"], "fidelity": r.get("fidelity"), "lead_ms": r.get("lead_ms"),
                      "recorded_us": r["recorded_ms"] * 1e3 if r.get("recorded_ms") else None,
                      "autotuned": bool((r.get("autotune") or {}).get("configs")), "miss": r.get("miss")}
                     for r in rows if r.get("fidelity") and abs(r["fidelity"] - 1) > 0.1],
             "regrets": regrets}
    if aa is not None:
        def no_difference(items):
            verdicts = [r["variants"][1]["verdict"] for r in items if r["status"] == "ok" and len(r["variants"]) > 1]
            return {"no_difference": sum(v in ("no difference", "SASS identical") for v in verdicts),
                    "of": len(verdicts)}
        found["aa"] = {"rows": no_difference(aa["rows"]), "candidates": no_difference(aa.get("candidates", [])),
                       "times_s": aa.get("times_s")}
    if confirm is not None:
        found["confirm"] = [{k: p[k] for k in ("kernel", "tuning_key", "config", "replay", "ratio", "low", "high",
                                               "verdict", "pinned_ran", "confirmed", "picks", "ms")}
                            for p in confirm["pins"]]
        found["confirm_step"] = confirm["step"]
    return found


def main(out: Path) -> None:
    summary = {}
    for sweep_file in sorted(out.glob("*_sweep.json")):
        name = sweep_file.name.removesuffix("_sweep.json")
        sweep = _load(sweep_file)
        if sweep is None:
            summary[name] = {"error": f"{sweep_file.name}: no sweep result"}
            continue
        summary[name] = summarize(sweep, _load(out / f"{name}_aa.json"), _load(out / f"{name}_confirm.json"))
    (out / "regret_summary.json").write_text(json.dumps(summary, indent=1))
    print(f"{'workload':<22} {'rows':>5} {'tuned':>5} {'fid. within':>12} {'regrets':>8} {'A/A rows':>9} "
          f"{'A/A cand.':>10} {'record/build/replay s':>22}")
    for name, s in summary.items():
        if "error" in s:
            print(f"{name:<22} {s['error']}")
            continue
        fid, aa = s["fidelity"], s.get("aa") or {}
        split = "/".join(f"{v:.0f}" for v in (s["times_s"] or {}).values())
        aa_rows = f"{aa['rows']['no_difference']}/{aa['rows']['of']}" if aa else "-"
        aa_cand = f"{aa['candidates']['no_difference']}/{aa['candidates']['of']}" if aa else "-"
        print(f"{name:<22} {s['rows']:>5} {s['autotuned']:>5} {fid['within']}/{fid['signatures']:<10} "
              f"{len(s['regrets']):>8} {aa_rows:>9} {aa_cand:>10} {split:>22}")
        for regret in s["regrets"]:
            checked = regret.get("against_workload") or {}
            paired = (f"; on one input set {checked['ratio']:.3f} [{checked['low']:.3f}, {checked['high']:.3f}]"
                      if checked.get("ratio") is not None else "")
            print(f"   regret {regret['kernel'][:50]}: {regret['config']} x{regret['ratio']:.3f} "
                  f"[{regret['low']:.3f}, {regret['high']:.3f}] (workload: {regret['workload']}){paired}, "
                  f"outputs {checked.get('outputs', '-')}; why: {'; '.join(regret['why']) or '-'}")
        for pin in s.get("confirm", []):
            ratio = "-" if pin["ratio"] is None else f"{pin['ratio']:.3f} [{pin['low']:.3f}, {pin['high']:.3f}]"
            print(f"   confirm {pin['kernel']} [{', '.join(pin['tuning_key'])}]: in the workload {ratio} "
                  f"{pin['verdict']}, pinned ran: {pin['pinned_ran']}, confirmed: {pin['confirmed']}; "
                  f"autotuner picks {len(set(pin['picks']))} config(s) in {len(pin['picks'])} cold runs")
        for off in s["off"]:
            why = (off.get("miss") or {}).get("why", "not in the 90% set")
            print(f"   off ±10%: {off['kernel'][:60]} {off['fidelity']:.3f}: {why}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
