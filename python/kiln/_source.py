"""The script text Kiln compiles for a decorated Python function.

Kiln compiles one file of defs. For ``@kiln.script def f`` that file is made
from the real source file: ``f`` and every module-level function of the same
file that it reaches through global names (helpers, transitively) are copied
at their own line numbers, with everything else blanked, so each error's
file:line:col points into the user's file. Decorator lines are blanked.
Module-level numbers, strings and bools that the functions read become
assignments after the last line. Helpers from other files are appended after
that (their line numbers are then approximate).
"""
import inspect
import linecache
import re
import textwrap
import types

from .errors import ScriptError

_DEF = re.compile(r"^\s*(async\s+)?def\s")
_CONST_TYPES = (int, float, bool, str)


def _names(code):
    """Global names a code object (and its nested code objects) reads."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _is_const(v):
    if isinstance(v, _CONST_TYPES):
        return True
    return isinstance(v, (tuple, list)) and all(isinstance(i, (int, float, bool)) for i in v)


def _block(lines, fn):
    """(first line number, lines) of fn's def, decorators blanked, dedented."""
    start = fn.__code__.co_firstlineno
    body = inspect.getblock(lines[start - 1:])
    out = []
    seen_def = False
    for line in body:
        if not seen_def and _DEF.match(line):
            seen_def = True
        out.append(line if seen_def else "\n")
    text = textwrap.dedent("".join(out))
    return start, text.splitlines(keepends=True)


def _unwrap(obj):
    # kiln.script wrappers and functools.wraps chains lead to the Python function.
    inner = getattr(obj, "__wrapped__", None)
    return _unwrap(inner) if inner is not None else obj


def virtual_source(fn):
    """(source text, filename) to compile for Python function `fn`."""
    fn = _unwrap(fn)
    if not isinstance(fn, types.FunctionType):
        raise ScriptError(f"kiln.script: expected a Python function, got {type(fn).__name__}")
    filename = fn.__code__.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise ScriptError(
            f"kiln.script: the source of '{fn.__name__}' is not available (defined in "
            f"{filename}); pass the source text instead: kiln.script(source, fn=\"name\")")
    # The functions to copy: fn, then what it reaches through global names.
    funcs, consts, seen = [], {}, set()
    todo = [fn]
    while todo:
        f = todo.pop()
        if f.__code__ in seen:
            continue
        seen.add(f.__code__)
        funcs.append(f)
        for name in sorted(_names(f.__code__)):
            v = f.__globals__.get(name)
            v = _unwrap(v) if v is not None else v
            if isinstance(v, types.FunctionType):
                todo.append(v)
            elif v is not None and _is_const(v) and not isinstance(v, type):
                consts[name] = v
    here = [f for f in funcs if f.__code__.co_filename == filename]
    elsewhere = [f for f in funcs if f.__code__.co_filename != filename]
    out = ["\n"] * len(lines)
    for f in here:
        start, block = _block(lines, f)
        for i, line in enumerate(block):
            j = start - 1 + i
            if j < len(out):
                out[j] = line if line.endswith("\n") else line + "\n"
            else:
                out.append(line if line.endswith("\n") else line + "\n")
    tail = []
    for f in elsewhere:
        other = linecache.getlines(f.__code__.co_filename, f.__globals__)
        if other:
            tail += ["\n"] + _block(other, f)[1]
    for name, v in consts.items():
        if name not in {f.__name__ for f in funcs}:
            tail.append(f"{name} = {v!r}\n")
    return "".join(out + tail), filename
