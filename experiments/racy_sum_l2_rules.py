"""Why does racy_sum replay faster than inside hostile_sweep.py? Time it (hold + events, as the recording) after
different predecessors."""
import statistics, sys, torch, triton
sys.path.insert(0, "benchmarks/workloads")
import hostile_sweep as h
from tritonhook.measure.timing import hold_stream, l2_bytes

x = torch.randn(h.ROWS, h.COLS, device="cuda")
outs = {"log": torch.empty_like(x), "scale": torch.empty_like(x), "sum": torch.zeros(h.COLS, device="cuda"),
        "softmax": torch.empty_like(x)}
dirt = torch.empty(l2_bytes(torch), dtype=torch.uint8, device="cuda")
n = x.numel()
def log(): h.log_abs_kernel[(triton.cdiv(n, 1024),)](x, outs["log"], n, BLOCK=1024)
def scale(): h.scale_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, outs["scale"], n)
def zero(): outs["sum"].zero_()
def soft(): h.softmax_kernel[lambda m: (triton.cdiv(h.ROWS, m["ROWS_PER_PROGRAM"]),)](x, outs["softmax"], h.ROWS, h.COLS, BLOCK=h.COLS)
def racy(o=None): h.racy_sum_kernel[(h.ROWS // 16,)](x, outs["sum"] if o is None else o, h.ROWS, h.COLS, ROWS_PER_PROGRAM=16, BLOCK=h.COLS)
def add0(): outs["sum"].add_(0)
def xmax(): x.view(torch.uint8).max()
def dirty(): dirt.zero_()
def fill_triton(): outs["sum"].fill_(0.5)
sleep_only = lambda: torch.cuda._sleep(1)

def timed(before, hold=True, reps=300, fresh_out=False):
    ms = []
    for i in range(reps + 20):
        torch.cuda.synchronize()
        for f in before: f()
        if hold: hold_stream(torch, 60)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); racy(); e.record()
        torch.cuda._sleep(1)
        torch.cuda.synchronize()
        if i >= 20: ms.append(s.elapsed_time(e) * 1e3)
    q = statistics.quantiles(ms, n=4)
    return statistics.median(ms), q[0], q[2]


for f in (log, scale, zero, soft, racy): f()
torch.cuda.synchronize()
torch.cuda._sleep(2_000_000_000)
torch.cuda.synchronize()
L2 = l2_bytes(torch)
half = dirt[: L2 // 2]
quarter = dirt[: L2 // 4]
scratch = torch.empty(x.numel() * 4, dtype=torch.uint8, device="cuda")
kernels = {"log": (log, [x], [outs["log"]]), "scale": (scale, [x], [outs["scale"]]),
           "racy": (racy, [x], [outs["sum"]]), "soft": (soft, [x], [outs["softmax"]])}
order = ["log", "scale", "zero", "racy", "soft"]
fns = {"log": log, "scale": scale, "zero": zero, "racy": racy, "soft": soft}
def read_max(t): t.view(torch.uint8).max()
def read_copy(t): scratch[: t.numel() * t.element_size()].copy_(t.view(torch.uint8).view(-1))
def rewrite(t): t.view(torch.uint8).add_(0)
rules = {
    "R0 dirt L2, max": (lambda: dirt.zero_(), read_max),
    "R1 dirt L2/2, max": (lambda: half.zero_(), read_max),
    "R2 dirt L2, copy-read": (lambda: dirt.zero_(), read_copy),
    "R3 dirt L2/2, copy-read": (lambda: half.zero_(), read_copy),
    "R4 dirt L2/4, max": (lambda: quarter.zero_(), read_max),
    "R5 none, max": (lambda: None, read_max),
}
def timed_one(name, before):
    torch.cuda.synchronize()
    before()
    hold_stream(torch, 60)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fns[name](); e.record()
    torch.cuda._sleep(1)
    return s, e
samples = {(k, r): [] for k in kernels for r in ["natural", *rules]}
def natural_step(pairs):
    # the workload's own order, each timed kernel held and bracketed like the recording
    for name in order:
        if name == "zero":
            zero(); continue
        hold_stream(torch, 60)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fns[name](); e.record(); torch.cuda._sleep(1)
        pairs.append((name, s, e))
for r in range(40):
    pairs = []
    for _ in range(5):
        natural_step(pairs)
    torch.cuda.synchronize()
    for name, s, e in pairs[4:]:
        samples[(name, "natural")].append(s.elapsed_time(e) * 1e3)
    for rule, (dirt_fn, read) in rules.items():
        for name, (fn, ins, outs_) in kernels.items():
            for i in range(6):
                def before():
                    if name == "racy": zero()
                    dirt_fn()
                    for t in ins: read(t)
                    for t in outs_: rewrite(t)
                s, e = timed_one(name, before)
                torch.cuda.synchronize()
                if i >= 1: samples[(name, rule)].append(s.elapsed_time(e) * 1e3)
print(f"{'rule':28s}" + "".join(f"{k:>16s}" for k in kernels))
nat = {k: statistics.median(samples[(k, "natural")]) for k in kernels}
print(f"{'natural (us)':28s}" + "".join(f"{nat[k]:16.2f}" for k in kernels))
for rule in rules:
    print(f"{rule:28s}" + "".join(f"{statistics.median(samples[(k, rule)]) / nat[k]:16.3f}" for k in kernels))
