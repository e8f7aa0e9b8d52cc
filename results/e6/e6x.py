"""E6 capped (fused regions), capped with fusion off, and uncapped, interleaved in one
process (1 torch thread): python e6x.py SIZE [ITERS] [REPEATS] [which=cap,capnf,nocap]"""
import os, sys, time, statistics, torch
torch.set_num_threads(1)
from tempo.bench.systems import ppo_tempo as pt
UNCAPPED = {"torch_compilation_backend": "eager"}
from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
from tempo.bench.timing import StatsLogger
from tempo.bench.systems.tempo_memory import memory_config
from tempo.bench.memory import DeviceMemoryAccountant
s = int(sys.argv[1]); its = int(sys.argv[2]) if len(sys.argv) > 2 else 2
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
which = (sys.argv[4] if len(sys.argv) > 4 else "cap,capnf,nocap").split(",")
c = dict(DEFAULTS); c.update(num_layers=2, params_per_layer=64, ep_len=128, num_envs=16, obs_shape=[3, s, s], iterations=its)
EAGER = {"torch_compilation_backend": "eager"}
cfgs = {"cap": {**memory_config(DeviceMemoryAccountant(cap_bytes=256 << 20)), **EAGER},
        "capnf": {**memory_config(DeviceMemoryAccountant(cap_bytes=256 << 20)), "enable_fusion": False},
        "nocap": dict(UNCAPPED)}
exes = {}
for k in which:
    ctx, bounds = pt._program(c, "torch", StatsLogger(), cfgs[k])
    t = time.process_time(); exes[k] = ctx.compile(bounds); print(k, "compile cpu", round(time.process_time() - t, 2), flush=True)
times = {k: [] for k in exes}; mem = {}
l0 = os.getloadavg()[0]
for rep in range(reps + 1):
    for k, exe in exes.items():
        exe.reset(); t = time.perf_counter(); exe.execute(); dt = time.perf_counter() - t
        if rep: times[k].append(dt / its)
        st = exe.memory_stats(); mem[k] = (st["peak_bytes"], st["swapped_bytes"], st["host_peak_bytes"], st["demand_fetched_bytes"])
        print(k, rep, round(dt / its, 2), "s/it", flush=True)
l1 = os.getloadavg()[0]
M = 1 << 20
for k in exes:
    pk, sw, hp, dm = mem[k]
    print(f"| 3x{s}x{s} | {k} | {pk / M if pk else 0:.1f} | {sw / M / its:.0f} | {hp / M:.0f} | {dm / M / its:.0f} | {min(times[k]):.2f} / {statistics.median(times[k]):.2f} | "
          + (f"{statistics.median(times[k]) / statistics.median(times['nocap']):.2f}" if "nocap" in times and k != "nocap" else "-") + f" | {l0:.1f}-{l1:.1f} |", flush=True)
