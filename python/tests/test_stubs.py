"""The type stubs cover the public API (editors complete from them)."""
import ast
import os

import kiln

STUB = os.path.join(os.path.dirname(kiln.__file__), "__init__.pyi")


def test_every_public_name_has_a_stub():
    tree = ast.parse(open(STUB).read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    missing = [n for n in kiln.__all__ if n not in names]
    assert not missing, missing
    methods = {n.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == "ScriptFunction"
               for n in c.body if isinstance(n, ast.FunctionDef)}
    public = {n for n in dir(kiln.ScriptFunction) if not n.startswith("_")} - {
        "specialize", "last", "num_compiled", "fn_name", "param_names", "script_filename"}
    assert public <= methods | {"num_compiled"}, public - methods
