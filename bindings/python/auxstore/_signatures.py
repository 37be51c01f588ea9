"""``inspect.signature`` for the native module's calls.

pybind11 (2.10) starts each function's docstring with a typed signature line,
``put(self: auxstore._auxstore.Store, ns: int, ...) -> None``, which
``inspect`` cannot read: it reads a text signature, ``put(self, ns, ...)``
followed by ``--``, at the start of the C docstring. ``install()`` derives one
from pybind11's line for every function and method of the module (the
docstring itself is kept, typed line included) and gives each class a
``__signature__`` from its ``__init__``. Types are in ``_auxstore.pyi``.
"""

import ast
import inspect

# The dunders that get a text signature too (other _names are private).
_DUNDERS = {"__init__", "__enter__", "__exit__", "__repr__", "__len__"}


def split_params(text):
    """Splits a parameter list at its top-level commas (brackets and quotes kept)."""
    out, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_line(line):
    """(name, [(param, annotation, default or None)], return annotation) of a
    pybind11 signature line, or None when it is not one."""
    open_at = line.find("(")
    if open_at <= 0 or not line[:open_at].isidentifier():
        return None
    depth = 0
    for i in range(open_at, len(line)):
        depth += line[i] == "("
        depth -= line[i] == ")"
        if depth == 0:
            break
    else:
        return None
    params = []
    for p in split_params(line[open_at + 1:i]):
        default = None
        if " = " in p:
            p, default = p.split(" = ", 1)
        name, _, annotation = p.partition(": ")
        params.append((name.strip(), annotation.strip(), default))
    ret = line[i + 1:].strip()
    return line[:open_at], params, ret[3:].strip() if ret.startswith("->") else ""


def _default_text(default):
    try:
        ast.literal_eval(default)
        return default
    except (ValueError, SyntaxError):
        return "..."  # not a literal (an object's repr): shown as ...


def text_signature(parsed):
    """The text signature (``name(a, b=0, *, c=None)``) of a parsed line."""
    name, params, _ = parsed
    parts = []
    for i, (p, _, default) in enumerate(params):
        if p.startswith("arg") and p[3:].isdigit() and i == 0:
            p = "self"  # pybind11's name for a property getter's object
        parts.append(p if default is None else "%s=%s" % (p, _default_text(default)))
    return "%s(%s)" % (name, ", ".join(parts))


def _install_function(module, func):
    doc = func.__doc__ or ""
    parsed = parse_line(doc.split("\n", 1)[0])
    if parsed is None or getattr(func, "__text_signature__", None):
        return
    module._set_text_signature(func, text_signature(parsed) + "\n--\n\n" + doc)


def install(module):
    """Installs text signatures on every function and method of ``module`` (the
    native one) and a ``__signature__`` on each of its classes."""
    for name, obj in list(vars(module).items()):
        if name.startswith("_"):
            continue
        if isinstance(obj, type) and obj.__module__ == module.__name__:
            for attr, member in list(vars(obj).items()):
                if attr.startswith("_") and attr not in _DUNDERS:
                    continue
                func = getattr(member, "__func__", member)  # pybind11's instancemethod
                if type(func).__name__ == "builtin_function_or_method":
                    _install_function(module, func)
            init = vars(obj).get("__init__")
            if init is not None and type(init).__name__ == "instancemethod":
                sig = inspect.signature(init.__func__)
                params = list(sig.parameters.values())[1:]
                obj.__signature__ = sig.replace(parameters=params)
        elif type(obj).__name__ == "builtin_function_or_method":
            _install_function(module, obj)
