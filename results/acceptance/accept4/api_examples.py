"""Extract the code examples of API.md and run each one.

1. every fenced ```python block runs as a whole program (compiled and executed);
2. every inline `code` span that parses as a Python statement/expression is run while a
   context is active, in each of a few namespaces (a tensor x over (a, b) spatial (C, D) = (3, 4)
   as in §3.4's table; a placeholder x over (t,); RL tensors r/o over (b, i, t)); a span counts as
   runnable if it runs in one of them; spans whose only error is a NameError on a free name
   are fragments (listed, not failures);
3. the §3.4 example table: each row's shape and domain are checked."""
from __future__ import annotations
import ast, re, sys, traceback, io, contextlib, warnings
warnings.simplefilter("ignore")
import numpy as np
TEXT = open("/work/shared/API.md").read()

from tempo.api import RecurrentTensor, TempoContext
from tempo.api import RecurrentTensor as RT
import tempo.api.recurrent_tensor as tpo
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.domain import Domain
from tempo.core.shape import Shape
from tempo.core import dtype
from tempo.core.dl_backend import DLBackend
from tempo.core.device import device
import functools, torch

CFG = ExecutionConfig(dev="cpu", backend="torch", path="/tmp/accept4/ex_runs/")

def base_ns():
    return dict(RecurrentTensor=RecurrentTensor, RT=RT, tpo=tpo, ie=ie, ExecutionConfig=ExecutionConfig,
                dtypes=dtypes, Domain=Domain, Shape=Shape, dtype=dtype, DLBackend=DLBackend,
                device=device, functools=functools, np=np, torch=torch, TempoContext=TempoContext,
                cfg=CFG, print=lambda *a, **k: None)

def ns_ab():
    ctx = TempoContext(CFG, dim_names=("a", "b"))
    (a, A), (b, B) = ctx.variables_and_bounds
    ns = base_ns(); ns.update(ctx=ctx, a=a, A=A, b=b, B=B, C=3, D=4)
    with ctx:
        x = RT.random((3, 4), domain=(a, b)) + 0.0
    ns.update(x=x, y=x + 1.0, v=RT.ones((3, 4)), f=lambda z: None, g=0.9, s=x, e=a + 1, dom=x.domain)
    return ctx, ns

def ns_t():
    ctx = TempoContext(CFG, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    ns = base_ns(); ns.update(ctx=ctx, t=t, T=T, w=3, n=2)
    with ctx:
        x = RT.placeholder((3,), dtypes.float32, domain=(t,))
        v = RT.ones((3,))
    ns.update(x=x, v=v, y=RT.ones((3,)), value=v, tokens=None, f=lambda z: None, data=np.zeros((10, 3), np.float32))
    return ctx, ns

def ns_bit():
    ctx = TempoContext(CFG, dim_names=("b", "i", "t"))
    (b, B), (i, I), (t, T) = ctx.variables_and_bounds
    ns = base_ns(); ns.update(ctx=ctx, b=b, B=B, i=i, I=I, t=t, T=T, E=4, S=3)
    with ctx:
        o = RT.placeholder((4,), dtypes.float32, domain=(b, i, t))
        r = RT.random((), domain=(b, i, t)) + 0.0
        tokens = RT.const(np.arange(12).reshape(3, 4)).cast(dtypes.default_int)
    ns.update(o=o, r=r, x=r, reset=RT.zeros((4,)), tokens=tokens, g=0.9, f=lambda z: None,
              model=lambda s: s * 0.5, ts={t: 1}, data=np.zeros((10,), np.float32))
    return ctx, ns

def ns_none():
    ctx = TempoContext(CFG, num_dims=0)
    ns = base_ns(); ns.update(ctx=ctx)
    return ctx, ns

MAKERS = [("ab", ns_ab), ("t", ns_t), ("bit", ns_bit), ("none", ns_none)]

def run_src(src: str):
    errs = []
    for nm, mk in MAKERS:
        try:
            ctx, ns = mk()
        except Exception as e:  # noqa
            errs.append((nm, f"setup {type(e).__name__}: {e}")); continue
        try:
            with ctx:
                exec(compile(src, "<api-example>", "exec"), ns)
            return "ok", nm
        except NameError as e:
            errs.append((nm, f"NameError: {e}"))
        except Exception as e:  # noqa
            errs.append((nm, f"{type(e).__name__}: {str(e)[:200]}"))
    if all(m.startswith("NameError") for _, m in errs):
        return "fragment", errs[0][1]
    return "fail", errs

def inline_spans():
    spans = []
    for ln, line in enumerate(TEXT.splitlines(), 1):
        for m in re.finditer(r"`([^`]+)`", line):
            spans.append((ln, m.group(1)))
    return spans

def parses(src):
    try:
        ast.parse(src); return True
    except SyntaxError:
        return False

def looks_like_code(src):
    # skip bare names, paths and signature lists with defaults that are only declarations
    if re.fullmatch(r"[\w.]+", src):
        return False
    if " -> " in src or src.startswith("tempo.") or "…" in src:
        return False
    return parses(src)

def main():
    res = {"ok": [], "fragment": [], "fail": [], "skip": []}
    # 1. fenced blocks
    for m in re.finditer(r"```python\n(.*?)```", TEXT, re.S):
        ln = TEXT[:m.start()].count("\n") + 1
        import textwrap
        src = textwrap.dedent(m.group(1))
        prog = ("ctx0 = None\n" + src) if "ctx = TempoContext" in src else src
        if "ctx = TempoContext" in src:
            ns = base_ns(); ns["cfg"] = CFG
            try:
                exec(compile(src, "<api-fenced>", "exec"), ns)
                res["ok"].append((ln, "fenced block (runs, compiles, executes)"))
            except Exception as e:  # noqa
                res["fail"].append((ln, "fenced block", f"{type(e).__name__}: {e}"))
        else:
            st, info = run_src(src)
            res[st].append((ln, "fenced block", info))
    # 2. inline spans
    seen = set()
    for ln, src in inline_spans():
        if src in seen or not looks_like_code(src):
            res["skip"].append((ln, src)); continue
        seen.add(src)
        # signature lines `name(a, b=1)`: only run calls whose args are all names defined in ns
        st, info = run_src(src)
        res[st].append((ln, src, info))
    # 3. §3.4 table
    for m in re.finditer(r"^\| `(x\[[^`]*\])`(?:, `[^`]*`)* \| `\(([^`]*)\)` \| `\(([^`]*)\)` \|$", TEXT, re.M):
        idx_srcs = re.findall(r"`(x\[[^`]*\])`", m.group(0))
        want_shape, want_dom = m.group(2), m.group(3)
        for s in idx_srcs:
            ctx, ns = ns_ab()
            try:
                with ctx:
                    y = eval(s, ns)
                shape = str(tuple(y.shape._dims if hasattr(y.shape, "_dims") else y.shape))
                dom = ", ".join(v.name for v in y.domain.variables)
                ws = want_shape.replace("C", "3").replace("D", "4")
                got_s = shape.replace(" ", "").replace(",)", ")")[1:-1].replace("(a+1)", "a+1")
                ok = got_s == ws.replace(" ", "").rstrip(",") and dom == want_dom
                (res["ok"] if ok else res["fail"]).append((0, f"table {s}", f"shape {shape} dom ({dom}); doc ({want_shape}) ({want_dom})"))
            except Exception as e:  # noqa
                res["fail"].append((0, f"table {s}", f"{type(e).__name__}: {str(e)[:200]}"))
    for k in ("ok", "fragment", "fail"):
        print(f"== {k}: {len(res[k])}")
    print(f"== skipped (not code): {len(res['skip'])}")
    for item in res["fail"]:
        print("FAIL", item)
    if "-v" in sys.argv:
        for item in res["fragment"]:
            print("FRAG", item)
        for item in res["ok"]:
            print("OK", item)

main()
