"""Every `name(params)` span of API.md whose params parse as a Python parameter list is matched
(by name) against the public objects of the modules in API.md §0 (functions, classes,
methods); each documented parameter must exist in the real signature, in the same order,
with the documented default. Reports: unresolved names, mismatches."""
from __future__ import annotations
import ast, importlib, inspect, re, warnings
warnings.simplefilter("ignore")
TEXT = open("/work/shared/API.md").read()
MODS = ["tempo.api", "tempo.api.recurrent_tensor", "tempo.api.tempo_context_manager", "tempo.core.index_expr",
        "tempo.core.configs", "tempo.core.dtype", "tempo.core.utils", "tempo.core.domain", "tempo.core.shape",
        "tempo.core.device", "tempo.core.dl_backend", "tempo.runtime.executor.executor", "tempo.api.nn",
        "tempo.api.nn.linear", "tempo.api.nn.rms_norm", "tempo.api.nn.multihead_attention", "tempo.api.nn.rope",
        "tempo.api.nn.swiglu", "tempo.api.nn.rnn", "tempo.api.nn.flatten", "tempo.api.nn.turnkey", "tempo.api.nn.utils",
        "tempo.api.nn.state_loader", "tempo.api.optim.optim", "tempo.api.distributions", "tempo.api.rl",
        "tempo.api.rl.env.env", "tempo.api.rl.env.env_registry.env_registry", "tempo.api.rl.env.trivial_env",
        "tempo.api.rl.env.wrappers", "tempo.api.rl.networks.model_builder", "tempo.api.rl.replay_buffer.replay_buffer",
        "tempo.api.llm.models.llama", "tempo.api.llm.tokenizer.tokenizer", "tempo.api.data", "tempo.utils.make_sink"]
cands: dict[str, list] = {}
def add(name, obj, where):
    cands.setdefault(name, []).append((obj, where))
seen_cls = set()
def add_cls(cls, where):
    if id(cls) in seen_cls: return
    seen_cls.add(id(cls))
    for n, v in vars(cls).items():
        if n.startswith("_") and n != "__init__": continue
        f = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
        if callable(f): add(n, f, f"{where}.{n}")
    for base in cls.__mro__[1:]:
        if base.__module__.startswith("tempo"): add_cls(base, base.__name__)
for m in MODS:
    try:
        mod = importlib.import_module(m)
    except Exception as e:  # noqa
        print("IMPORT FAIL", m, e); continue
    for n in dir(mod):
        if n.startswith("_"): continue
        v = getattr(mod, n)
        if inspect.isclass(v) and getattr(v, "__module__", "").startswith("tempo"):
            add(n, v, f"{m}.{n}"); add_cls(v, n)
        elif callable(v) and getattr(v, "__module__", "") and str(getattr(v, "__module__", "")).startswith("tempo"):
            add(n, v, f"{m}.{n}")
# extra classes reached through objects
from tempo.core.configs import ExecutionConfig
from tempo.api import TempoContext
import tempo.runtime.executor.executor as ex
for c in [ExecutionConfig, TempoContext]:
    add_cls(c, c.__name__)
from tempo.core.dtype import dtypes
add_cls(type(dtypes) if not inspect.isclass(dtypes) else dtypes, "dtypes")
for sub in ex.Executor.__subclasses__():
    add_cls(sub, sub.__name__)

def sig_params(fn):
    target = fn.__init__ if inspect.isclass(fn) else fn
    try:
        s = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    ps = [p for p in s.parameters.values() if p.name not in ("self", "cls")]
    return ps

ok, bad, unresolved, skipped = [], [], [], []
for ln, line in enumerate(TEXT.splitlines(), 1):
    for m in re.finditer(r"`([\w/.]+)\(([^`]*)\)(?: -> [^`]*)?`", line):
        names, params = m.group(1), m.group(2)
        if "..." in params or "·" in params or "|" in params:
            skipped.append((ln, m.group(0))); continue
        try:
            fdef = ast.parse(f"def _f({params.replace('float32', 'FLOAT32')}): pass").body[0]
        except SyntaxError:
            skipped.append((ln, m.group(0))); continue
        a = fdef.args
        doc = [x.arg for x in a.posonlyargs + a.args]
        defaults = {x.arg: d for x, d in zip((a.posonlyargs + a.args)[::-1], a.defaults[::-1])}
        doc += [x.arg for x in a.kwonlyargs]
        defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        if a.vararg: doc.append("*" + a.vararg.arg)
        if not doc: continue
        for name in names.split("/"):
            short = name.split(".")[-1]
            cs = cands.get(short)
            if not cs:
                unresolved.append((ln, name, params)); continue
            results = []
            for obj, where in cs:
                ps = sig_params(obj)
                if ps is None: continue
                real = [("*" + p.name) if p.kind == p.VAR_POSITIONAL else p.name for p in ps]
                prob = []
                idx = -1
                for d in doc:
                    if d not in real:
                        if not any(p.kind == p.VAR_KEYWORD for p in ps) or d.startswith("*"):
                            prob.append(f"no param {d}")
                        continue
                    j = real.index(d)
                    if j < idx: prob.append(f"{d} out of order")
                    idx = j
                    if d in defaults:
                        want = ast.unparse(defaults[d])
                        p = ps[j]
                        if p.default is inspect.Parameter.empty:
                            prob.append(f"{d} has no default (doc {want})")
                        else:
                            try:
                                wv = eval(want, {"FLOAT32": dtypes.float32, "float32": dtypes.float32})
                            except Exception:
                                wv = want
                            if not (p.default == wv or repr(p.default) == repr(wv) or str(p.default) == str(wv)):
                                prob.append(f"{d} default {p.default!r} (doc {want})")
                results.append((where, prob))
            if any(not p for _, p in results):
                ok.append((ln, name))
            elif results:
                bad.append((ln, name, params, results[:3]))
            else:
                unresolved.append((ln, name, params + " [no signature]"))
print(f"signatures ok {len(ok)}, mismatched {len(bad)}, unresolved {len(unresolved)}, skipped {len(skipped)}")
for b in bad: print("MISMATCH", b)
for u in unresolved: print("UNRESOLVED", u)
