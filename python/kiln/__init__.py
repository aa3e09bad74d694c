"""Kiln: a JIT-compiling tensor expression engine, from Python.

    import kiln, torch
    import torch.nn.functional as F
    from torch import Tensor

    @kiln.script
    def mlp(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)

    y = mlp(x, w1, b1, w2, b2)      # torch tensors in, torch tensor out (no copies)
    print(mlp.explain())            # the fused kernels and why

A scripted function is compiled on its first call for the arguments' dtypes
and shapes (one compilation per signature; dims named in ``dynamic=`` or
declared symbolic in the script serve every size). Arrays are NumPy arrays,
PyTorch tensors or anything with ``__dlpack__`` or the buffer protocol, read
in place (strided views too); outputs are of the kind of the first tensor
argument. See docs/python.md.
"""
import threading

from . import _C
from . import errors as _errors
from ._source import virtual_source
from .errors import (ArgumentError, DeviceError, DTypeError, Error, InternalError, ScriptError,
                     ShapeError)

__all__ = ["script", "load", "compile", "compile_options", "ops", "Builder", "ScriptFunction",
           "Error", "ScriptError", "ShapeError", "DTypeError", "ArgumentError", "DeviceError",
           "InternalError", "__version__"]

__version__ = _C.version()
_C._set_error_factory(_errors.make)

_defaults = {}
_defaults_lock = threading.Lock()


class _Options:
    """kiln.compile_options(...): sets default compile options; as a context
    manager, only inside the ``with`` block."""

    def __init__(self, opts):
        with _defaults_lock:
            self._saved = dict(_defaults)
            _defaults.update(opts)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with _defaults_lock:
            _defaults.clear()
            _defaults.update(self._saved)
        return False


def compile_options(**options):
    """Default options for functions compiled from now on: device ("cpu",
    "sim", "cuda:0"), backend ("llvm", "loop-eval", "interp", "cuda"),
    opt_level, num_threads, fuse, optimize, fast_math, schedule, disk_cache,
    autotune, autotune_budget_s, cpu, cuda_arch. Returns a context manager
    that restores the previous defaults on exit. With no arguments, returns
    the current defaults as a dict."""
    if not options:
        with _defaults_lock:
            return dict(_defaults)
    return _Options(options)


def _options(local):
    with _defaults_lock:
        opts = dict(_defaults)
    opts.update(local)
    return opts


def _dynamic(dynamic):
    """dynamic={"x": [0]} or {"x": {0: "N"}} -> {name: {dim: symbol}}."""
    out = {}
    for name, dims in (dynamic or {}).items():
        if isinstance(dims, int):
            dims = [dims]
        if isinstance(dims, dict):
            out[name] = {int(d): str(s) for d, s in dims.items()}
        else:
            out[name] = {int(d): f"{name}_{int(d)}".replace("-", "m") for d in dims}
    return out


class ScriptFunction(_C.ScriptedFunction):
    """A script def compiled per call signature (what kiln.script returns).

    Call it like the Python function (the call goes straight to C++). ``.graph``
    is the graph IR of the last call's specialization, ``.explain()`` why it
    has the kernels it has, ``.dump(stage)`` any stage ("graph", "loops",
    "loops-scheduled", "llvm", "asm", ...), ``.code`` the scheduled loop IR;
    each takes the call's arguments to pick another specialization.
    ``.num_compiled`` counts the specializations. Compile options are taken
    when the ScriptFunction is made.
    """

    def __init__(self, source, filename, fn, options, dynamic, pyfunc=None):
        super().__init__(fn or "", _options(options), _dynamic(dynamic))
        self._text, self._filename = source, filename
        self.__wrapped__ = pyfunc
        self.__name__ = fn or (pyfunc.__name__ if pyfunc else "")
        self.__qualname__ = pyfunc.__qualname__ if pyfunc else self.__name__
        self.__doc__ = pyfunc.__doc__ if pyfunc else None
        self.__module__ = pyfunc.__module__ if pyfunc else __name__

    def _source_text(self):
        # Called by C++ once, at the first call: helpers defined after the
        # decorated function exist by then.
        if self._text is None:
            return virtual_source(self.__wrapped__)
        return self._text, self._filename

    def _spec(self, args, kwargs):
        if args or kwargs:
            return self.specialize(*args, **kwargs)
        self._load()
        s = self.last()
        if s is None:
            raise ArgumentError(f"{self.__name__} has not been called yet: call it, or pass the "
                                "arguments to pick the specialization")
        return s

    @property
    def graph(self):
        """Graph IR (text) of the last call's specialization, before passes."""
        return self._spec((), {}).graph

    def graph_for(self, *args, **kwargs):
        return self._spec(args, kwargs).graph

    def explain(self, *args, **kwargs):
        """Which kernels, what each fuses, why its boundaries are where they are."""
        return self._spec(args, kwargs).explain()

    def dump(self, stage, *args, **kwargs):
        """Text of one compile stage ("graph" or a stage of docs/cli.md's kiln dump)."""
        return self._spec(args, kwargs).dump(stage)

    @property
    def code(self):
        """The scheduled loop IR of the last call's kernels."""
        return self._spec((), {}).dump("loops-scheduled")

    @property
    def source(self):
        """The script text Kiln compiles (see kiln._source)."""
        if self._text is None:
            return virtual_source(self.__wrapped__)[0]
        return self._text

    def __repr__(self):
        return f"<kiln.ScriptFunction {self.__qualname__}>"


def script(obj=None, fn=None, *, dynamic=None, filename=None, **options):
    """Compile a function with Kiln.

    ``@kiln.script`` / ``kiln.script(pyfunc)``: the function's own source
    (and the module-level helpers it calls), compiled at first call.
    ``kiln.script(source_text, fn="name")``: a def in script text.
    ``dynamic={"x": [0]}`` makes dim 0 of ``x`` symbolic (``{"x": {0: "N"}}``
    names it; equal names must have equal sizes), so one compilation serves
    every batch size. Other keywords are compile options (see
    compile_options)."""
    if obj is None:  # @kiln.script(dynamic=...)
        return lambda f: script(f, fn, dynamic=dynamic, filename=filename, **options)
    if isinstance(obj, str):
        return ScriptFunction(obj, filename or "<script>", fn, options, dynamic)
    if not callable(obj):
        raise ArgumentError(f"kiln.script: expected a function or source text, got "
                            f"{type(obj).__name__}")
    return ScriptFunction(None, None, fn or obj.__name__, options, dynamic, pyfunc=obj)


def load(path, fn=None, *, dynamic=None, **options):
    """A def of a .kiln / .py script file (the last def when ``fn`` is None)."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise ArgumentError(f"kiln.load: cannot read {path}: {e.strerror}") from None
    return ScriptFunction(source, str(path), fn, options, dynamic)


def compile(function, **options):  # noqa: A001 - the C++ API's name
    """Compile a kiln.Function (from kiln.Builder.build or kiln.parse_ir);
    the result is called with arrays in the function's input order."""
    return _C.compile(function, _options(options))


def parse_ir(text):
    """A kiln.Function from graph IR text (docs/ir.md)."""
    return _C.parse_ir(text)


def ops():
    """The registered ops: dicts of name, signature, category and doc."""
    return _C.ops()


class Builder:
    """Builds a graph in code, as the C++ kiln::Builder:

        b = kiln.Builder("mlp")
        x = b.input("x", "f32", ["N", 784])
        w = b.input("w", "f32", [784, 10])
        y = b.op("relu", [b.op("matmul", [x, w])])
        f = kiln.compile(b.build([y]))
    """

    def __init__(self, name="main"):
        self._b = _C.Builder(name)

    def input(self, name, dtype, dims):
        return self._b.input(name, dtype, list(dims))

    def op(self, name, operands, **attrs):
        """Applies registered op `name`; returns its output (a tuple of
        outputs for ops with several)."""
        outs = self._b.op(name, list(operands), attrs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def build(self, outputs):
        if not isinstance(outputs, (list, tuple)):
            outputs = [outputs]
        return self._b.build(list(outputs))

    def __str__(self):
        return str(self._b)
