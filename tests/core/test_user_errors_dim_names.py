"""Errors name the dimensions and bounds by the user's names however the user binds them
(API.md §1: every error speaks the user's words, never `d0`/`D1`).

`(b, B), (t, T) = ctx.variables_and_bounds` is read from its statement (tempo/api/dim_names);
every other way of taking the symbols (the pairs kept in a variable and unpacked later,
variables and bounds taken apart, a helper, a loop, a comprehension, a dict, a dataclass,
a namedtuple, an object's attributes, `new_perm_var`) is named from the user's frames when
the error is read (tempo/api/error_names). Each program is written to a file and run as a
script, at module level, inside a function, built by a function whose caller compiles it,
and with the tensors made in lambdas and comprehensions; each user mistake must raise naming
the user's names (`dims.t + 1 is past the end dims.T - 1 of dims.t`) and no default one."""

from __future__ import annotations

import importlib
import os
import re
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import errors
from tempo.core.configs import ExecutionConfig

DEFAULT_NAME = re.compile(r"(?<![\w#.'\"])[dD]\d+(?![\w#])")

HEADER = """\
import collections
import dataclasses

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes

"""

# style -> (statements that make `ctx` and take its symbols, the user's name of b, B, t, T)
STYLES: dict[str, tuple[str, dict[str, str]]] = {
    "pairs_kept_then_unpacked": ("""
        ctx = TempoContext(cfg, num_dims=2)
        vb = ctx.variables_and_bounds
        (b, B), (t, T) = vb
        """, {"b": "b", "B": "B", "t": "t", "T": "T"}),
    "variables_and_bounds_apart": ("""
        ctx = TempoContext(cfg, num_dims=2)
        vs, ubs = ctx.variables, ctx.upper_bounds
        batch, step = vs
        BATCH, STEP = ubs
        """, {"b": "batch", "B": "BATCH", "t": "step", "T": "STEP"}),
    "helper_function": ("""
        def dims(c):
            return [tuple(pair) for pair in c.variables_and_bounds]

        ctx = TempoContext(cfg, num_dims=2)
        (b, B), (t, T) = dims(ctx)
        """, {"b": "b", "B": "B", "t": "t", "T": "T"}),
    "loop": ("""
        ctx = TempoContext(cfg, num_dims=2)
        syms = []
        for v, ub in ctx.variables_and_bounds:
            syms.append((v, ub))
        (i, I), (n, N) = syms
        """, {"b": "i", "B": "I", "t": "n", "T": "N"}),
    "comprehension": ("""
        ctx = TempoContext(cfg, num_dims=2)
        b, t = [v for v in ctx.variables]
        B, T = [ub for ub in ctx.upper_bounds]
        """, {"b": "b", "B": "B", "t": "t", "T": "T"}),
    "dict": ("""
        ctx = TempoContext(cfg, num_dims=2)
        dims = dict(zip("btBT", [*ctx.variables, *ctx.upper_bounds]))
        """, {"b": 'dims["b"]', "B": 'dims["B"]', "t": 'dims["t"]', "T": 'dims["T"]'}),
    "dataclass": ("""
        @dataclasses.dataclass
        class Dims:
            b: object
            t: object
            B: object
            T: object

        ctx = TempoContext(cfg, num_dims=2)
        dims = Dims(*ctx.variables, *ctx.upper_bounds)
        """, {"b": "dims.b", "B": "dims.B", "t": "dims.t", "T": "dims.T"}),
    "namedtuple": ("""
        Dims = collections.namedtuple("Dims", "var bound")
        ctx = TempoContext(cfg, num_dims=2)
        batch, time = (Dims(*pair) for pair in ctx.variables_and_bounds)
        """, {"b": "batch.var", "B": "batch.bound", "t": "time.var", "T": "time.bound"}),
    "object_attributes": ("""
        class Dims:
            pass

        ctx = TempoContext(cfg, num_dims=2)
        dims = Dims()
        dims.b, dims.t = ctx.variables
        dims.B, dims.T = ctx.upper_bounds
        """, {"b": "dims.b", "B": "dims.B", "t": "dims.t", "T": "dims.T"}),
    "new_perm_var": ("""
        ctx = TempoContext(cfg, num_dims=1)
        vb = ctx.variables_and_bounds
        ((b, B),) = vb
        t, T = ctx.new_perm_var(4)
        """, {"b": "b", "B": "B", "t": "t", "T": "T"}),
}

# mistake -> (error class, the recording, compile bounds (None: no compile), execute?,
#             the words the error must say)
Mistake = tuple[type[errors.TempoError], str, dict[str, int] | None, bool, tuple[str, ...]]
MISTAKES: dict[str, Mistake] = {
    "read_past_the_end": (errors.IndexExprError, """
        with ctx:
            x = RT.from_symbol(<t>) + RT.from_symbol(<b>)
            x[<b>, <t> + 1][0:<B>, 0:<T>].sink_udf(lambda v: None)
        """, {"B": 2, "T": 4}, False,
        ("<t> + 1 is past the end <T> - 1 of <t>", "at <b> = 0", "<B> = 2, <T> = 4",
         "ie.min(<t> + 1, <T> - 1)")),
    "indices_swapped": (errors.IndexExprError, """
        with ctx:
            x = RT.from_symbol(<t>) + RT.from_symbol(<b>)
            x[<t>, <b>].sink_udf(lambda v: None)
        """, {"B": 2, "T": 4}, False,
        ("at [<t>, <b>]", "<t> is past the end <B> - 1 of <b>", "<B> = 2, <T> = 4")),
    "definition_over_a_larger_domain": (errors.DomainError, """
        with ctx:
            x = RT.placeholder((), dtypes.int64, domain=(<t>,))
            x[True] = RT.from_symbol(<b>) + RT.from_symbol(<t>)
        """, None, False, ("has domain (<t>)", "larger domain (<b>, <t>)")),
    "spatial_slice_by_a_bound": (errors.ShapeError, """
        with ctx:
            x = RT.ones((3,)) * 2.0
            x[0:<T>].sink_udf(lambda v: None)
        """, {"B": 2, "T": 4}, True, ("takes 0:4", "(with <T> = 4)")),
    "bound_as_an_index": (errors.IndexExprError, """
        with ctx:
            x = RT.from_symbol(<t>) + RT.from_symbol(<b>)
            x[<B>].sink_udf(lambda v: None)
        """, {"B": 2, "T": 4}, False,
        ("at [<B>, <t>]", "<B> is past the end <B> - 1 of <b>", "at most <B> - 1")),
    "missing_bound": (errors.BoundError, """
        with ctx:
            RT.from_symbol(<t>).sink_udf(lambda v: None)
        """, {"T": 4}, False, ("no value for bound <B> (of variable <b>)",)),
}

# the same mistakes made inside a lambda or a comprehension
IN_LAMBDAS: dict[str, Mistake] = {
    "read_past_the_end": (errors.IndexExprError, """
        with ctx:
            xs = [RT.from_symbol(<t>) + RT.from_symbol(<b>) + k for k in range(2)]
            ahead = lambda x: x[<b>, <t> + 1]
            ahead(xs[1])[0:<B>, 0:<T>].sink_udf(lambda v: None)
        """, {"B": 2, "T": 4}, False,
        ("<t> + 1 is past the end <T> - 1 of <t>", "<B> = 2, <T> = 4")),
    "definition_over_a_larger_domain": (errors.DomainError, """
        with ctx:
            xs = [RT.placeholder((), dtypes.int64, domain=(<t>,)) for _ in range(2)]
            [x.__setitem__(True, RT.from_symbol(<b>) + RT.from_symbol(<t>)) for x in xs]
        """, None, False, ("has domain (<t>)", "larger domain (<b>, <t>)")),
    "spatial_slice_by_a_bound": (errors.ShapeError, """
        with ctx:
            first = lambda x: x[0:<T>]
            first(RT.ones((3,)) * 2.0).sink_udf(lambda v: None)
        """, {"B": 2, "T": 4}, True, ("(with <T> = 4)",)),
}


def _fill(text: str, names: dict[str, str]) -> str:
    return re.sub(r"<([bBtT])>", lambda m: names[m[1]], text)


def _compile(bounds: dict[str, int] | None, run: bool, names: dict[str, str] | None) -> str:
    """The compile statement: bounds keyed by the user's names, or (names None) by
    positions in the universe (a caller that never saw the names)."""
    if bounds is None:
        return ""
    pos = {"B": 0, "T": 1}
    keys = {k: names[k] if names else f"ctx.universe.variables[{pos[k]}].as_bound()"
            for k in bounds}
    arg = ", ".join(f"{keys[k]}: {v}" for k, v in bounds.items())
    return f"ctx.compile({{{arg}}})" + (".execute()" if run else "") + "\n"


def program(style: str, mistake: Mistake, layout: str) -> tuple[str, dict[str, str]]:
    """The script of `style` making `mistake`, laid out as `layout`."""
    setup, names = STYLES[style]
    _, record, bounds, run, _ = mistake
    body = textwrap.dedent(setup) + _fill(textwrap.dedent(record), names)
    if layout == "module":
        return HEADER + body + _compile(bounds, run, names), names
    if layout == "function":
        body += _compile(bounds, run, names)
        return HEADER + "def main():\n" + textwrap.indent(body, "    ") + "\n\nmain()\n", names
    assert layout == "built_by_a_function"
    return (HEADER + "def build():\n" + textwrap.indent(body + "return ctx\n", "    ")
            + "\n\nctx = build()\n" + _compile(bounds, run, None)), names


def run_program(source: str, tmp_path: Path, cfg: ExecutionConfig,
                cls: type[errors.TempoError]) -> str:
    path = tmp_path / "user_program.py"
    path.write_text(source)
    with pytest.raises(cls) as info:
        runpy.run_path(str(path), init_globals={"cfg": cfg})
    return str(info.value)


def check(msg: str, words: tuple[str, ...], names: dict[str, str], source: str) -> None:
    for w in words:
        assert _fill(w, names) in msg, (_fill(w, names), msg, source)
    assert not DEFAULT_NAME.search(msg), (msg, source)


@pytest.mark.parametrize("layout", ["module", "function"])
@pytest.mark.parametrize("mistake", sorted(MISTAKES))
@pytest.mark.parametrize("style", sorted(STYLES))
def test_errors_use_the_user_s_names(style: str, mistake: str, layout: str,
                                     tmp_path: Path, cfg: ExecutionConfig) -> None:
    source, names = program(style, MISTAKES[mistake], layout)
    msg = run_program(source, tmp_path, cfg, MISTAKES[mistake][0])
    check(msg, MISTAKES[mistake][4], names, source)


@pytest.mark.parametrize("mistake", ["read_past_the_end", "spatial_slice_by_a_bound",
                                     "missing_bound"])
@pytest.mark.parametrize("style", sorted(STYLES))
def test_a_program_built_by_a_function_and_compiled_by_its_caller(
        style: str, mistake: str, tmp_path: Path, cfg: ExecutionConfig) -> None:
    """The frame that bound the names is gone when compile raises: the names seen where its
    `with ctx:` block ended are used."""
    source, names = program(style, MISTAKES[mistake], "built_by_a_function")
    msg = run_program(source, tmp_path, cfg, MISTAKES[mistake][0])
    check(msg, MISTAKES[mistake][4], names, source)


@pytest.mark.parametrize("layout", ["module", "function"])
@pytest.mark.parametrize("mistake", sorted(IN_LAMBDAS))
@pytest.mark.parametrize("style", ["pairs_kept_then_unpacked", "dataclass", "dict", "loop"])
def test_tensors_made_in_lambdas_and_comprehensions(
        style: str, mistake: str, layout: str, tmp_path: Path, cfg: ExecutionConfig) -> None:
    source, names = program(style, IN_LAMBDAS[mistake], layout)
    msg = run_program(source, tmp_path, cfg, IN_LAMBDAS[mistake][0])
    check(msg, IN_LAMBDAS[mistake][4], names, source)


def test_two_unnamed_contexts_keep_their_own_names(cfg: ExecutionConfig) -> None:
    """Symbols compare by name (both contexts have a `d1`): the error names the symbols of
    the context it is about, found by identity."""
    first = TempoContext(cfg, num_dims=2)
    pairs = first.variables_and_bounds
    (b, B), (t, T) = pairs
    with first:
        RT.from_symbol(t).sink_udf(lambda v: None)
    second = TempoContext(cfg, num_dims=2)
    other = second.variables_and_bounds
    (i, I), (j, J) = other
    with second:
        x = RT.from_symbol(j) + RT.from_symbol(i)
        x[i, j + 1][0:I, 0:J].sink_udf(lambda v: None)
    with pytest.raises(errors.IndexExprError) as info:
        second.compile({I: 2, J: 4})
    msg = str(info.value)
    assert "j + 1 is past the end J - 1 of j" in msg and "I = 2, J = 4" in msg, msg
    assert not re.search(r"\b[bBtT]\b", msg.split("\n  at ")[0].replace("`", " ")), msg
    with pytest.raises(errors.BoundError) as info:
        first.compile({B: 2})
    assert "no value for bound T (of variable t)" in str(info.value)


def test_dim_names_given_by_the_user_win_over_a_local_alias(cfg: ExecutionConfig) -> None:
    ctx = TempoContext(cfg, num_dims=1, dim_names=("step",))
    pairs = ctx.variables_and_bounds
    ((s, S),) = pairs
    with ctx:
        RT.from_symbol(s)[s + 1].sink_udf(lambda v: None)
    with pytest.raises(errors.IndexExprError) as info:
        ctx.compile({S: 4})
    assert "step + 1 is past the end STEP - 1 of step" in str(info.value)


def test_naming_runs_only_when_the_text_is_read_and_never_raises(
        cfg: ExecutionConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    from tempo.api import error_names

    calls: list[str] = []

    def broken(err: errors.TempoError, tokens: set[str]) -> dict[str, str]:
        calls.append(err.message)
        raise RuntimeError("naming failed")

    monkeypatch.setattr(error_names, "names_for", broken)
    ctx = TempoContext(cfg, num_dims=1)
    pairs = ctx.variables_and_bounds
    ((t, T),) = pairs
    with ctx:
        RT.from_symbol(t)[t + 1].sink_udf(lambda v: None)
    with pytest.raises(errors.IndexExprError) as info:
        ctx.compile({T: 4})
    assert calls == []  # raising (and errors caught inside the library) never name
    assert "d0 + 1 is past the end D0 - 1 of d0" in str(info.value)  # the text as raised
    assert len(calls) == 1


def test_a_user_tensor_named_like_a_default_dim_is_kept(cfg: ExecutionConfig) -> None:
    ctx = TempoContext(cfg, num_dims=1)
    pairs = ctx.variables_and_bounds
    ((t, T),) = pairs
    with ctx:
        h = RT.placeholder((3,), RT.ones(()).dtype, domain=(t,), name="d0")
        with pytest.raises(errors.ShapeError) as info:
            h[True] = RT.zeros((2,))
    assert "'d0'" in str(info.value)


def test_a_script_named_like_default_dims_keeps_its_path(
        tmp_path: Path, cfg: ExecutionConfig) -> None:
    source, names = program("pairs_kept_then_unpacked", MISTAKES["read_past_the_end"], "module")
    (tmp_path / "d0").mkdir()
    path = tmp_path / "d0" / "d1.py"
    path.write_text(source)
    with pytest.raises(errors.IndexExprError) as info:
        runpy.run_path(str(path), init_globals={"cfg": cfg})
    msg = str(info.value)
    assert "at d1.py:" in msg and "t + 1 is past the end T - 1 of t" in msg, msg
    assert f"at {path}:" in msg, msg  # the site line as the user wrote it
    assert not DEFAULT_NAME.search(msg.replace("d1.py", "").replace("/d0/", "/")), msg


def test_an_uncaught_error_prints_the_user_s_names(tmp_path: Path) -> None:
    """The interpreter prints an uncaught error from C, with no Python frame above
    `__str__` (naming looked for one and the traceback said `<exception str() failed>`)."""
    source, _ = program("pairs_kept_then_unpacked", MISTAKES["read_past_the_end"],
                        "built_by_a_function")
    path = tmp_path / "user_program.py"
    path.write_text("from tempo.core.configs import ExecutionConfig\n"
                    "cfg = ExecutionConfig.test_cfg()\n" + source)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-2]  # the message line, above its `at` line
    assert last.startswith("tempo.core.errors.IndexExprError: "), out.stderr[-2000:]
    assert "t + 1 is past the end T - 1 of t" in last, last
    assert not DEFAULT_NAME.search(last), last


def test_a_program_in_a_module_compiled_from_another(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The names are globals of `model.py`, whose frames are gone when the caller compiles:
    the module of the line the error names is searched."""
    name = "tempo_user_model_for_dim_names"
    (tmp_path / f"{name}.py").write_text(HEADER + textwrap.dedent("""\
        from tempo.core.configs import ExecutionConfig

        ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=2)
        vb = ctx.variables_and_bounds
        (b, B), (t, T) = vb


        def build():
            with ctx:
                x = RT.from_symbol(t) + RT.from_symbol(b)
                x[b, t + 1][0:B, 0:T].sink_udf(lambda v: None)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        model = importlib.import_module(name)
        model.build()
        with pytest.raises(errors.IndexExprError) as info:
            model.ctx.compile({model.B: 2, model.T: 4})
        msg = str(info.value)
    finally:
        sys.modules.pop(name, None)
    assert "t + 1 is past the end T - 1 of t" in msg and "B = 2, T = 4" in msg, msg
    assert not DEFAULT_NAME.search(msg), msg
