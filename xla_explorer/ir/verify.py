"""The HLO verifier: what every module must satisfy, checked after every pass that changes one.

Names are unique in the module; operands are defined before use; every opcode is in the op
table with the right number of operands of allowed element types; every instruction's declared
shape is the one its op's shape rule gives; data-movement attributes fit their operands; called
computations exist and take what they get.
"""
from __future__ import annotations

import re

from ..errors import VerifyError
from .module import Computation, Instruction, Module
from .ops import OPS, Group, infer_shape
from .shape import Shape


def _fail(comp: Computation, inst: Instruction | None, message: str):
    where = f"{comp.name}/{inst.name}" if inst is not None else comp.name
    raise VerifyError(f"{where}: {message}")


def _shapes(xs) -> str:
    return ", ".join(f"{o.name}: {o.shape}" for o in xs)


def _check_types(comp, inst, row):
    if row.group in (Group.LEAF, Group.STRUCTURAL, Group.CALL, Group.NOT_COMPILABLE):
        return
    ops = inst.operands
    for o in ops:
        if o.shape.is_tuple:
            _fail(comp, inst, f"{inst.opcode} does not take a tuple ({o.name}: {o.shape})")
        if o.dtype.kind not in row.kinds and row.group is not Group.REDUCE:
            _fail(comp, inst, f"{inst.opcode} does not take {o.shape} ({o.name})")
    if row.group in (Group.ELEMENTWISE, Group.COMPARE_SELECT):
        arrays = ops[1:] if inst.opcode == "select" else ops
        if inst.opcode == "select" and (ops[0].dtype.kind != "b" or ops[0].dims != inst.dims):
            _fail(comp, inst, "select's predicate must be a pred array of the result's shape, "
                              f"not {ops[0].shape}")
        if inst.opcode == "clamp":
            # clamp(min, x, max): the bounds may be scalars of x's type.
            lo, x, hi = ops
            if any(b.dtype != x.dtype or b.dims not in ((), x.dims) for b in (lo, hi)):
                _fail(comp, inst, "clamp's bounds must be scalars or arrays of x's shape and "
                                  "type: " + _shapes(ops))
        elif inst.opcode != "convert" and len({(o.dims, o.dtype) for o in arrays}) > 1:
            _fail(comp, inst, "operands differ in shape or type: " + _shapes(arrays))


def _attrs_for_inference(inst: Instruction) -> dict:
    attrs = dict(inst.attrs)
    if not inst.shape.is_tuple:
        attrs["out_dims"] = inst.dims
        attrs["new_dtype"] = inst.dtype
    return attrs


# Attributes the shape rules take on trust (the output dimensions of a broadcast, a reshape):
# each check returns what is wrong, or None.


def _is_permutation(dims, rank) -> bool:
    return sorted(dims) == list(range(rank))


def _check_broadcast(inst):
    (x,) = inst.operands
    dims = tuple(inst.attr("dimensions", ()))
    if len(dims) != x.shape.rank:
        return f"broadcast of rank-{x.shape.rank} {x.name} lists {len(dims)} dimensions {dims}"
    if len(set(dims)) != len(dims) or any(not 0 <= d < len(inst.dims) for d in dims):
        return f"broadcast dimensions {dims} must be distinct dimensions of {inst.shape}"
    for src, dst in enumerate(dims):
        if x.dims[src] != inst.dims[dst]:
            return (f"broadcast puts dimension {src} of {x.name} (size {x.dims[src]}) at "
                    f"dimension {dst} of size {inst.dims[dst]}")
    return None


def _check_reshape(inst):
    (x,) = inst.operands
    if x.shape.size != inst.shape.size:
        return f"{inst.opcode} of {x.shape} ({x.shape.size} elements) to {inst.shape} " \
               f"({inst.shape.size} elements)"
    return None


def _check_transpose(inst):
    dims = tuple(inst.attr("dimensions", ()))
    if not _is_permutation(dims, inst.operands[0].shape.rank):
        return f"transpose dimensions {dims} are not a permutation of the operand's dimensions"
    return None


def _check_slice(inst):
    (x,) = inst.operands
    spec = inst.attr("slice", ())
    if len(spec) != x.shape.rank:
        return f"slice has {len(spec)} ranges for rank-{x.shape.rank} {x.name}"
    for (start, limit, stride), n in zip(spec, x.dims):
        if not (0 <= start <= limit <= n and stride >= 1):
            return f"slice [{start}:{limit}:{stride}] does not fit a dimension of size {n}"
    return None


def _check_concatenate(inst):
    dims = tuple(inst.attr("dimensions", ()))
    ops = inst.operands
    if len(dims) != 1 or not ops or not 0 <= dims[0] < ops[0].shape.rank:
        return f"concatenate needs one dimension of its operands, not {dims}"
    (axis,) = dims
    for o in ops:
        if o.dtype != ops[0].dtype or o.shape.rank != ops[0].shape.rank or any(
                a != b for d, (a, b) in enumerate(zip(o.dims, ops[0].dims)) if d != axis):
            return f"concatenate operands differ other than in dimension {axis}: {_shapes(ops)}"
    return None


def _check_pad(inst):
    x, value = inst.operands
    if value.dims != () or value.dtype != x.dtype:
        return f"pad value {value.name} must be a scalar {x.dtype.name}, not {value.shape}"
    cfg = inst.attr("padding", ())
    if len(cfg) != x.shape.rank or any(i < 0 for _, _, i in cfg):
        return f"padding {cfg} does not fit rank-{x.shape.rank} {x.name}"
    return None


def _check_dot(inst):
    a, b = inst.operands
    lb, lc = tuple(inst.attr("lhs_batch_dims", ())), tuple(inst.attr("lhs_contracting_dims", ()))
    rb, rc = tuple(inst.attr("rhs_batch_dims", ())), tuple(inst.attr("rhs_contracting_dims", ()))
    if a.dtype != b.dtype:
        return f"dot operands differ in type: {_shapes((a, b))}"
    for side, x, ds in (("lhs", a, lb + lc), ("rhs", b, rb + rc)):
        if len(set(ds)) != len(ds) or any(not 0 <= d < x.shape.rank for d in ds):
            return f"{side} batch and contracting dimensions {ds} are not distinct dimensions " \
                   f"of {x.shape}"
    if len(lb) != len(rb) or len(lc) != len(rc):
        return "dot needs as many lhs as rhs batch dimensions, and contracting dimensions"
    if [a.dims[d] for d in lc] != [b.dims[d] for d in rc]:
        return f"dot contracts sizes {[a.dims[d] for d in lc]} with {[b.dims[d] for d in rc]}"
    if [a.dims[d] for d in lb] != [b.dims[d] for d in rb]:
        return f"dot batch sizes differ: {[a.dims[d] for d in lb]} and {[b.dims[d] for d in rb]}"
    return None


def _check_iota(inst):
    d = inst.attr("iota_dimension")
    if inst.shape.is_tuple or d is None or not 0 <= d < inst.shape.rank:
        return f"iota_dimension={d} is not a dimension of {inst.shape}"
    return None


def _check_get_tuple_element(inst):
    (t,) = inst.operands
    index = inst.attr("index")
    if not t.shape.is_tuple or index is None or not 0 <= index < len(t.shape.elements):
        return f"get-tuple-element index={index} of {t.name}: {t.shape}"
    return None


def _check_dynamic_slice(inst):
    x, *starts = inst.operands
    sizes = tuple(inst.attr("dynamic_slice_sizes", ()))
    if len(starts) != x.shape.rank or len(sizes) != x.shape.rank:
        return f"dynamic-slice of rank-{x.shape.rank} {x.name} needs {x.shape.rank} start " \
               f"indices and sizes"
    if any(not 0 <= k <= n for k, n in zip(sizes, x.dims)):
        return f"dynamic_slice_sizes {sizes} do not fit {x.shape}"
    return _check_indices(starts)


def _check_dynamic_update_slice(inst):
    x, update, *starts = inst.operands
    if len(starts) != x.shape.rank or update.shape.rank != x.shape.rank:
        return f"dynamic-update-slice of rank-{x.shape.rank} {x.name} needs an update of that " \
               f"rank and {x.shape.rank} start indices"
    if update.dtype != x.dtype or any(k > n for k, n in zip(update.dims, x.dims)):
        return f"update {update.name}: {update.shape} does not fit in {x.shape}"
    return _check_indices(starts)


def _check_indices(starts):
    for s in starts:
        if s.shape.is_tuple or s.dims != () or s.dtype.kind not in "iu":
            return f"start index {s.name} must be an integer scalar, not {s.shape}"
    return None


# -- gather and scatter: their dimension numbers, as XLA's semantics constrain them.


def _distinct_in(dims, rank) -> bool:
    return len(set(dims)) == len(dims) and all(0 <= d < rank for d in dims)


def _index_vector(inst, idx, ivd):
    """The index vector's length, or a problem: index_vector_dim must be a dimension of the
    indices or their rank (an implicit trailing 1), and the indices integers."""
    if idx.dtype.kind != "i":
        return None, f"{inst.opcode} indices {idx.name} must be integers, not {idx.shape}"
    if ivd is None or not 0 <= ivd <= idx.shape.rank:
        return None, f"index_vector_dim={ivd} is not a dimension of {idx.shape} nor its rank"
    return (idx.dims[ivd] if ivd < idx.shape.rank else 1), None


def _check_gather(inst):
    x, idx = inst.operands
    offset = tuple(inst.attr("offset_dims", ()))
    collapsed = tuple(inst.attr("collapsed_slice_dims", ()))
    start_map = tuple(inst.attr("start_index_map", ()))
    sizes = tuple(inst.attr("slice_sizes", ()))
    n, problem = _index_vector(inst, idx, inst.attr("index_vector_dim"))
    if problem:
        return problem
    if len(sizes) != x.shape.rank or any(not 0 <= k <= m for k, m in zip(sizes, x.dims)):
        return f"slice_sizes {sizes} do not fit {x.name}: {x.shape}"
    if tuple(sorted(collapsed)) != collapsed or not _distinct_in(collapsed, x.shape.rank) or any(
            sizes[d] != 1 for d in collapsed):
        return (f"collapsed_slice_dims {collapsed} must be sorted, distinct dimensions of "
                f"{x.shape} whose slice size is 1")
    if len(start_map) != n or not _distinct_in(start_map, x.shape.rank):
        return (f"start_index_map {start_map} must name {n} distinct dimensions of {x.shape} "
                "(one per element of the index vector)")
    out_rank = idx.shape.rank - (inst.attr("index_vector_dim") < idx.shape.rank) + len(offset)
    if tuple(sorted(offset)) != offset or not _distinct_in(offset, out_rank) or \
            len(offset) + len(collapsed) != x.shape.rank:
        return (f"offset_dims {offset} must be sorted, distinct dimensions of the result, one "
                f"per dimension of {x.shape} that is not collapsed")
    return None


def _check_scatter(inst):
    x, idx, upd = inst.operands
    window = tuple(inst.attr("update_window_dims", ()))
    inserted = tuple(inst.attr("inserted_window_dims", ()))
    to_operand = tuple(inst.attr("scatter_dims_to_operand_dims", ()))
    ivd = inst.attr("index_vector_dim")
    n, problem = _index_vector(inst, idx, ivd)
    if problem:
        return problem
    if upd.dtype != x.dtype:
        return f"scatter updates {upd.name}: {upd.shape} differ in type from {x.shape}"
    if tuple(sorted(window)) != window or not _distinct_in(window, upd.shape.rank):
        return f"update_window_dims {window} must be sorted, distinct dimensions of {upd.shape}"
    if tuple(sorted(inserted)) != inserted or not _distinct_in(inserted, x.shape.rank) or \
            len(window) + len(inserted) != x.shape.rank:
        return (f"inserted_window_dims {inserted} must be sorted, distinct dimensions of "
                f"{x.shape}, with update_window_dims one per other dimension")
    if len(to_operand) != n or not _distinct_in(to_operand, x.shape.rank):
        return (f"scatter_dims_to_operand_dims {to_operand} must name {n} distinct dimensions "
                f"of {x.shape} (one per element of the index vector)")
    batch = [m for d, m in enumerate(idx.dims) if d != ivd]
    scatter_dims = [m for d, m in enumerate(upd.dims) if d not in window]
    if batch != scatter_dims:
        return (f"the updates' scatter dimensions {scatter_dims} must be the indices' batch "
                f"dimensions {batch}")
    operand_window = [d for d in range(x.shape.rank) if d not in inserted]
    for w, d in zip(window, operand_window):
        if upd.dims[w] > x.dims[d]:
            return f"update window {[upd.dims[w] for w in window]} does not fit {x.shape}"
    return None


_STRUCTURE = {
    "broadcast": _check_broadcast,
    "reshape": _check_reshape,
    "bitcast": _check_reshape,
    "transpose": _check_transpose,
    "slice": _check_slice,
    "concatenate": _check_concatenate,
    "pad": _check_pad,
    "dot": _check_dot,
    "iota": _check_iota,
    "get-tuple-element": _check_get_tuple_element,
    "dynamic-slice": _check_dynamic_slice,
    "dynamic-update-slice": _check_dynamic_update_slice,
    "gather": _check_gather,
    "scatter": _check_scatter,
}


def _scalars(shapes) -> str:
    return ", ".join(str(s) for s in shapes)


def _check_callee(comp: Computation, inst: Instruction, callee: Computation):
    """A called computation must take what the caller passes and give what it declares."""
    params = callee.parameters
    if inst.opcode in ("call", "fusion"):
        given = [o.shape for o in inst.operands]
        if len(params) != len(given):
            _fail(comp, inst, f"{callee.name} takes {len(params)} parameters, given {len(given)}")
        if [str(p.shape) for p in params] != [str(s) for s in given]:
            _fail(comp, inst, f"{callee.name} takes ({_scalars(p.shape for p in params)}), "
                              f"given ({_scalars(given)})")
        if str(callee.root.shape) != str(inst.shape):
            _fail(comp, inst, f"{callee.name} returns {callee.root.shape}, declared {inst.shape}")
    elif inst.opcode == "while":
        _check_while(comp, inst, callee)
    elif inst.opcode == "scatter":
        x = inst.operands[0]
        want = [Shape(x.dtype, ())] * 2
        if [str(p.shape) for p in params] != [str(s) for s in want] or \
                str(callee.root.shape) != str(want[0]):
            _fail(comp, inst, f"scatter's combiner {callee.name} must take two {want[0]} and "
                              f"return one, not ({_scalars(p.shape for p in params)}) -> "
                              f"{callee.root.shape}")
    elif inst.opcode == "sort":
        _check_sort(comp, inst, callee)
    elif inst.opcode in ("reduce", "reduce-window"):
        n = len(inst.operands) // 2
        if len(inst.operands) != 2 * n or n == 0:
            _fail(comp, inst, f"{inst.opcode} takes operands and as many init values")
        arrays, inits = inst.operands[:n], inst.operands[n:]
        for x, init in zip(arrays, inits):
            if x.shape.is_tuple or init.shape.is_tuple or init.dims != () or init.dtype != x.dtype:
                _fail(comp, inst, f"init value {init.name}: {init.shape} must be a scalar of "
                                  f"{x.name}'s type")
            if x.dims != arrays[0].dims:
                _fail(comp, inst, f"{inst.opcode} operands differ in shape: {_shapes(arrays)}")
        want = [Shape(x.dtype, ()) for x in arrays] * 2
        if len(params) != len(want):
            _fail(comp, inst, f"{callee.name} takes {len(params)} parameters, given {len(want)}")
        if [str(p.shape) for p in params] != [str(s) for s in want]:
            _fail(comp, inst, f"the reducer {callee.name} takes "
                              f"({_scalars(p.shape for p in params)}), given ({_scalars(want)})")
        out = want[0] if n == 1 else "(" + _scalars(want[:n]) + ")"
        if str(callee.root.shape) != str(out):
            _fail(comp, inst, f"the reducer {callee.name} returns {callee.root.shape}, not {out}")


def _check_while(comp: Computation, inst: Instruction, callee: Computation):
    """A while's condition and body each take the state (its operand); the body gives the
    next state, the condition a pred[]; the while gives the last state."""
    state = inst.operands[0].shape
    if str(inst.shape) != str(state):
        _fail(comp, inst, f"a while gives its state's shape {state}, declared {inst.shape}")
    params = callee.parameters
    if len(params) != 1 or str(params[0].shape) != str(state):
        _fail(comp, inst, f"{callee.name} must take the loop's state ({state}), not "
                          f"({_scalars(p.shape for p in params)})")
    is_body = callee.name == inst.attr("body")
    want = str(state) if is_body else "pred[]"
    if str(callee.root.shape) != want:
        _fail(comp, inst, f"{'body' if is_body else 'condition'} {callee.name} must return "
                          f"{want}, not {callee.root.shape}")


def _check_sort(comp: Computation, inst: Instruction, callee: Computation):
    """A sort's operands share one shape; its comparator takes a scalar pair (lhs, rhs) of
    each operand's type and returns a pred scalar."""
    xs = inst.operands
    if not xs or any(x.shape.is_tuple or x.dims != xs[0].dims for x in xs):
        _fail(comp, inst, f"sort operands must be arrays of one shape: {_shapes(xs)}")
    dims = tuple(inst.attr("dimensions", ()))
    if len(dims) != 1 or not 0 <= dims[0] < xs[0].shape.rank:
        _fail(comp, inst, f"sort takes one dimension of {xs[0].shape}, not dimensions={dims}")
    want = [Shape(x.dtype, ()) for x in xs for _ in range(2)]
    params = callee.parameters
    if [str(p.shape) for p in params] != [str(s) for s in want]:
        _fail(comp, inst, f"the comparator {callee.name} takes "
                          f"({_scalars(p.shape for p in params)}), but a sort of "
                          f"{len(xs)} operand(s) gives it ({_scalars(want)})")
    if str(callee.root.shape) != "pred[]":
        _fail(comp, inst, f"the comparator {callee.name} returns {callee.root.shape}, not pred[]")


def _check_reduce_dims(comp, inst):
    dims = tuple(inst.attr("dimensions", ()))
    rank = inst.operands[0].shape.rank if inst.operands and not inst.operands[0].shape.is_tuple else 0
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        _fail(comp, inst, f"reduce dimensions {dims} are not distinct dimensions of "
                          f"{inst.operands[0].shape}")


def _check_reduce_window(comp, inst):
    x = inst.operands[0]
    fields = dict(re.findall(r"(\w+)=([^\s{}]+)", str(inst.attr("window", ""))))
    try:
        size = [int(v) for v in fields["size"].split("x")]
        stride = [int(v) for v in fields.get("stride", "x".join(["1"] * len(size))).split("x")]
        pad = [tuple(map(int, v.split("_")))
               for v in fields.get("pad", "x".join(["0_0"] * len(size))).split("x")]
    except (KeyError, ValueError):
        _fail(comp, inst, f"cannot read window={inst.attr('window')}")
    if not len(size) == len(stride) == len(pad) == x.shape.rank:
        _fail(comp, inst, f"window={inst.attr('window')} does not fit {x.shape}")
    if set(fields.get("lhs_dilate", "1").split("x")) | set(fields.get("rhs_dilate", "1").split("x")) \
            != {"1"}:
        return  # dilated windows: the shape is taken on trust
    dims = [(n + lo + hi - k) // s + 1 for n, k, s, (lo, hi) in zip(x.dims, size, stride, pad)]
    if inst.shape.is_tuple or list(inst.dims) != dims:
        _fail(comp, inst, f"declared {inst.shape}, but its window gives dimensions {dims}")


def verify_computation(module: Module, comp: Computation, names: dict[str, str]) -> None:
    defined: set[int] = set()
    numbers = []
    for inst in comp.instructions:
        if inst.name in names:
            _fail(comp, inst, f"name is used twice in the module (first in {names[inst.name]})")
        names[inst.name] = comp.name
        row = OPS.get(inst.opcode)
        if row is None:
            _fail(comp, inst, f"opcode {inst.opcode!r} is not in the op table")
        for o in inst.operands:
            if id(o) not in defined:
                _fail(comp, inst, f"operand {o.name} is not defined before use")
        if row.arity is not None and len(inst.operands) != row.arity:
            _fail(comp, inst, f"{inst.opcode} takes {row.arity} operands, has {len(inst.operands)}")
        if inst.opcode == "parameter":
            numbers.append(inst.parameter_number)
        if inst.opcode == "constant" and (inst.shape.is_tuple or inst.literal is None
                                          or inst.literal.shape != inst.dims
                                          or inst.literal.dtype != inst.dtype):
            _fail(comp, inst, "constant literal does not match its shape")
        _check_types(comp, inst, row)
        if inst.opcode in _STRUCTURE:
            problem = _STRUCTURE[inst.opcode](inst)
            if problem:
                _fail(comp, inst, problem)
        if inst.opcode == "reduce":
            _check_reduce_dims(comp, inst)
        for callee in inst.callees():
            if callee is not None:
                try:
                    target = module.computation(callee)
                except KeyError:
                    _fail(comp, inst, f"calls {callee}, which is not in the module")
                if target is comp:
                    _fail(comp, inst, f"calls its own computation {callee}")
                _check_callee(comp, inst, target)
        if inst.opcode == "reduce-window":
            _check_reduce_window(comp, inst)
        elif row.infer is not None:
            try:
                expected = infer_shape(inst.opcode, [o.shape for o in inst.operands],
                                       _attrs_for_inference(inst))
            except Exception as e:  # a malformed attribute or operand
                _fail(comp, inst, f"cannot work out its shape: {e!r}")
            if str(expected) != str(inst.shape):
                _fail(comp, inst, f"declared {inst.shape}, but its operands give {expected}")
        defined.add(id(inst))
    if sorted(numbers) != list(range(len(numbers))):
        _fail(comp, None, f"parameter numbers {sorted(numbers)} are not 0..{len(numbers) - 1}")


def verify(module: Module) -> Module:
    """Raise VerifyError on the first broken invariant; return the module when it holds."""
    names: dict[str, str] = {}
    comp_names = [c.name for c in module.all_computations]
    if len(set(comp_names)) != len(comp_names):
        raise VerifyError(f"computation names repeat: {comp_names}")
    for comp in module.all_computations:
        if not comp.instructions:
            raise VerifyError(f"{comp.name}: a computation needs at least a root")
        verify_computation(module, comp, names)
    _check_call_graph(module)
    n_out = len(module.entry.root.shape.elements) if module.entry.root.shape.is_tuple else 1
    n_param = len(module.entry.parameters)
    for out, param in module.input_output_alias:
        if not (0 <= out < n_out and 0 <= param < n_param):
            raise VerifyError(f"input_output_alias {{{out}}}: ({param}) is out of range")
        if str(module.entry.parameters[param].shape) != str(_element(module.entry.root.shape, out)):
            raise VerifyError(f"aliased output {out} and parameter {param} differ in shape")
    return module


def _check_call_graph(module: Module) -> None:
    """No computation may call itself, directly or through others (HLO has no recursion)."""
    calls = {c.name: [name for i in c for name in i.callees()] for c in module.all_computations}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: tuple[str, ...]):
        state[name] = 1
        for callee in calls.get(name, ()):
            if state.get(callee) == 1:
                cycle = " -> ".join(path[path.index(callee):] + (callee,))
                raise VerifyError(f"computations call each other in a cycle: {cycle}")
            if callee not in state:
                visit(callee, path + (callee,))
        state[name] = 2

    for comp in module.all_computations:
        if comp.name not in state:
            visit(comp.name, (comp.name,))


def _element(shape, index):
    return shape.elements[index] if shape.is_tuple else shape
