"""The import arrows of ARCHITECTURE.md §2: api → compiler → core, compiler → schedule →
core, runtime → schedule/core; core imports nothing of ours and loads no backend, the
compiler never imports the runtime, and nothing in the library imports the benchmarks.
Every `import`, `from ... import` (at any depth, lazy ones included) and
`importlib.import_module("...")` of every module is checked."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "tempo"

# package -> the tempo packages it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "schedule": {"core"},
    "compiler": {"core", "schedule"},
    "runtime": {"core", "schedule"},
    "api": {"core", "schedule", "compiler", "runtime"},
    "memsave": set(),
    "prims": {"core", "schedule", "compiler", "runtime", "api"},
}
# (module, imported module) pairs allowed against the arrows, with the reason.
EXCEPTIONS = {
    ("tempo.core.dl_backend", "tempo.runtime.backend_registry"):
        "API.md §0 lists `tempo.core.dl_backend.DLBackend`: a lazy re-export of the runtime's "
        "registry for users; no module of core uses it",
    ("tempo.api.autodiff.backward", "tempo.prims"):
        "backward() applies every primitive's gradient rule: it loads the package that "
        "registers them (tempo.prims sits above the api's rule registry, as jax's api "
        "loads lax)",
    ("tempo.api.compile_driver", "tempo.prims"):
        "ctx.compile needs every primitive's batching, cost and kernel rules registered",
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(path: Path, name: str | None = None) -> set[str]:
    """Every tempo module `path` (module `name`) imports, wherever the import statement is."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)):
            found.add(str(node.args[0].value))
    return {m for m in found if m == "tempo" or m.startswith("tempo.")}


def _excepted(me: str, imported: str) -> bool:
    return any(me == m and (imported == i or imported.startswith(i + "."))
               for m, i in EXCEPTIONS)


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_down(package: str) -> None:
    bad = []
    for path in _modules(package):
        me = _module_name(path)
        for imported in imports_of(path):
            target = _package(imported)
            if target in (None, package) or _excepted(me, imported):
                continue
            if target in ALLOWED and target not in ALLOWED[package]:
                bad.append(f"{me} imports {imported}")
            elif target == "bench":
                bad.append(f"{me} imports the benchmarks ({imported})")
    assert bad == []


def test_exceptions_are_still_needed() -> None:
    """An allowed exception that no longer occurs must go (so the list stays honest)."""
    for me, imported in EXCEPTIONS:
        path = ROOT.parent / (me.replace(".", "/") + ".py")
        assert imported in imports_of(path), (me, imported)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    assert "tempo.core.sdg" in imports_of(ROOT / "compiler" / "passes" / "dead_code.py")
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..runtime import stores\n"
                     "    import importlib\n    importlib.import_module('tempo.api')\n")
    got = imports_of(probe, "tempo.compiler.probe")
    assert {"tempo.runtime.stores", "tempo.api"} <= got


def test_importing_core_loads_no_backend() -> None:
    import subprocess
    import sys

    code = ("import sys, tempo.core.configs, tempo.core.sdg, tempo.core.dl_backend, "
            "tempo.compiler.pipeline; "
            "print(sorted(m for m in sys.modules if m.startswith('tempo.runtime') "
            "or m in ('torch', 'jax')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
