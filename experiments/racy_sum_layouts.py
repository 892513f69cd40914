"""Does racy_sum's time inside the step depend on where x and out sit? Each of 12 processes-worth of layouts:
padding allocations of varying size before x and out, then the natural step timed as the recording does."""
import statistics, sys, torch, triton
sys.path.insert(0, "benchmarks/workloads")
import hostile_sweep as h
from tritonhook.measure.timing import hold_stream

def layout(pad_x_mib, pad_out_kib):
    pads = [torch.empty(int(pad_x_mib * 2**20), dtype=torch.uint8, device="cuda")]
    x = torch.randn(h.ROWS, h.COLS, device="cuda")
    pads.append(torch.empty(pad_out_kib * 1024, dtype=torch.uint8, device="cuda"))
    outs = {"log": torch.empty_like(x), "scale": torch.empty_like(x), "sum": torch.zeros(h.COLS, device="cuda"),
            "softmax": torch.empty_like(x)}
    return pads, x, outs

def natural(x, outs, steps=40):
    n = x.numel()
    fns = [("log", lambda: h.log_abs_kernel[(triton.cdiv(n, 1024),)](x, outs["log"], n, BLOCK=1024)),
           ("scale", lambda: h.scale_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, outs["scale"], n)),
           ("zero", lambda: outs["sum"].zero_()),
           ("racy", lambda: h.racy_sum_kernel[(h.ROWS // 16,)](x, outs["sum"], h.ROWS, h.COLS, ROWS_PER_PROGRAM=16, BLOCK=h.COLS)),
           ("soft", lambda: h.softmax_kernel[lambda m: (triton.cdiv(h.ROWS, m["ROWS_PER_PROGRAM"]),)](x, outs["softmax"], h.ROWS, h.COLS, BLOCK=h.COLS))]
    pairs = []
    for step in range(steps):
        for name, fn in fns:
            if name == "zero":
                fn(); continue
            hold_stream(torch, 60)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); torch.cuda._sleep(1)
            if step >= 4: pairs.append((name, s, e))
    torch.cuda.synchronize()
    out = {}
    for name, s, e in pairs:
        out.setdefault(name, []).append(s.elapsed_time(e) * 1e3)
    return {k: statistics.median(v) for k, v in out.items()}

torch.cuda._sleep(2_000_000_000); torch.cuda.synchronize()
rows = []
for pad_x, pad_out in [(0, 0), (2, 4), (3, 8), (5, 16), (7, 64), (11, 128), (13, 256), (17, 512), (19, 1024), (23, 2048), (0.5, 1), (1.5, 3)]:
    pads, x, outs = layout(pad_x, pad_out)
    natural(x, outs, steps=6)
    m = natural(x, outs)
    rows.append(m)
    print(f"pad x {pad_x:5} MiB, out {pad_out:5} KiB  x@{x.data_ptr() % 2**30:>11x} out@{outs['sum'].data_ptr() % 2**30:>9x}  " +
          "  ".join(f"{k} {v:5.2f}" for k, v in m.items()), flush=True)
    del pads, x, outs
for k in rows[0]:
    v = [r[k] for r in rows]
    print(f"{k:6s} min {min(v):5.2f} median {statistics.median(v):5.2f} max {max(v):5.2f}  max/min {max(v)/min(v):.3f}")
