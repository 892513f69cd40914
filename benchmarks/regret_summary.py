"""The table of `benchmarks/sweep_regret_h200.sh`: per workload, the sweep's rows (autotuned ones at the config the
workload ran), the fidelity at that same config, every autotune regret the replay found with why the autotuner
missed it, the in-workload confirmation of those pinned, the A/A's rows and candidates, the rounds each row took and
why it stopped, and where a `NAME_fixed.json` (a --fixed-rounds replay of the same recording) lies beside them, how
often the adaptive rule's verdicts agree with it, and where `NAME_DIRT.json` files (its recording replayed on another
--l2-dirt) lie there, their fidelity, and with a dirty and a clean one what each dirt threshold makes of it. Reads
the JSON the script left in a folder, prints a table and writes `regret_summary.json` there.

    python benchmarks/regret_summary.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import dirt_threshold
from tritonhook import config
from tritonhook.decisions.confirmation import STANDINGS, PinConfirmation
from tritonhook.sweep.result import cached_pick_counts


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _verdict(row: dict) -> str:
    return row["variants"][1]["verdict"] if row["status"] == "ok" and len(row["variants"]) > 1 else row["status"]


def agreement(adaptive: dict, fixed: dict) -> dict:
    """A replay of the same recording with --fixed-rounds against the adaptive one: how many rows and candidates
    got the same verdict, and the rounds and replay seconds each spent. Another recording's replay matches no
    signature by id, so it is said rather than read as agreement over nothing."""
    if adaptive.get("recording_id") != fixed.get("recording_id"):
        return {"other_recording": {"sweep": adaptive.get("recording_id"), "fixed": fixed.get("recording_id")}}
    found = {"replay_s": {"adaptive": adaptive["times_s"].get("replay"), "fixed": fixed["times_s"].get("replay")}}
    for key in ("rows", "candidates"):
        theirs = {r["signature"]: r for r in fixed.get(key, [])}
        pairs = [(r, theirs[r["signature"]]) for r in adaptive.get(key, []) if r["signature"] in theirs]
        found[key] = {"same_verdict": sum(_verdict(a) == _verdict(f) for a, f in pairs), "of": len(pairs),
                      "rounds": {"adaptive": sum(a.get("rounds") or 0 for a, _ in pairs),
                                 "fixed": sum(f.get("rounds") or 0 for _, f in pairs)}}
    return found


def rounds_spent(result: dict) -> dict:
    """Rounds per row and candidate, and why they stopped, as counts."""
    return {key: dict(Counter(f"{r.get('rounds')} {r.get('stopped')}" for r in result.get(key, []))) for key in
            ("rows", "candidates")}


def stage_split(times_s: dict | None) -> str:
    """record/build/replay/checks seconds of a sweep's `times_s` (the check replays summed)."""
    times = times_s or {}
    checks = sum(seconds for stage, seconds in times.items() if stage.endswith("check"))
    return "/".join(f"{seconds:.0f}" for seconds in
                    (times.get("record", 0), times.get("build", 0), times.get("replay", 0), checks))


def _no_difference(items: list[dict]) -> dict:
    verdicts = [r["variants"][1]["verdict"] for r in items if r["status"] == "ok" and len(r["variants"]) > 1]
    return {"no_difference": sum(v in ("no difference", "SASS identical") for v in verdicts), "of": len(verdicts)}


def _off(rows: list[dict]) -> list[dict]:
    """The rows outside ±10% of their in-workload time, with what the miss check found."""
    return [{"kernel": r["label"], "fidelity": r.get("fidelity"), "lead_ms": r.get("lead_ms"),
             "recorded_us": r["recorded_ms"] * 1e3 if r.get("recorded_ms") else None, "l2_dirt": r.get("l2_dirt"),
             "autotuned": bool((r.get("autotune") or {}).get("configs")), "miss": r.get("miss")}
            for r in rows if r.get("fidelity") and abs(r["fidelity"] - 1) > 0.1]


def on_other_dirt(sweep: dict, other: dict) -> dict:
    """A replay of the sweep's recording on another --l2-dirt (the script's DIRTS): its fidelity, its misses, its
    A/A verdicts, and each row's ratio in both."""
    fidelity = other.get("fidelity") or {}
    ratios = {r["label"]: r.get("fidelity") for r in other["rows"]}
    return {"l2_dirt": other.get("l2_dirt"), "recording": other.get("recording_id"),
            "fidelity": {k: fidelity.get(k) for k in ("signatures", "within", "share", "median_ratio")},
            "off": _off(other["rows"]), "aa": _no_difference(other["rows"]),
            "ratios": {r["label"]: [r.get("fidelity"), ratios.get(r["label"])] for r in sweep["rows"]}}


def summarize(sweep: dict, aa: dict | None, confirm: dict | None, fixed: dict | None = None,
              dirts: dict[str, dict] | None = None) -> dict:
    """`dirts`: replays of the sweep's recording by --l2-dirt (`NAME_DIRT.json`), where the script made them."""
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
             "off": _off(rows),
             "regrets": regrets, "rounds": rounds_spent(sweep),
             "cached_picks": dict(zip(("rows", "other_pick"), cached_pick_counts([r["autotune"] for r in tuned])))}
    if fixed is not None:
        found["fixed_rounds"] = agreement(sweep, fixed)
    if aa is not None:
        found["aa"] = {"rows": _no_difference(aa["rows"]), "candidates": _no_difference(aa.get("candidates", [])),
                       "times_s": aa.get("times_s"), "rounds": rounds_spent(aa)}
    if dirts:
        found["dirts"] = {dirt: on_other_dirt(sweep, replayed) for dirt, replayed in dirts.items()}
    if dirts and {"dirty", "clean"} <= set(dirts):
        rows = dirt_threshold.rows_of(dirts["dirty"], dirts["clean"])
        found["thresholds"] = {"rows": len(rows), "within": {str(t): dirt_threshold.within_at(rows, t)
                                                             for t in dirt_threshold.THRESHOLDS}}
    if confirm is not None:
        found["confirm"] = confirm["pins"]  # each as `decisions confirm` saved it
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
        summary[name] = summarize(sweep, _load(out / f"{name}_aa.json"), _load(out / f"{name}_confirm.json"),
                                  _load(out / f"{name}_fixed.json"),
                                  {dirt: replayed for dirt in config.sweep.L2_DIRT
                                   if (replayed := _load(out / f"{name}_{dirt}.json")) is not None})
    (out / "regret_summary.json").write_text(json.dumps(summary, indent=1))
    print(f"{'workload':<22} {'rows':>5} {'tuned':>5} {'fid. within':>12} {'regrets':>8} {'A/A rows':>9} "
          f"{'A/A cand.':>10} {'record/build/replay/checks s':>29}")
    for name, s in summary.items():
        if "error" in s:
            print(f"{name:<22} {s['error']}")
            continue
        fid, aa = s["fidelity"], s.get("aa") or {}
        split = stage_split(s["times_s"])
        aa_rows = f"{aa['rows']['no_difference']}/{aa['rows']['of']}" if aa else "-"
        aa_cand = f"{aa['candidates']['no_difference']}/{aa['candidates']['of']}" if aa else "-"
        print(f"{name:<22} {s['rows']:>5} {s['autotuned']:>5} {fid['within']}/{fid['signatures']:<10} "
              f"{len(s['regrets']):>8} {aa_rows:>9} {aa_cand:>10} {split:>29}")
        for dirt, other in (s.get("dirts") or {}).items():
            print(f"   --l2-dirt {dirt} (recording {other['recording']}): {other['fidelity']['within']}/"
                  f"{other['fidelity']['signatures']} within, A/A {other['aa']['no_difference']}/{other['aa']['of']}; "
                  f"misses: " + ", ".join(f"{m['kernel'][:40]} {m['fidelity']:.3f} (probe {m['l2_dirt']})"
                                          for m in other["off"]))
        if thresholds := s.get("thresholds"):
            print(f"   within at each dirt threshold (of {thresholds['rows']}): "
                  + ", ".join(f"{t}: {n}" for t, n in thresholds["within"].items()))
        for miss in s["off"]:
            l2 = ", ".join(f"{k} {v:.3f}" for k, v in ((miss["miss"] or {}).get("l2") or {}).items() if v)
            print(f"   miss {miss['kernel'][:50]} {miss['fidelity']:.3f} (probe {miss['l2_dirt']}): {l2}")
        if s["cached_picks"]["rows"]:
            print(f"   {s['cached_picks']['rows']} row(s) ran a pick not made at their own call (Triton's autotune "
                  f"cache, or a decision at another input shape); the recording's own benchmark there picks another "
                  f"config for {s['cached_picks']['other_pick']}")
        for regret in s["regrets"]:
            checked = regret.get("against_workload") or {}
            paired = (f"; on one input set {checked['ratio']:.3f} [{checked['low']:.3f}, {checked['high']:.3f}]"
                      if checked.get("ratio") is not None else "")
            print(f"   regret {regret['kernel'][:50]}: {regret['config']} x{regret['ratio']:.3f} "
                  f"[{regret['low']:.3f}, {regret['high']:.3f}] (workload: {regret['workload']}){paired}, "
                  f"outputs {checked.get('outputs', '-')}; why: {'; '.join(regret['why']) or '-'}")
        for pin in s.get("confirm", []):
            ratio = "-" if pin["ratio"] is None else f"{pin['ratio']:.3f} [{pin['low']:.3f}, {pin['high']:.3f}]"
            found = PinConfirmation(**{k: v for k, v in pin.items() if k not in ("confirmed", "standing")})
            print(f"   confirm {pin['kernel']} [{', '.join(pin['tuning_key'])}]: in the workload {ratio} "
                  f"{pin['verdict']}, pinned ran: {pin['pinned_ran']}; {STANDINGS[found.standing]}; "
                  f"autotuner picks: {found.picks_text()}")
        if (fixed := s.get("fixed_rounds")) and "other_recording" in fixed:
            print(f"   --fixed-rounds replay of recording {fixed['other_recording']['fixed']}, not the sweep's "
                  f"{fixed['other_recording']['sweep']}: not compared")
        elif fixed:
            print(f"   --fixed-rounds replay of the same recording: same verdict for "
                  f"{fixed['rows']['same_verdict']}/{fixed['rows']['of']} rows and "
                  f"{fixed['candidates']['same_verdict']}/{fixed['candidates']['of']} candidates; rounds "
                  f"{fixed['rows']['rounds']['adaptive'] + fixed['candidates']['rounds']['adaptive']} adaptive, "
                  f"{fixed['rows']['rounds']['fixed'] + fixed['candidates']['rounds']['fixed']} fixed; replay "
                  f"{fixed['replay_s']['adaptive']:.0f} s against {fixed['replay_s']['fixed']:.0f} s")
        for off in s["off"]:
            why = (off.get("miss") or {}).get("why", "not in the 90% set")
            print(f"   off ±10%: {off['kernel'][:60]} {off['fidelity']:.3f}: {why}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
