"""The fuzzer's scenario kinds: what the op-chain programs of tests/programs.py cannot express.

Each kind is a hypothesis strategy that draws a `Scenario`: a short, self-contained script
(NumPy and xla_explorer only) that makes one or more calls on a backend and checks each against
eager NumPy. The fuzzer (tests/fuzz.py) runs that very script on every backend, and prints it as
the reproduction of whatever it finds, so a printed script shows exactly what ran.

  predicates      np.isnan / isinf / isfinite, np.where on them, nan_to_num, np.fmax / fmin,
                  np.maximum / minimum, np.max / argmax / sign / clip and the supported forms of
                  np.nansum / nanmax / nanmin (np.where(np.isnan(v), ...) then the reduction),
                  applied to values computed inside the program (x * 2, x + y, x / y,
                  np.exp(x), x - x, 1 / x, ...), on inputs full of NaN, +-inf, +-0, denormals
                  and huge finite values.
  transcendental  exp, exp2, expm1, log, log2, log10, log1p, sqrt, cbrt, square, reciprocal,
                  power, sinh, cosh, tanh, arcsinh, arccosh, arctanh, arcsin, arccos, arctan,
                  sigmoid and softplus (what the tracer supports; np.logaddexp is not), on
                  inputs at and around the dtype's thresholds: where exp, sinh and cosh
                  overflow and underflow to denormals and to 0, where x * x overflows, near 1
                  for arccosh and arctanh, near -1 for log1p, where a lowering switches formula
                  (arcsinh and arccosh at 1e4 / 1e8), ...: each value stepped up to 40 ulps
                  from one of these points, moved up to 2%, or anywhere between two of them
                  (log-uniformly: the inside of sinh's [ln max, ln max + ln 2]), either sign;
                  the function alone, negated, halved, guarded by np.isfinite, reduced by
                  np.max, or paired with a second one.
  scalars         one `xe.jit` function called 3-6 times in a row (a warm cache) with Python
                  ints, floats and bools of every size (0, 2, 127, 2**31, 2**40, 2**63,
                  2**70, negative, inf, nan, ...) beside arrays of int8..int64, uint8..uint64,
                  float32, float64 and bool; where NumPy raises (NEP 50: int32 array * 2**40
                  is an OverflowError) the compiled call must raise too. Also functions that
                  write a Python number into an array (a[...] = n: NaN, inf and big floats
                  into an int array raise) and np.clip / np.where with big bounds (NumPy drops
                  a clip bound beyond the array's type, where wraps a big int); an error that
                  says NumPy raises where NumPy answered is a mismatch, not a refusal.
  aliasing        a function that updates an input in place (x += 1, x *= 2, x[1:3] = 0, ...),
                  called with arguments that share memory (f(b, b), f(b, b[1:]), f(b[::2], b),
                  f(b, b.T), ...), after a warm-up call on unshared copies or none; what it
                  returns, its arguments and the base array afterwards, against NumPy's run
                  on a base shared the same way. The compiled call may refuse with a clear
                  error instead: counted as refused, not failed.
  retype          one `xe.jit` function called with arrays of 3-4 dtypes in turn (int64,
                  float64, float32, int32 in any order), then another shape, then the first
                  arguments again; and `xe.explore(f, first arguments).run(each later one)`,
                  which must give NumPy's answer or raise TypeError.

The judge (PRELUDE, carried by every script): a call's outcome is its value or its exception.
NumPy raising means the compiled call must raise as well (any clear error will do). NumPy
answering means the compiled call must give the same structure (a Python number as the same
Python type, an array or NumPy scalar with NumPy's dtype and shape), integers and bools
exactly, and floats NaN, inf or -inf exactly where NumPy's are (never inf for a finite value
or the other way round, whatever the tolerance), finite ones within

    |got - want| <= rtol * |want| + ULPS * ulp(want),   ULPS = 8

both in the least precise float type the value was computed through (a float64 result of
float32 math carries float32 rounding). ULPS replaces the tests' absolute tolerance (1e-6 for
float32, 1e-12 for float64), so tiny and denormal results are judged at their own scale: an
absolute 1e-6 would accept a float32 denormal flushed to zero, or expm1(1e-20) = 0, while two
correct float32 exp2 near -149 differ by 2 ulps, which is 7e-4 of the value. 8 is twice the
largest distance from NumPy measured over the transcendental kind's inputs (4 ulps, float32
sigmoid; fastmath.py documents up to 4 for its float32 log). rtol is 0 for the predicates and
transcendental programs, which are element-wise ops that round once or such functions (and
whose sums are exact, below), so ULPS alone bounds them; elsewhere it is the tests' relative
tolerance (xla_explorer.api.tolerance: 2e-5 for float32, 1e-9 for float64), for sums whose
order differs from NumPy's. The sign of zero is not compared (nor is it by api.compare). The
programs are written so that the bound is fair: no product feeds a sum (a fused multiply-add
would round once where NumPy rounds twice), and the summed terms of the nansum form are
integers, exact in any order of summation.

How they are drawn. Table rows (a function, a template, an op) are picked by `pick`, about
evenly. The fuzzer takes each kind's groups (GROUPS: its functions, or the predicates' first
use) in turn, each group a hypothesis run of its own, so that every function is tried as
often as the others and with its own thresholds (draw_scenarios).
"""
from __future__ import annotations

import hashlib
import linecache
import math
import textwrap
import traceback
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from tests.programs import array_source

KINDS = ("predicates", "transcendental", "scalars", "aliasing", "retype")

PRELUDE = '''\
import traceback

import numpy as np
import xla_explorer as xe
from xla_explorer.errors import CompileError, TraceError, VerifyError

FINDINGS = []  # (status, message) for each call where the compiled one is not NumPy's
ULPS = 8  # any finite float may be off by this many ulps of its precision, however small
RTOL = {"float16": 1e-3, "float32": 2e-5, "float64": 1e-9}  # xla_explorer.api.tolerance
CLEAR = (CompileError, TraceError, TypeError, ValueError, OverflowError)  # errors that say why


def attempt(call):
    """What a call gives: (its value, None) or (None, the exception it raised)."""
    try:
        with np.errstate(all="ignore"):
            return call(), None
    except Exception as e:  # an exception is an outcome, compared like a value
        return None, e


def shown(value, error=None):
    if error is not None:
        lines = str(error).strip().splitlines()
        return f"raised {type(error).__name__}: {lines[0] if lines else ''}"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {shown(v)}" for k, v in value.items())
    if isinstance(value, tuple):
        return "(" + ", ".join(shown(v) for v in value) + ")"
    if isinstance(value, (np.ndarray, np.generic)):
        text = np.array2string(np.asarray(value), precision=17, separator=", ", threshold=40)
        return f"{type(value).__name__} {value.dtype}{list(np.shape(value))} {text}"
    return f"{type(value).__name__} {value!r}"


def _class(a):
    return np.where(np.isnan(a), "nan", np.where(a == np.inf, "inf",
                                                 np.where(a == -np.inf, "-inf", "finite")))


def difference(got, want, precision=None, rtol=None):
    """Why `got` is not NumPy's `want` (None when it is): same structure and types, integers
    exact, floats NaN / inf / -inf where NumPy's are and finite ones within rtol * |want| +
    ULPS ulps, both of `precision` (the least precise float type the value went through;
    rtol None: RTOL's for it)."""
    if isinstance(want, dict):
        for key, w in want.items():
            why = difference(got[key], w, precision, rtol)
            if why:
                return f"{key}: {why}"
        return None
    if isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{shown(got)} where NumPy gives a {type(want).__name__} of {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            why = difference(g, w, precision, rtol)
            if why:
                return f"output {i}: {why}"
        return None
    if isinstance(want, (bool, int, float)) and not isinstance(want, np.generic):
        if type(got) is not type(want):
            return f"a {type(got).__name__} where NumPy gives a Python {type(want).__name__}"
        if isinstance(want, int):  # unbounded: compared as Python compares them
            return None if got == want else f"{got!r} where NumPy gives {want!r}"
    elif not isinstance(got, (np.ndarray, np.generic)):
        return f"a Python {type(got).__name__} where NumPy gives a {type(want).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype or g.shape != w.shape:
        return f"{g.dtype}{list(g.shape)} where NumPy gives {w.dtype}{list(w.shape)}"
    if w.dtype.kind != "f":
        bad = g != w
        tol = None
    else:
        p = w.dtype if precision is None else np.dtype(precision)
        p = max(p, w.dtype, key=lambda d: RTOL[d.name])  # the looser of the two
        with np.errstate(all="ignore"):
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            ulp = np.spacing(np.abs(w)).astype(np.float64)
            ulp_p = np.spacing(np.abs(w64).astype(p)).astype(np.float64)
            ulp = np.maximum(ulp, np.where(np.isfinite(ulp_p), ulp_p, 0))
            tol = (RTOL[p.name] if rtol is None else rtol) * np.abs(w64) + ULPS * ulp
            err = np.abs(g64 - w64)
        finite = (_class(w) == "finite") & (_class(g) == "finite")
        bad = (_class(g) != _class(w)) | (finite & ~(err <= tol))
    if not np.any(bad):
        return None
    shown_at = []
    for index in np.argwhere(bad)[:3]:
        i = tuple(int(k) for k in index)
        note = ""
        if tol is not None and np.isfinite(g64[i]) and np.isfinite(w64[i]):
            note = f" (off by {err[i]:.3g}, allowed {tol[i]:.3g})"
        shown_at.append(f"[{', '.join(map(str, i))}] {g[i]!r} where NumPy gives {w[i]!r}{note}")
    return f"{int(np.sum(bad))} of {w.size} values differ: " + "; ".join(shown_at)


def check(what, compiled, numpy, precision=None, rtol=None, accepted=(), refusals=()):
    """Call `numpy` (eager NumPy), then `compiled` (the same on xla_explorer), and record a
    finding where they disagree. Where NumPy raises, the compiled call must raise a clear error
    too. Where NumPy answers, an exception of `accepted` is fine, one of `refusals` is counted
    as a refusal (a clear error, not a wrong answer), and any other is an error."""
    want, want_error = attempt(numpy)
    got, got_error = attempt(compiled)
    said = (f"{what}\\n    NumPy:    {shown(want, want_error)}"
            f"\\n    compiled: {shown(got, got_error)}")
    # The verifier rejecting the explorer's own program is a bug here, never a refusal.
    if got_error is not None and (isinstance(got_error, VerifyError)
                                  or not isinstance(got_error, CLEAR + accepted + refusals)):
        where = traceback.format_tb(got_error.__traceback__)[-1].rstrip()
        FINDINGS.append(("error", f"{said}\\n{where}"))
    elif want_error is not None:
        if got_error is None:
            FINDINGS.append(("mismatch", f"{said}\\n    NumPy raised; the compiled call did not"))
    elif got_error is not None:
        if "NumPy raises this too" in str(got_error):  # a false claim: no refusal
            FINDINGS.append(("mismatch", f"{said}\\n    the compiled call says NumPy raises; "
                                         "it did not"))
        elif not isinstance(got_error, accepted):
            status = "refused" if isinstance(got_error, refusals) else "error"
            FINDINGS.append((status, said))
    else:
        why = difference(got, want, precision, rtol)
        if why:
            FINDINGS.append(("mismatch", f"{said}\\n    {why}"))


def finish():
    """Run as a script: print the findings and exit 1 if any call mismatched or failed."""
    if __name__ != "__main__":
        return
    for status, message in FINDINGS:
        print(f"{status.upper()}: {message}")
    bad = any(status != "refused" for status, _ in FINDINGS)
    refused = sum(status == "refused" for status, _ in FINDINGS)
    print("MISMATCH" if bad else "every call matches NumPy"
          + (f" ({refused} refused)" if refused else ""))
    raise SystemExit(1 if bad else 0)
'''


@dataclass
class Scenario:
    kind: str
    title: str  # one line: the ops or the calls
    body: str  # the script after the prelude and `BACKEND = ...`; it calls check(...)

    def script(self, backend: str, header: str = "") -> str:
        comment = "\n".join("# " + line for line in header.splitlines())
        return (f"{comment}\n{PRELUDE}\n\nBACKEND = {backend!r}\n\n{self.body.strip()}\n"
                f"finish()\n").lstrip("\n")

    def run(self, backend: str, name: str = "") -> list[tuple[str, str]]:
        """The script on `backend`, in this process: its findings, (status, message) each.
        `name` (which case this is) goes into the file name tracebacks show."""
        text = self.script(backend)
        # Named after its content and known to linecache, so tracebacks and the tracer's
        # error messages can quote the generated lines.
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        filename = f"<fuzz {name or self.kind} {digest}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {"__name__": "__fuzz__"}
        try:
            exec(compile(text, filename, "exec"), namespace)
        except Exception:  # outside check(): the script itself is broken
            return [("error", "the script failed outside its checks:\n"
                     + traceback.format_exc(limit=-4))]
        return list(namespace["FINDINGS"])


# ---------------------------------------------------------------------------------------------
# Choices and literals


def pick(draw, n: int) -> int:
    """One of n table rows; about evenly where hypothesis's integers(0, n - 1) favours the
    first (and its mutations repeat whichever came up early)."""
    return draw(st.integers(0, 2**32 - 1)) % n


def py_source(v) -> str:
    """A Python number as source: powers of two as 2**k (+-1), floats exactly."""
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        a = abs(v)
        for k in range(16, 80):
            for d in (-1, 0, 1):
                if a == 2**k + d:
                    text = f"2**{k}" + {-1: " - 1", 0: "", 1: " + 1"}[d]
                    return f"-({text})" if v < 0 and d else ("-" + text if v < 0 else text)
        return repr(v)
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else '-float("inf")'
    return repr(float(v))


def _array(values, dtype, shape) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.array(values, dtype=dtype).reshape(shape)


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _indent(lines: str) -> str:
    return textwrap.indent(lines.strip("\n"), "    ")


# ---------------------------------------------------------------------------------------------
# predicates: NaN / inf predicates and their consumers on values computed in the program


def special_values(dtype) -> list[float]:
    """NaN, +-inf, +-0, denormals, the smallest and largest normals, and the points where
    x * x, exp(x) and 1 / x overflow or underflow, exactly representable in `dtype`."""
    fi = np.finfo(dtype)
    big, tiny, sub = float(fi.max), float(fi.tiny), float(fi.smallest_subnormal)
    values = [math.nan, math.inf, -math.inf, 0.0, -0.0, sub, -sub, tiny / 4, tiny, -tiny,
              big, -big, big / 2, math.sqrt(big), -math.sqrt(big), math.log(big),
              math.log(big) + 1, -math.log(big) - 20, 1 / big, 1.0, -1.0, 0.5, 3.0, -2.0]
    return [float(np.asarray(v).astype(dtype)) for v in values]


# (name, what it takes, template): "inputs" ops take the inputs only, so that no product or
# sum of computed values meets another add (fused multiply-add would round it differently);
# "any" ops take any value computed so far.
PREDICATE_OPS = [
    ("x*2", "any", "{x} * 2"),
    ("x*0.5", "any", "{x} * 0.5"),
    ("x-x", "inputs", "{x} - {x}"),
    ("x*0", "any", "{x} * 0"),
    ("x*x", "any", "{x} * {x}"),
    ("1/x", "any", "1 / {x}"),
    ("-x", "any", "-{x}"),
    ("abs", "any", "np.abs({x})"),
    ("exp", "any", "np.exp({x})"),
    ("log", "any", "np.log({x})"),
    ("sqrt", "any", "np.sqrt({x})"),
    ("tanh", "any", "np.tanh({x})"),
    ("x+y", "inputs", "{x} + {y}"),
    ("x-y", "inputs", "{x} - {y}"),
    ("x*y", "inputs", "{x} * {y}"),
    ("x/y", "inputs", "{x} / {y}"),
]

# (name, template): {v} a computed value, {w} any value (input or computed).
PREDICATE_USES = [
    ("isnan", "np.isnan({v})"),
    ("isinf", "np.isinf({v})"),
    ("isfinite", "np.isfinite({v})"),
    ("where-finite", "np.where(np.isfinite({v}), {w}, 0.0)"),
    ("where-nan", "np.where(np.isnan({v}), 0.0, {v})"),
    ("where-inf", "np.where(np.isinf({v}), -1.0, {v})"),
    ("nan_to_num", "np.where(np.isnan({v}), 0.0, np.clip({v}, np.finfo({v}.dtype).min, "
                   "np.finfo({v}.dtype).max))"),
    ("fmax", "np.fmax({v}, {w})"),
    ("fmin", "np.fmin({v}, {w})"),
    ("maximum", "np.maximum({v}, {w})"),
    ("minimum", "np.minimum({v}, {w})"),
    ("nanmax", "np.max(np.where(np.isnan({v}), -np.inf, {v}))"),
    ("nanmin", "np.min(np.where(np.isnan({v}), np.inf, {v}))"),
    # np.nansum's supported form; the finite terms rounded to integers of at most 1e5, so the
    # sum is exact in any order and infinities still reach it.
    ("nansum", "np.sum(np.where(np.isnan({v}), 0.0, np.where(np.isfinite({v}), "
               "np.rint(np.clip({v}, -1e5, 1e5)), {v})))"),
    ("any-nan", "np.any(np.isnan({v}))"),
    ("all-finite", "np.all(np.isfinite({v}))"),
    ("count-inf", "np.sum(np.isinf({v}))"),
    ("v!=v", "{v} != {v}"),
    ("where-greater", "np.where({v} > {w}, {v}, {w})"),
    ("max", "np.max({v})"),
    ("argmax", "np.argmax({v})"),
    ("sign", "np.sign({v})"),
    ("clip", "np.clip({v}, -1.0, 1.0)"),
    ("isnan|isinf", "np.isnan({v}) | np.isinf({w})"),
    ("times-isfinite", "{v} * np.isfinite({w})"),
    ("where-finite(v*2)", "np.where(np.isfinite({v} * 2), {v}, 0.0)"),
]

# The NaN / inf predicates proper twice as often as the other uses.
_PREDICATES = {"isnan", "isinf", "isfinite", "where-finite", "where-nan", "where-inf",
               "nan_to_num", "any-nan", "all-finite", "count-inf", "v!=v", "where-finite(v*2)"}
WEIGHTED_USES = [i for i, (name, _) in enumerate(PREDICATE_USES)
                 for _ in range(2 if name in _PREDICATES else 1)]

FLOAT_PAIRS = [(np.float32, np.float32), (np.float64, np.float64), (np.float32, np.float64),
               (np.float64, np.float32)]
PREDICATE_SHAPES = [(), (6,), (17,), (3, 5)]  # 17: a vector loop and its remainder


def _float_elements(dtype):
    width = 32 if dtype == np.float32 else 64
    return st.one_of(st.sampled_from(special_values(dtype)), st.floats(width=width),
                     st.floats(-4, 4, width=width))


def _precision(inputs) -> str:
    return ', precision="float32"' if any(x.dtype == np.float32 for x in inputs) else ""


def _explore_check(args: list[str], inputs) -> str:
    """The check of an element-wise program: every op rounds once (or is a function within a
    few ulps of NumPy's), so ULPS alone bounds it (rtol=0)."""
    names = ", ".join(args)
    copies = ", ".join(f"{a}.copy()" for a in args)
    return (f'check({f"f({names})"!r},\n'
            f"      lambda: xe.explore(f, {names}, backend=BACKEND).run({copies}),\n"
            f"      lambda: f({copies}){_precision(inputs)}, rtol=0)\n")


@st.composite
def predicate_cases(draw, group: int | None = None) -> Scenario:
    """`group`: the first use is PREDICATE_USES[WEIGHTED_USES[group]] (else drawn too)."""
    dtypes = draw(st.sampled_from(FLOAT_PAIRS))
    shape = draw(st.sampled_from(PREDICATE_SHAPES))
    shapes = [shape, draw(st.sampled_from([shape, ()]))]
    inputs = [_array(draw(st.lists(_float_elements(dt), min_size=_size(s), max_size=_size(s))),
                     dt, s) for dt, s in zip(dtypes, shapes)]
    names = ["x0", "x1"]
    lines, used = [], []
    for _ in range(draw(st.integers(1, 3))):
        op = pick(draw, len(PREDICATE_OPS))
        name, takes, template = PREDICATE_OPS[op]
        pool = names[:2] if takes == "inputs" else names
        x, y = (pool[draw(st.integers(0, len(pool) - 1))] for _ in range(2))
        out = f"t{len(names)}"
        lines.append(f"{out} = {template.format(x=x, y=y)}  # {name}")
        names.append(out)
        used.append(name)
    results = []
    for k in range(draw(st.integers(1, 3))):
        use = group if k == 0 and group is not None else pick(draw, len(WEIGHTED_USES))
        name, template = PREDICATE_USES[WEIGHTED_USES[use]]
        v = names[draw(st.integers(2, len(names) - 1))]
        w = names[draw(st.integers(0, len(names) - 1))]
        lines.append(f"r{k} = {template.format(v=v, w=w)}  # {name}")
        results.append(f"r{k}")
        used.append(name)
    if draw(st.booleans()):
        results.append(names[-1])  # a computed value as an output too: multi-output fusion
    lines.append(f"return ({', '.join(results)},)")
    body = "\n".join(f"{n} = {array_source(x)}" for n, x in zip(names, inputs))
    body += f"\n\n\ndef f(x0, x1):\n{_indent(chr(10).join(lines))}\n\n\n"
    body += _explore_check(names[:2], inputs)
    return Scenario("predicates", " ; ".join(used), body)


# ---------------------------------------------------------------------------------------------
# transcendental: functions at and around their overflow and underflow thresholds

_LN2 = math.log(2.0)


def _limits(dtype) -> dict:
    fi = np.finfo(dtype)
    big, tiny, sub = float(fi.max), float(fi.tiny), float(fi.smallest_subnormal)
    f32 = np.dtype(dtype) == np.float32
    return dict(big=big, tiny=tiny, sub=sub, eps=float(fi.eps), ln_big=math.log(big),
                ln_tiny=math.log(tiny), ln_sub=math.log(sub), log2_big=math.log2(big),
                log2_tiny=math.log2(tiny), log2_sub=math.log2(sub),
                switch=1e4 if f32 else 1e8,  # the arcsinh / arccosh lowerings change formula
                tanh_one=10.0 if f32 else 19.1)  # fastmath's tanh is +-1 from here on


def _exp_points(t):
    return [t["ln_big"], t["ln_tiny"], t["ln_sub"], t["ln_sub"] - _LN2 / 2, 0.0, 1e-8, 1.0]


def _log_points(t):
    return [t["tiny"], t["sub"], 1.0, t["big"], 0.0, 2.0, 1 + t["eps"]]


# (name, template of {x}, the points its inputs are drawn around, from _limits(dtype))
TRANSCENDENTAL = [
    ("exp", "np.exp({x})", _exp_points),
    ("expm1", "np.expm1({x})", lambda t: _exp_points(t) + [_LN2, -t["ln_big"]]),
    ("exp2", "np.exp2({x})", lambda t: [t["log2_big"], t["log2_tiny"], t["log2_sub"],
                                        t["log2_sub"] - 0.5, 0.0, 0.5]),
    ("sinh", "np.sinh({x})", lambda t: [t["ln_big"], t["ln_big"] + _LN2, 0.0, 1e-4, 1e-8, 1.0]),
    ("cosh", "np.cosh({x})", lambda t: [t["ln_big"], t["ln_big"] + _LN2, 0.0, 1e-4, 1.0]),
    ("tanh", "np.tanh({x})", lambda t: [0.0, 1e-8, 0.625, 9.0, t["tanh_one"], t["ln_big"]]),
    ("log", "np.log({x})", _log_points),
    ("log2", "np.log2({x})", _log_points),
    ("log10", "np.log10({x})", _log_points),
    ("log1p", "np.log1p({x})", lambda t: [-1.0, 0.0, 1e-8, t["tiny"], t["big"], t["eps"], 1.0]),
    ("sqrt", "np.sqrt({x})", lambda t: [t["sub"], t["tiny"], t["big"], 0.0, 1.0]),
    ("cbrt", "np.cbrt({x})", lambda t: [t["sub"], t["tiny"], t["big"], 0.0, 1.0]),
    ("square", "np.square({x})", lambda t: [math.sqrt(t["big"]), math.sqrt(t["tiny"]),
                                            math.sqrt(t["sub"]), 1.0]),
    ("reciprocal", "1 / {x}", lambda t: [1 / t["big"], t["tiny"], t["sub"], t["big"], 0.0]),
    ("power2.5", "np.power({x}, 2.5)", lambda t: [t["big"] ** 0.4, t["tiny"] ** 0.4, 1.0, 0.0]),
    ("arcsinh", "np.arcsinh({x})", lambda t: [0.0, t["tiny"], 1.0, t["switch"],
                                              math.sqrt(t["big"]), t["big"]]),
    ("arccosh", "np.arccosh({x})", lambda t: [1.0, 1 + t["eps"], 2.0, t["switch"],
                                              math.sqrt(t["big"]), t["big"]]),
    ("arctanh", "np.arctanh({x})", lambda t: [1.0, 1 - t["eps"], 0.0, 0.5, t["tiny"], 1e-4]),
    ("arcsin", "np.arcsin({x})", lambda t: [1.0, 0.0, 0.5, t["tiny"]]),
    ("arccos", "np.arccos({x})", lambda t: [1.0, 0.0, 0.5, t["tiny"]]),
    ("arctan", "np.arctan({x})", lambda t: [t["big"], t["tiny"], 1.0, t["switch"]]),
    ("sigmoid", "1 / (1 + np.exp(-{x}))", lambda t: [t["ln_big"], 0.0, t["ln_sub"], 20.0]),
    ("softplus", "np.log1p(np.exp({x}))", lambda t: [t["ln_big"], 0.0, 20.0, 40.0]),
]

# How the function meets the rest of the program: alone, or fused with a consumer.
WRAPPERS = [
    ("plain", "return {f}"),
    ("negated", "return {f_neg}"),
    ("halved", "return {f} * 0.5"),
    ("guarded", "return np.where(np.isfinite(x), {f}, 0.0)"),
    ("max", "return np.max({f})"),
    ("pair", "return {f}, {g}"),
]
TRANSCENDENTAL_SHAPES = [(), (16,), (3, 11)]


def _step(value: float, k: int, dtype) -> float:
    """`value` in `dtype`, then k representable values up (k > 0) or down."""
    v = np.asarray(value).astype(dtype)[()]
    toward = dtype(np.inf if k > 0 else -np.inf)
    for _ in range(abs(k)):
        v = np.nextafter(v, toward)
    return float(v)


def _near(dtype, points):
    """Values at and around `points`: up to 40 ulps from one, up to 2% from one, or anywhere
    between two neighbours (log-uniformly where both are positive: the inside of a range
    such as sinh's [ln max, ln max + ln 2], where exp(x) overflows and sinh(x) does not);
    either sign."""
    def value(i, how, k, r, t, negative):
        point = points[i]
        with np.errstate(all="ignore"):
            if how == 0:
                v = _step(point, k, dtype)
            elif how == 1 or i + 1 == len(points):
                v = point * (1 + r)
            else:
                lo, hi = point, points[i + 1]
                v = math.exp(math.log(lo) + t * (math.log(hi) - math.log(lo))) if lo > 0 \
                    else lo + t * (hi - lo)
            v = float(np.asarray(v).astype(dtype))
        return -v if negative else v

    return st.builds(value, st.integers(0, len(points) - 1), st.integers(0, 2),
                     st.integers(-40, 40), st.floats(-0.02, 0.02), st.floats(0, 1), st.booleans())


@st.composite
def transcendental_cases(draw, group: int | None = None) -> Scenario:
    """`group`: the function is TRANSCENDENTAL[group] (else drawn too)."""
    index = pick(draw, len(TRANSCENDENTAL)) if group is None else group
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    name, template, points = TRANSCENDENTAL[index]
    near = _near(dtype, sorted({abs(p) for p in points(_limits(dtype))}))  # either sign
    width = 32 if dtype == np.float32 else 64
    elements = st.one_of(near, near, near,
                         st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0]),
                         st.floats(width=width))
    shape = draw(st.sampled_from(TRANSCENDENTAL_SHAPES))
    x = _array(draw(st.lists(elements, min_size=_size(shape), max_size=_size(shape))), dtype, shape)
    wrapper, line = WRAPPERS[pick(draw, len(WRAPPERS))]
    second = TRANSCENDENTAL[pick(draw, len(TRANSCENDENTAL))] if wrapper == "pair" else None
    line = line.format(f=template.format(x="x"), f_neg=template.format(x="-x"),
                       g=second and second[1].format(x="x"))
    title = f"{name} ({wrapper}{', ' + second[0] if second else ''}), {np.dtype(dtype)}"
    body = f"x = {array_source(x)}\n\n\ndef f(x):\n    {line}\n\n\n" + _explore_check(["x"], [x])
    return Scenario("transcendental", title, body)


# ---------------------------------------------------------------------------------------------
# scalars: Python numbers of every size through a warm jit cache

# (parameters, expression): a, b arrays; n, m Python numbers.
SCALAR_FUNCTIONS = [
    ("a, n", "a * n"),
    ("a, n", "a + n"),
    ("n", "n * n"),
    ("a, n", "n - a"),
    ("a, n", "a // n"),
    ("a, n", "np.maximum(a, n)"),
    ("a, n", "a == n"),
    ("a, n", "a < n"),
    ("n, m", "n * m + 1"),
    ("a, n", "a * n + n"),
    ("n", "n // 3 + n % 7"),
    ("n", "-n * 2"),
    ("a, n", "(a + n).sum()"),
    ("a, n", "a & n"),
    ("a, n", "np.where(a > 0, a, n)"),
    ("a, n", "a * (n + 1)"),
    ("a, n", "a ** n"),
    ("n", "n * 2.5"),
    ("n", "n / 3"),
    ("a, b, n", "a * n + b"),
    ("a, n, m", "a * n - m"),
    # A Python number written into an array (NumPy converts it as int(v): NaN, inf and
    # floats beyond an integer type fail), and clip and where with big bounds (NumPy drops a
    # clip bound beyond the array's type on its own side; where wraps a big int unchecked).
    ("a, n", "a[...] = n\nreturn a"),
    ("a, n", "a[a > 0] = n * 2\nreturn a"),
    ("a, n", "np.clip(a, 0, n)"),
    ("a, n", "np.clip(a, n, None)"),
    ("a, n, m", "np.clip(a, n, m)"),
    ("a, n", "np.where(a > 0, n, -n)"),
    ("a, n", "a + np.asarray(n, dtype=a.dtype)"),
]
# The dtypes xla_explorer takes: the common ones often, the narrow ones (and float16) less.
SUPPORTED_DTYPES = [np.int32, np.int64, np.float32, np.float64, np.bool_]
NARROW_DTYPES = [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64, np.float16]
ARRAY_DTYPES = SUPPORTED_DTYPES * 6 + NARROW_DTYPES * 2
INT_SCALARS = [0, 1, 2, 3, -1, -2, 7, 100, 127, 128, -128, -129, 255, 256, 2**15 - 1, 2**15,
               2**16, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**32, 2**40, -2**40, 2**53 + 1,
               2**62, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64 - 1, 2**64, 2**70, -2**70]
FLOAT_SCALARS = [0.0, -0.0, 0.5, -1.5, 2.0, 3.0, 1e10, 2.0**70, 1e300, -1e300, 3.4e38, 3.5e38,
                 math.inf, -math.inf, math.nan, 1e-320, 1e-40]
SCALAR_SHAPES = [(), (4,), (2, 3)]


def _scalars():
    return st.one_of(st.sampled_from(INT_SCALARS), st.sampled_from(INT_SCALARS),
                     st.sampled_from(FLOAT_SCALARS), st.booleans(),
                     st.integers(-2**70, 2**70))


def _typed_scalars(kind: type):
    """Python numbers of one type: a call with it hits the program another one compiled."""
    if kind is float:
        return st.sampled_from(FLOAT_SCALARS)
    return st.one_of(st.sampled_from(INT_SCALARS), st.integers(-2**70, 2**70))


def _small_array(rng, dtype, shape) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "u":
        return rng.integers(0, 10, size=shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return (rng.integers(-12, 13, size=shape) / 4).astype(dtype)  # quarters: exact sums


@st.composite
def scalar_cases(draw, group: int | None = None) -> Scenario:
    """`group`: the function is SCALAR_FUNCTIONS[group] (else drawn too)."""
    params, expression = SCALAR_FUNCTIONS[pick(draw, len(SCALAR_FUNCTIONS)) if group is None
                                          else group]
    params = params.split(", ")
    shape = draw(st.sampled_from(SCALAR_SHAPES))
    first = draw(st.sampled_from(ARRAY_DTYPES))
    b_dtype = draw(st.sampled_from(ARRAY_DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # Half the time each Python number argument keeps one type, and the first call passes a
    # small one: the later calls, big ones, NaN and inf among them, run the program it
    # compiled (and must check what NumPy checks there, as the first trace did).
    warm = {p: draw(st.sampled_from([int, float])) for p in params if p not in ("a", "b")} \
        if draw(st.booleans()) else None
    arrays: dict[str, np.ndarray] = {}
    checks, titles = [], []
    for call in range(draw(st.integers(3, 6))):
        # Mostly the first dtype again (the warm cache), sometimes another.
        a_dtype = draw(st.sampled_from([first] * 12 + ARRAY_DTYPES))
        args = []
        for p in params:
            if p in ("a", "b"):
                dt = np.dtype(a_dtype if p == "a" else b_dtype)
                name = f"{p}_{dt.name}"
                if name not in arrays:
                    arrays[name] = _small_array(rng, dt, shape)
                args.append(name)
            elif warm is None:
                args.append(py_source(draw(_scalars())))
            elif call == 0:
                args.append(py_source(draw(st.sampled_from([1, 2, 5] if warm[p] is int
                                                           else [0.5, 2.0, 2.7]))))
            else:
                args.append(py_source(draw(_typed_scalars(warm[p]))))
        plain, copies = ", ".join(args), ", ".join(
            f"{a}.copy()" if a in arrays else a for a in args)
        checks.append(f'check({f"call {call + 1}: f({plain})"!r}, lambda: j({copies}), '
                      f"lambda: f({copies}),\n      refusals=CLEAR)")
        titles.append(f"f({plain})")
    body = "\n".join(f"{name} = {array_source(a)}" for name, a in arrays.items())
    code = expression if "\n" in expression else f"return {expression}"  # statements, or one
    body += (f"\n\n\ndef f({', '.join(params)}):\n{_indent(code)}\n\n\n"
             "j = xe.jit(f, backend=BACKEND)\n" + "\n".join(checks) + "\n")
    return Scenario("scalars", f"f = {expression.replace(chr(10), '; ')}: " + ", ".join(titles),
                    body)


# ---------------------------------------------------------------------------------------------
# aliasing: in-place updates of arguments that share memory

# Bodies of f(x, y), each updating an input in place.
ALIAS_FUNCTIONS = [
    "x += 1\nreturn y * 1",
    "x *= 2\nreturn x + y",
    "x[1:3] = 0\nreturn y * 1",
    "x += y\nreturn x * 1",
    "y -= 1\nx *= 3\nreturn x - y",
    "x[...] = y * 2\nreturn y + 0",
    "x += 1\ny += 1\nreturn x + 0, y + 0",
    "t = y * 1\nx -= t\nreturn t",
    "x[0] = 7\nreturn y.sum()",
    "s = y.sum()\nx += 1\nreturn s, y.sum()",
    "x *= -1\nreturn np.maximum(x, y)",
    "x += 1\nreturn y",
    "x[...] = y[::-1]\nreturn x * 1",
    "x += y * 2\nreturn y - x",
]
# (base shape, x and y as views of the base b)
ALIAS_PATTERNS = [
    ((8,), "b", "b"), ((8,), "b", "b[1:]"), ((8,), "b[1:]", "b"), ((8,), "b[:-1]", "b[1:]"),
    ((8,), "b[1:]", "b[:-1]"), ((8,), "b[::2]", "b"), ((8,), "b", "b[::2]"),
    ((8,), "b[::2]", "b[1::2]"), ((8,), "b[::2]", "b[::2]"), ((8,), "b[::-1]", "b"),
    ((8,), "b", "b[::-1]"), ((8,), "b[2:6]", "b[4:8]"), ((8,), "b[:4]", "b[4:]"),
    ((8,), "b[::2]", "b[::-2]"),
    ((4, 4), "b", "b.T"), ((4, 4), "b.T", "b"), ((4, 4), "b", "b[0]"),
    ((4, 4), "b[0]", "b[:, 0]"), ((4, 4), "b[1:]", "b[:-1]"), ((4, 4), "b", "b[::-1, ::-1]"),
    ((4, 4), "b[:, 1:]", "b[:, :-1]"), ((4, 4), "b[0]", "b[1]"),
]
ALIAS_DTYPES = [np.float64, np.int64, np.float32, np.int32]

ALIAS_HELPERS = '''
def copied(value):
    if isinstance(value, tuple):
        return tuple(copied(v) for v in value)
    return value.copy() if isinstance(value, np.ndarray) else value


def run(fn, arguments):
    """fn(*arguments(b)) on a fresh copy b of B: what it returned, its arguments and b after."""
    b = B.copy()
    args = arguments(b)
    out = fn(*args)
    return {"returned": copied(out), "arguments after": copied(tuple(args)), "b after": b}
'''


@st.composite
def alias_cases(draw, group: int | None = None) -> Scenario:
    """`group`: the function is ALIAS_FUNCTIONS[group] (else drawn too)."""
    lines = ALIAS_FUNCTIONS[pick(draw, len(ALIAS_FUNCTIONS)) if group is None else group]
    shape, x, y = ALIAS_PATTERNS[pick(draw, len(ALIAS_PATTERNS))]
    pattern = f"{x}, {y}"
    dtype = np.dtype(draw(st.sampled_from(ALIAS_DTYPES)))
    steps = np.arange(_size(shape))
    base = (steps * 1.25 - 3 if dtype.kind == "f" else steps * 3 - 7).astype(dtype).reshape(shape)
    warm = draw(st.booleans())
    calls = []
    if warm:  # the same shapes and dtypes, unshared: the compiled program is cached for them
        unshared = f"{x}.copy(), {y}.copy()"
        calls.append(f'check({f"f({unshared}), on copies"!r},\n'
                     f"      lambda: run(j, lambda b: ({unshared})), "
                     f"lambda: run(f, lambda b: ({unshared})),\n      refusals=CLEAR)")
    calls.append(f'check({f"f({pattern})"!r},\n      lambda: run(j, lambda b: ({pattern})), '
                 f"lambda: run(f, lambda b: ({pattern})),\n      refusals=CLEAR)")
    body = (f"B = {array_source(base)}\n\n\ndef f(x, y):\n{_indent(lines)}\n\n"
            f"{ALIAS_HELPERS}\n\nj = xe.jit(f, backend=BACKEND)\n" + "\n".join(calls) + "\n")
    title = (f"{'; '.join(lines.splitlines())} with f({pattern}), {dtype}"
             + (" after a warm-up" if warm else ""))
    return Scenario("aliasing", title, body)


# ---------------------------------------------------------------------------------------------
# retype: dtype and shape changes between calls of one jit function, and explore().run

RETYPE_FUNCTIONS = [
    ("x", "x * 2"),
    ("x", "x / 2"),
    ("x", "x // 2"),
    ("x", "x % 3"),
    ("x", "np.sum(x)"),
    ("x", "x.mean(axis=0)"),
    ("x", "np.sqrt(np.abs(x))"),
    ("x", "-x"),
    ("x", "x.max()"),
    ("x", "x ** 2"),
    ("x", "np.floor(x)"),
    ("x", "x * 0.5 + 1"),
    ("x", "(x > 1) * x"),
    ("x", "np.where(x > 0, x, 0)"),
    ("x, y", "x + y"),
    ("x, y", "x * y - 1"),
    ("x, y", "np.maximum(x, y)"),
    ("x, y", "x > y"),
    ("x, y", "np.where(x > y, x, y)"),
    ("x, y", "np.abs(x - y)"),
    ("x, y", "np.dot(x, y)"),
    ("x, y", "x // (np.abs(y) + 1)"),
]
RETYPE_DTYPES = [np.int64, np.float64, np.float32, np.int32]  # what xla_explorer takes
RETYPE_SHAPES = [(4,), (3, 3), ()]


def _retype_array(rng, dtype, shape) -> np.ndarray:
    dtype = np.dtype(dtype)
    values = rng.integers(-20, 21, size=shape)
    if dtype.kind == "u":
        return np.abs(values).astype(dtype)
    if dtype.kind == "i":
        return values.astype(dtype)
    return (values / 4).astype(dtype)  # fractions that an integer program would lose


@st.composite
def retype_cases(draw, group: int | None = None) -> Scenario:
    """`group`: the function is RETYPE_FUNCTIONS[group] (else drawn too)."""
    params, expression = RETYPE_FUNCTIONS[pick(draw, len(RETYPE_FUNCTIONS)) if group is None
                                          else group]
    params = params.split(", ")
    order = draw(st.permutations(RETYPE_DTYPES))[:draw(st.integers(3, 4))]
    first_shape = draw(st.sampled_from(RETYPE_SHAPES))
    other_shape = draw(st.sampled_from([s for s in RETYPE_SHAPES if s != first_shape]))
    mixed = draw(st.booleans())  # y of its own dtype
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    plan = [(dt, first_shape) for dt in order]
    plan.append((draw(st.sampled_from(order)), other_shape))
    plan.append(plan[0])  # back to the first signature: a cache hit
    arrays, calls, lines = [], [], []
    for k, (dt, shape) in enumerate(plan, start=1):
        names = []
        for p in params:
            d = draw(st.sampled_from(RETYPE_DTYPES)) if (p == "y" and mixed) else dt
            name = f"{p}{k}"
            arrays.append(f"{name} = {array_source(_retype_array(rng, d, shape))}")
            names.append(name)
        calls.append(names)
    args = [", ".join(n) for n in calls]
    for k, a in enumerate(args, start=1):
        lines.append(f'check({f"jit call {k}: f({a})"!r}, lambda: j({a}), lambda: f({a}),\n'
                     "      refusals=CLEAR)")
    # An exploration traced for the first arguments, run on each later one (where NumPy
    # cannot run f on the first ones there is none: jit call 1 judged that).
    lines.append(f"\nex, _ = attempt(lambda: xe.explore(f, {args[0]}, backend=BACKEND))")
    lines.append("if ex is not None:")
    for a in args[1:]:
        lines.append(f'    check({f"xe.explore(f, {args[0]}).run({a})"!r}, lambda: ex.run({a}), '
                     f"lambda: f({a}),\n          accepted=(TypeError,))")
    body = ("\n".join(arrays) + f"\n\n\ndef f({', '.join(params)}):\n    return {expression}\n\n\n"
            "j = xe.jit(f, backend=BACKEND)\n" + "\n".join(lines) + "\n")
    title = (f"f = {expression}: " + ", ".join(f"{np.dtype(d).name}{list(s)}" for d, s in plan)
             + (" (y of other dtypes)" if mixed and "y" in params else ""))
    return Scenario("retype", title, body)


STRATEGIES = {
    "predicates": predicate_cases,
    "transcendental": transcendental_cases,
    "scalars": scalar_cases,
    "aliasing": alias_cases,
    "retype": retype_cases,
}
# Each strategy's groups (its `group` argument: the function, or the first use). The fuzzer
# draws the groups in turn, because one hypothesis run draws a few of them again and again:
# it mutates the examples it has, so in 300 transcendental cases expm1 came 38 times and cosh
# twice, and each function's own thresholds are the point.
GROUPS = {
    "predicates": len(WEIGHTED_USES),
    "transcendental": len(TRANSCENDENTAL),
    "scalars": len(SCALAR_FUNCTIONS),
    "aliasing": len(ALIAS_FUNCTIONS),
    "retype": len(RETYPE_FUNCTIONS),
}


def draw_scenarios(kind: str, count: int, seed: int, draw) -> list[Scenario]:
    """`count` scenarios of `kind`, its groups in turn; `draw(strategy, n, seed)` is the
    fuzzer's hypothesis driver. Each group is a hypothesis run of its own with a seed of its
    own, and its first example is dropped: hypothesis begins every run with its simplest
    example, the same for every seed."""
    groups = GROUPS[kind]
    runs = [draw(STRATEGIES[kind](g), count // groups + (g < count % groups) + 1,
                 seed * 1000 + g)[1:] for g in range(groups) if g < count]
    return [runs[i % groups][i // groups] for i in range(count)
            if i // groups < len(runs[i % groups])]

