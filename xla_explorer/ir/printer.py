"""Writes modules as XLA's HLO text.

The format is XLA's (`HloModule`, computations called before their callers, `ENTRY`, `ROOT`,
`name = shape opcode(operands), attr=value, metadata={...}`), without layouts: every array here
is row-major. `parser.parse_hlo` reads this text back exactly.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the module imports the printer for Module.to_text
    from .module import Computation, Instruction, Metadata, Module

# How typed attribute values print. Every other attribute value is a verbatim string.
INT_LIST_ATTRS = frozenset({
    "dimensions", "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims",
    "rhs_contracting_dims", "dynamic_slice_sizes",
    # gather and scatter's dimension numbers
    "offset_dims", "collapsed_slice_dims", "start_index_map", "slice_sizes",
    "operand_batching_dims", "start_indices_batching_dims",
    "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
    "input_batching_dims", "scatter_indices_batching_dims",
})
INT_ATTRS = frozenset({"iota_dimension", "index", "index_vector_dim"})
QUOTED_ATTRS = frozenset({"custom_call_target"})


def format_int_list(values) -> str:
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def format_slice(spec) -> str:
    parts = []
    for start, limit, stride in spec:
        parts.append(f"[{start}:{limit}]" if stride == 1 else f"[{start}:{limit}:{stride}]")
    return "{" + ", ".join(parts) + "}"


def format_padding(cfg) -> str:
    return "x".join(f"{lo}_{hi}" if interior == 0 else f"{lo}_{hi}_{interior}"
                    for lo, hi, interior in cfg)


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def format_string(s: str) -> str:
    """A quoted string, escaped as XLA escapes it, all on one line."""
    return '"' + "".join(_ESCAPES.get(c, c) for c in s) + '"'


def format_attr(key: str, value) -> str:
    if key in INT_LIST_ATTRS:
        text = format_int_list(value)
    elif key in INT_ATTRS:
        text = str(int(value))
    elif key == "slice":
        text = format_slice(value)
    elif key == "padding":
        text = format_padding(value)
    elif key in QUOTED_ATTRS:
        text = format_string(value)
    else:
        text = str(value)
    return f"{key}={text}"


def format_metadata(md: Metadata) -> str:
    parts = []
    if md.op_name:
        parts.append(f"op_name={format_string(md.op_name)}")
    if md.source_file:
        parts.append(f"source_file={format_string(md.source_file)}")
    if md.source_line:
        parts.append(f"source_line={md.source_line}")
    if md.extra:
        parts.append(md.extra)
    return "metadata={" + " ".join(parts) + "}"


def format_scalar(value, dtype: np.dtype) -> str:
    if dtype == np.bool_:
        return "true" if value else "false"
    if dtype.kind in "iu":
        return str(int(value))
    value = dtype.type(value)
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = str(value)  # the shortest text that reads back to the same float of this width
    return text[:-2] if text.endswith(".0") else text


def format_literal(literal: np.ndarray) -> str:
    dtype = literal.dtype
    if literal.ndim == 0:
        return format_scalar(literal[()], dtype)

    def rec(a: np.ndarray) -> str:
        if a.ndim == 1:
            return "{" + ", ".join(format_scalar(v, dtype) for v in a) + "}"
        return "{ " + ", ".join(rec(sub) for sub in a) + " }"

    return rec(literal)


def format_instruction(inst: Instruction, *, is_root: bool = False, metadata: bool = True,
                       large_constants: bool = True) -> str:
    if inst.opcode == "parameter":
        inside = str(inst.parameter_number)
    elif inst.opcode == "constant":
        if not large_constants and inst.literal.size > 8:
            inside = "{...}"
        else:
            inside = format_literal(inst.literal)
    else:
        inside = ", ".join(op.name for op in inst.operands)
    parts = [f"{inst.name} = {inst.shape} {inst.opcode}({inside})"]
    parts += [format_attr(k, v) for k, v in inst.attrs]
    if metadata and inst.metadata:
        parts.append(format_metadata(inst.metadata))
    line = ", ".join(parts)
    return ("ROOT " if is_root else "") + line


def format_computation(comp: Computation, *, entry: bool = False, metadata: bool = True,
                       large_constants: bool = True) -> str:
    lines = [("ENTRY " if entry else "") + comp.name + " {"]
    for inst in comp.instructions:
        lines.append("  " + format_instruction(inst, is_root=inst is comp.root, metadata=metadata,
                                               large_constants=large_constants))
    lines.append("}")
    return "\n".join(lines)


def format_header(module: Module) -> str:
    parts = [f"HloModule {module.name}"]
    if module.is_scheduled:
        parts.append("is_scheduled=true")
    if module.input_output_alias:
        aliases = ", ".join(f"{{{out}}}: ({param}, {{}}, may-alias)"
                            for out, param in module.input_output_alias)
        parts.append(f"input_output_alias={{ {aliases} }}")
    params = ", ".join(str(p.shape) for p in module.entry.parameters)
    parts.append(f"entry_computation_layout={{({params})->{module.entry.root.shape}}}")
    return ", ".join(parts)


def print_module(module: Module, *, metadata: bool = True, large_constants: bool = True) -> str:
    """HLO text for `module`. With large_constants=False, big literals print as `{...}`,
    as XLA does by default; that text is for reading, not for parsing back."""
    blocks = [format_header(module)]
    for comp in module.computations:
        blocks.append(format_computation(comp, metadata=metadata, large_constants=large_constants))
    blocks.append(format_computation(module.entry, entry=True, metadata=metadata,
                                     large_constants=large_constants))
    return "\n\n".join(blocks) + "\n"
