"""The public API describes itself: a docstring on every public call,
inspect.signature on every call and class, a type stub (_auxstore.pyi) that
matches the module and py.typed next to the package, and `import auxstore`
enough for auxstore.connector."""

import ast
import importlib.util
import inspect
import pathlib
import subprocess
import sys

import auxstore
from auxstore import _auxstore, _signatures

PACKAGE_DIR = pathlib.Path(auxstore.__file__).parent
STUB = PACKAGE_DIR / "_auxstore.pyi"
MAKE_STUBS = PACKAGE_DIR.parent / "scripts" / "make_stubs.py"
DUNDERS = ("__init__",)


def public_calls():
    """(qualified name, callable) for every public function, class and method."""
    out = []
    for name in sorted(dir(auxstore)):
        if name.startswith("_"):
            continue
        obj = getattr(auxstore, name)
        if isinstance(obj, type):
            out.append((name, obj))
            if issubclass(obj, BaseException):
                continue  # the exception classes: documented by their class
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in DUNDERS:
                    continue
                if isinstance(member, (property, int, str)):
                    continue
                func = getattr(member, "__func__", member)
                if callable(func):
                    out.append(("%s.%s" % (name, attr), func))
        elif callable(obj):
            out.append((name, obj))
    return out


def user_doc(obj):
    """The docstring without pybind11's generated signature line."""
    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n", 1)[0]
    if _signatures.parse_line(first) is not None and "->" in first:
        doc = doc.split("\n", 1)[1] if "\n" in doc else ""
    return doc.strip()


def test_every_public_call_has_a_docstring():
    calls = public_calls()
    assert len(calls) > 100
    missing = []
    for name, obj in calls:
        if name.endswith(".__init__") and type(obj).__name__ == "function":
            continue  # a Python class's __init__: the class docstring says it
        if not user_doc(obj):
            missing.append(name)
    assert not missing, missing


def test_properties_have_docstrings():
    missing = []
    classes = [c for c in vars(_auxstore).values()
               if isinstance(c, type) and c.__module__ == _auxstore.__name__]
    assert auxstore.StoreStats in classes and auxstore.Store in classes
    for cls in classes:
        for attr, member in vars(cls).items():
            if isinstance(member, property) and not (member.__doc__ or "").strip():
                missing.append("%s.%s" % (cls.__name__, attr))
    assert not missing, missing


def test_inspect_signature_on_every_call():
    failed = []
    for name, obj in public_calls():
        if isinstance(obj, type) and obj.__module__ == _auxstore.__name__ and \
                type(vars(obj).get("__init__")).__name__ != "instancemethod":
            # Made by auxstore only (State, Manifest, ...): not a call.
            try:
                obj()
            except TypeError as e:
                assert "No constructor defined" in str(e), (name, e)
            else:
                failed.append("%s: constructible without an __init__" % name)
            continue
        try:
            inspect.signature(obj)
        except (ValueError, TypeError) as e:
            failed.append("%s: %s" % (name, e))
    assert not failed, failed
    # The parameters are the binding's own, keyword-only ones included.
    sig = inspect.signature(auxstore.Store.put)
    assert list(sig.parameters)[:5] == ["self", "ns", "prefix", "token_count", "layers"]
    assert sig.parameters["block_size"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["block_size"].default == 0
    assert str(inspect.signature(auxstore.Store)).startswith("(path, *, capacity_bytes=0")
    assert list(inspect.signature(auxstore.Backend).parameters) == ["kind", "device"]
    assert list(inspect.signature(auxstore.prefix_hash).parameters) == [
        "tokens", "block_size", "salt"]


def test_signature_of_a_bound_method(store_path):
    with auxstore.Store(store_path) as s:
        assert list(inspect.signature(s.lease_acquire).parameters) == ["ns", "prefix",
                                                                        "lease_ms"]
        # The call binds as inspect says.
        ns = s.register_namespace("m")
        bound = inspect.signature(s.exists).bind(ns, prefix=b"\0" * 16)
        assert s.exists(*bound.args, **bound.kwargs) is False


def test_stub_matches_the_module():
    spec = importlib.util.spec_from_file_location("make_stubs", MAKE_STUBS)
    make_stubs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_stubs)
    want = make_stubs.generate(_auxstore)
    assert STUB.read_text() == want, (
        "bindings/python/auxstore/_auxstore.pyi is stale: run scripts/make_stubs.py")
    tree = ast.parse(STUB.read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    public = {n for n in vars(_auxstore) if not n.startswith("_")}
    assert public <= names, public - names
    # Each stub method has the parameters inspect reports.
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for fn in classes["Store"].body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "put":
            args = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
            assert args == list(inspect.signature(auxstore.Store.put).parameters)


def test_py_typed_and_stub_where_the_package_is_imported_from():
    assert (PACKAGE_DIR / "py.typed").is_file()
    assert STUB.is_file()


def test_plain_import_is_enough_for_the_connector():
    code = ("import auxstore, inspect\n"
            "print(auxstore.connector.PageStore.__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "PageStore"
