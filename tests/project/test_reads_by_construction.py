"""Guard completeness as a property of the code: tracker code reads a class only through the one
guarded lookup (``variables.base.find_on_class`` / ``class_static``; ``subclass_check`` for
``issubclass``), and an object's ``__dict__`` (or ``vars()``) only where what it finds is wrapped with a source
(so guarded) or the shadowing it rules out is guarded. This test reads the source of the
interpreter and the trackers and fails on any other such read: a new one must use the guarded
functions, or be added below with the reason it needs no guard."""

import ast
import pathlib

import symexec

ROOT = pathlib.Path(symexec.__file__).parent
TRACING_CODE = sorted([*ROOT.glob("variables/*.py"), *ROOT.glob("instructions/*.py"), ROOT / "translator.py"])

# (file, function) -> why that read is guarded or cannot change.
ALLOWED = {
    ("variables/user_objects.py", "SuperVariable.var_getattr"):
        "super()'s own test, cls in the MRO of the class it is given, that MRO guarded just before (class_mro)",
    ("variables/nn_module.py", "<module>"): "torch's containers' own __init__, read once at import",
    ("variables/object_protocol.py", "type_is_callable"): "a builtin class's MRO and attributes: they cannot change",
    ("variables/nn_module.py", "SlicedContainerVariable._torch_method"):
        "torch's own Sequential/ModuleList method, compared with what the guarded lookup found",
    ("variables/builder.py", "_wrap_partial"): "the MRO of functools.partial itself (immutable)",
    ("variables/constant.py", "ConstantVariable._object_attribute"):
        "Enum's own name/value properties, compared with what the guarded lookup found",
    ("variables/classes.py", "PythonModuleVariable.var_getattr"):
        "a module's own dict: a name not in it is guarded so, and its __getattr__ read with a source",
    ("variables/torch_functions.py", "is_torch_object"): "a module's __name__, to tell torch's (the module pinned by identity)",
    ("variables/optimizer.py", "InitGroupVariable._make_state"):
        "whether to make an optimizer's missing state for real before tracing _init_group, which reads it guarded",
    ("variables/base.py", "find_on_class"): "the one guarded class lookup",
    ("variables/classes.py", "ClassDictVariable.call_method"):
        "a class's own dict read by one name (cls.__dict__[name]): the name's presence guarded (class_dict_has), "
        "the value wrapped with its source",
    ("variables/nn_module.py", "NNModuleVariable.object_getattribute"):
        "a module's own instance dict (object.__getattribute__): a name in it re-read through "
        "object.__getattribute__ (its source), one not in it guarded absent",
    ("variables/native_methods.py", "<module>"): "list's, tuple's and dict's own __len__ and __getitem__: builtin classes",
    ("variables/number_builtins.py", "<module>"): "object's own __str__ and __repr__: a builtin class, which cannot change",
    ("variables/tensor.py", "<module>"): "object's own __class__ descriptor: a builtin class, which cannot change",
    ("variables/functions.py", "<module>"):
        "the attribute names of the builtin function and method types and of object (immutable), read at import",
    ("variables/functions.py", "_with_attributes"):
        "run by generated code: the attributes the trace set on a function it made, set on the function made again",
    ("variables/torch_functions.py", "_plain_python_class"):
        "the MRO of a torch class pinned by identity, guarded by the lookups before it, and whether its "
        "bases are written in Python (a class's heap-type flag never changes)",
    ("variables/builder.py", "_pin_function"): "a function's own __dict__, guarded empty where it is read",
    ("translator.py", "InstructionTranslator.load_global"):
        "the builtins module's dict: the name is guarded not to be a global, the builtin by identity",
    ("variables/builder.py", "VariableBuilder.__call__"): "the wrapper is chosen by the input's type, which it guards",
    ("variables/builtin_subclasses.py", "overrides_protocol"): "the MRO of a builtin container class (immutable)",
    ("variables/builder.py", "_wrap_sequence"): "a namedtuple class's _fields, fixed when the class is made",
    ("variables/lists.py", "NamedTupleVariable.fields"): "a namedtuple class's _fields, fixed when the class is made",
    ("variables/lists.py", "NamedTupleVariable.as_python_constant"): "a namedtuple class's _fields/_make",
    ("variables/lists.py", "NamedTupleVariable._reconstruct_made"): "a namedtuple class's _make, run by generated code",
    ("variables/lists.py", "<module>"): "object's own __class__ descriptor: a builtin class, which cannot change",
    ("variables/lists.py", "_with_attributes"): "generated code setting a named tuple's attributes, at run time",
    ("variables/partials.py", "PartialVariable.var_getattr"):
        "functools.partial's MRO and attributes: a builtin class, which cannot change",
    ("variables/partials.py", "<module>"): "functools.partial's own __call__, __new__ and fields: a builtin class",
    ("variables/tensor.py", "SymNodeVariable.call_method"): "int's, float's and bool's methods: builtin classes",
    ("variables/torch_functions.py", "_is_structseq"): "a torch structseq's field counts: a C class, fixed when made",
    ("variables/user_objects.py", "construct"): "a namedtuple class's _fields, fixed when the class is made",
    ("variables/user_objects.py", "_plain_layout"):
        "a class's layout (heap-type flags, __base__, whether a base has a C __new__): fixed when the class is made",
    ("variables/builtin_functions.py", "_unsupported_check"): "an error message",
    ("variables/builtin_functions.py", "_class_read"): "an error message",
    ("variables/classes.py", "<module>"): "the type of a C classmethod (dict.fromkeys), read once at import",
    ("variables/builtin_functions.py", "_copy"): "the object's __dict__, copied and guarded equal (its class's copy protocol too)",
    ("variables/constant.py", "wrap_constant"): "the type of a value computed while tracing (not a user object)",
    ("variables/dicts.py", "DictViewVariable._base"):
        "made only where python_override (guarded) found no Python keys/values/items",
    ("variables/dicts.py", "DictViewVariable.call_method"): "the type of a real builtin dict view",
    ("variables/builtin_subclasses.py", "python_override"): "the MRO of the builtin base class (immutable)",
    ("variables/classes.py", "UserDefinedClassVariable.var_getattr"): "wrapped with the source cls.name: guarded",
    ("variables/nn_module.py", "NNModuleVariable.var_getattr"):
        "values wrapped with their source; a class attribute's shadowing is guarded (not_in_instance_dict)",
    ("variables/nn_module.py", "NNModuleVariable._slot"): "a module's _parameters/_modules/_buffers: keys guarded",
    ("variables/nn_module.py", "_entries"):
        "a module's _parameters/_modules/_buffers: keys guarded, values wrapped with their source, None entries guarded",
    ("variables/operators.py", "_make_inplace.inplace_op"): "the builtin type of a constant",
    ("variables/tensor.py", "TensorVariable.python_attribute"): "wrapped with the source x.name, absence guarded",
    ("variables/tensor.py", "wrap_fx_value"): "the type of an FX result (a fake value, not a user object)",
    ("variables/model_output.py", "_from_model_output"): "the index of ModelOutput in the (guarded) MRO",
    ("variables/builtin_subclasses.py", "SubclassInstance._own_attribute"):
        "values wrapped with their source; a class attribute's shadowing is guarded (not_in_instance_dict)",
    ("variables/object_protocol.py", "_instance_dict"):
        "for generic_getattr: values wrapped with their source; a class attribute's shadowing is guarded "
        "(not_in_instance_dict)",
    ("variables/user_objects.py", "InstanceDictVariable._lookup"):
        "an item is wrapped with its source; a missing one is guarded (not_in_instance_dict)",
    ("variables/user_objects.py", "ObjectVariableBase._class_source"):
        "only which expression re-reads obj.__class__ (both read the same class): no fact of the trace",
    ("variables/functions.py", "UserFunctionVariable.var_getattr"): "wrapped with the source fn.name: guarded",
    ("variables/autograd.py", "<module>"): "torch's own autograd.Function bases, read once at import",
    ("variables/model_output.py", "InputModelOutputVariable.var_getattr"):
        "wrapped with the source x.name; a class attribute's shadowing is guarded (not_in_instance_dict), "
        "a class data descriptor found by the guarded lookup",
    ("variables/model_output.py", "_items_are_attributes"): "run by the guard itself, on every call",
    ("variables/new_modules.py", "construct_user_module"): "a module the trace made: private to it",
    ("variables/new_modules.py", "NewModuleVariable._settable_now"): "a module the trace made: private to it",
    ("variables/snapshots.py", "_same"): "the snapshot comparison a guard runs",
    ("variables/snapshots.py", "_same_tensor"): "the snapshot comparison a guard runs",
    ("variables/builtin_functions.py", "<module>"): "the builtins module's callables, read once at import",
    ("instructions/loads_stores.py", "IMPORT_NAME"):
        "whether a `from pkg import sub` may import: only decides to break; the names are then read "
        "through guarded attribute loads",
}

_CLASS_NAMES = {"cls", "klass", "obj_cls"}


def _class_like(node):
    return (isinstance(node, ast.Attribute) and node.attr in ("cls", "user_cls")) or \
        (isinstance(node, ast.Name) and node.id in _CLASS_NAMES) or \
        (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type")


def raw_reads():
    """(file, function, line, what) of every class or instance-dict read in the tracing code."""
    found = []
    for path in TRACING_CODE:
        rel = path.relative_to(ROOT).as_posix()
        stack = []

        class Visitor(ast.NodeVisitor):
            def scope(self, node):
                stack.append(node.name)
                self.generic_visit(node)
                stack.pop()

            visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = scope

            def hit(self, node, what):
                found.append((rel, ".".join(stack) or "<module>", node.lineno, what))

            def visit_Attribute(self, node):
                if node.attr in ("__dict__", "__mro__") and isinstance(node.ctx, ast.Load):
                    self.hit(node, node.attr)
                self.generic_visit(node)

            def visit_Call(self, node):
                fn = node.func
                if isinstance(fn, ast.Attribute) and fn.attr == "getattr_static":
                    self.hit(node, "inspect.getattr_static")
                if isinstance(fn, ast.Attribute) and fn.attr == "__getattribute__" and len(node.args) > 1 and \
                        isinstance(node.args[1], ast.Constant) and node.args[1].value in ("__dict__", "__mro__"):
                    self.hit(node, f"__getattribute__(..., {node.args[1].value!r})")
                if isinstance(fn, ast.Name) and fn.id == "vars":
                    self.hit(node, "vars()")
                if isinstance(fn, ast.Name) and fn.id in ("getattr", "hasattr") and node.args:
                    if _class_like(node.args[0]):
                        self.hit(node, f"{fn.id} on a class")
                    elif len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and \
                            node.args[1].value in ("__dict__", "__mro__"):
                        self.hit(node, f"{fn.id}(..., {node.args[1].value!r})")
                self.generic_visit(node)

        Visitor().visit(ast.parse(path.read_text()))
    return found


def test_tracing_code_reads_classes_only_through_the_guarded_lookup():
    unexplained = [f"{file}:{line} in {function}: {what}" for file, function, line, what in raw_reads()
                   if (file, function) not in ALLOWED]
    assert not unexplained, ("unguarded reads of a class or an object's __dict__ (use find_on_class / "
                             "class_static, or explain it in ALLOWED):\n" + "\n".join(unexplained))


def test_every_allowed_read_still_exists():
    present = {(file, function) for file, function, _, _ in raw_reads()}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"ALLOWED lists reads that are gone: {stale}"


def test_the_scanner_finds_a_raw_class_read(tmp_path, monkeypatch):
    code = tmp_path / "variables"
    code.mkdir()
    (code / "probe.py").write_text("def f(obj):\n    return getattr(obj.cls, 'x', None), type(obj).__mro__\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "TRACING_CODE", [code / "probe.py"])
    assert [(f, fn, what) for f, fn, _, what in raw_reads()] == [
        ("variables/probe.py", "f", "getattr on a class"), ("variables/probe.py", "f", "__mro__")]
