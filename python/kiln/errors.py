"""Kiln's exceptions.

Every error Kiln raises is a kiln.Error; the subclasses also derive from the
built-in exception Python code would expect, so existing handlers keep
working::

    kiln.Error                 base (an Exception)
    kiln.ScriptError           a located error in the script: SyntaxError
    kiln.ShapeError            sizes that do not fit: ValueError
    kiln.DTypeError            element types that do not fit: TypeError
    kiln.ArgumentError         wrong number, name or kind of arguments: TypeError
    kiln.DeviceError           memory or a device Kiln cannot use: RuntimeError
    kiln.InternalError         a bug in Kiln: RuntimeError

Errors located in the script (ScriptError always; ShapeError and DTypeError
when they come from a line of the script) carry ``filename``, ``lineno``,
``offset`` (1-based column) and ``text`` (the source line) pointing into the
user's own file: for a decorated function, the real .py file and line.
"""
import re

__all__ = ["Error", "ScriptError", "ShapeError", "DTypeError", "ArgumentError", "DeviceError",
           "InternalError"]


class Error(Exception):
    """Base class of Kiln's errors. ``filename``, ``lineno``, ``offset`` and
    ``text`` are set (None when the error has no place in a script)."""

    def __init__(self, *args):
        super().__init__(*args)
        if not isinstance(self, SyntaxError):
            self.filename = self.lineno = self.offset = self.text = None


class ScriptError(Error, SyntaxError):
    """A located error in a script (parse, name, type or lowering error)."""

    def __str__(self):
        return self.msg


class ShapeError(Error, ValueError):
    """Shapes that do not fit (at compile or call time)."""


class DTypeError(Error, TypeError):
    """Element types that do not fit, or that Kiln does not have."""


class ArgumentError(Error, TypeError):
    """Wrong number, name or kind of arguments."""


class DeviceError(Error, RuntimeError):
    """Memory Kiln cannot reach, or a device that is not available."""


class InternalError(Error, RuntimeError):
    """A broken invariant inside Kiln: please report it."""


_KINDS = {"script": ScriptError, "shape": ShapeError, "dtype": DTypeError,
          "argument": ArgumentError, "device": DeviceError, "internal": InternalError,
          "other": Error}
_LOCATED = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$")


def make(kind, message):
    """The exception for a C++ error of `kind` (called by kiln._C)."""
    cls = _KINDS.get(kind, Error)
    lines = message.split("\n")
    m = _LOCATED.match(lines[0])
    if cls is ScriptError:
        if m:
            text = lines[1] + "\n" if len(lines) > 1 else None
            return ScriptError(message, (m["file"], int(m["line"]), int(m["col"]), text))
        return ScriptError(message)
    e = cls(message)
    if m:
        e.filename, e.lineno, e.offset = m["file"], int(m["line"]), int(m["col"])
        e.text = lines[1] + "\n" if len(lines) > 1 else None
    return e
