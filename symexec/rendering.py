"""A readable, Python-like rendering of the code symexec generates, made when someone reads it.

``PyCodegen`` records every instruction it emits; when the readable form is first asked for
(``entry.readable_code``, ``explain``), ``codegen.render`` feeds them to a ``Renderer``, which keeps a stack of
expression texts beside the real stack and writes a line where the instruction is a
statement (a store, a return, an expression whose value is dropped). symexec only emits a
small vocabulary of instructions, so this is a running commentary, not a decompiler; the
instruction that breaks a graph, copied from the user's code, is shown with the user's line.
"""

from __future__ import annotations

import re
from typing import Any

from .source import display

_NULL = "<NULL>"
# What a temporary may stand for in the text without hiding an evaluation order that matters.
_SIMPLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|-?[0-9.]+|'[^']*'|\"[^\"]*\"|None|True|False|___graph_out\[[0-9]+\]")
_BUILD = {"BUILD_TUPLE": ("(", ")"), "BUILD_LIST": ("[", "]"), "BUILD_SET": ("{", "}")}


def const_text(value: Any, names: dict[int, str]) -> str:
    name = names.get(id(value))
    if name is not None:
        return name
    if value is None or type(value) in (bool, int, float, str, bytes, complex):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    if type(value) is tuple:
        inner = ", ".join(const_text(v, names) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, (str, bytes, int, float, complex, tuple)):  # a subclass: its __repr__ is user code
        return display(value)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if qualname is not None:
        return str(qualname)
    return f"<{type(value).__name__}>"


class Renderer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.stack: list[str] = []
        self.names: dict[int, str] = {}  # id(constant) -> the name to show it by
        self.kw_names: tuple[str, ...] = ()
        self.labels: dict[Any, str] = {}
        self.aliases: dict[str, str] = {}  # temporaries holding a name, a literal, a graph output

    def name_const(self, value: Any, name: str) -> None:
        self.names[id(value)] = name

    def _pop(self, n: int = 1) -> list[str]:
        if n == 0:
            return []
        # Code after a label reached by a jump or an exception starts with values this
        # commentary did not see pushed: they show as <value>.
        missing = max(0, n - len(self.stack))
        items = ["<value>"] * missing + self.stack[len(self.stack) - (n - missing):]
        del self.stack[len(self.stack) - (n - missing):]
        return items

    def _line(self, text: str) -> None:
        self.lines.append(text)

    def label(self, label: Any) -> None:
        self._line(f"{self.label_name(label)}:")
        self.stack.clear()  # reached by a jump: what is on the stack comes from there

    def label_name(self, label: Any) -> str:
        return self.labels.setdefault(label, f"label_{len(self.labels) + 1}")

    def feed(self, name: str, arg: Any, note: str = "") -> None:
        """One emitted instruction (``note``: the user's line, for a copied instruction)."""
        handler = getattr(self, f"_{name}", None)
        try:
            if handler is not None and not note:
                handler(arg)
            else:
                self._opaque(name, arg, note)
        except Exception as e:  # noqa: BLE001 - a commentary must never stop code generation
            self._line(f"# (rendering stopped at {name}: {type(e).__name__})")

    # -- the vocabulary ---------------------------------------------------------------------
    def _LOAD_FAST(self, arg: str) -> None:
        self.stack.append(self.aliases.get(arg, arg))

    def _LOAD_DEREF(self, arg: Any) -> None:  # noqa: F811 - FreeVar argument
        self.stack.append(getattr(arg, "name", str(arg)))

    def _LOAD_CONST(self, arg: Any) -> None:
        self.stack.append(const_text(arg, self.names))

    def _LOAD_GLOBAL(self, arg: Any) -> None:
        push_null, name = arg
        self.stack.append(name)
        if push_null:
            self.stack.append(_NULL)  # (beside the callable: _CALL takes either order)

    def _LOAD_ATTR(self, arg: Any) -> None:
        method, name = arg if isinstance(arg, tuple) else (False, arg)
        (obj,) = self._pop()
        self.stack.append(f"{obj}.{name}")
        if method:
            self.stack.append(_NULL)

    def _LOAD_METHOD(self, arg: str) -> None:
        self._LOAD_ATTR((True, arg))

    def _BINARY_SUBSCR(self, arg: Any) -> None:
        obj, key = self._pop(2)
        self.stack.append(f"{obj}[{key}]")

    def _build(self, name: str, count: int) -> None:
        items = self._pop(count)
        left, right = _BUILD[name]
        if name == "BUILD_SET" and not items:
            self.stack.append("set()")
        elif name == "BUILD_TUPLE" and len(items) == 1:
            self.stack.append(f"({items[0]},)")
        else:
            self.stack.append(f"{left}{', '.join(items)}{right}")

    def _BUILD_TUPLE(self, arg: int) -> None:
        self._build("BUILD_TUPLE", arg)

    def _BUILD_LIST(self, arg: int) -> None:
        self._build("BUILD_LIST", arg)

    def _BUILD_SET(self, arg: int) -> None:
        self._build("BUILD_SET", arg)

    def _BUILD_MAP(self, arg: int) -> None:
        flat = self._pop(2 * arg)
        self.stack.append("{" + ", ".join(f"{flat[i]}: {flat[i + 1]}" for i in range(0, len(flat), 2)) + "}")

    def _BUILD_SLICE(self, arg: int) -> None:
        parts = ["" if p == "None" else p for p in self._pop(arg)]
        self.stack.append(":".join(parts))

    def _PUSH_NULL(self, arg: Any) -> None:
        self.stack.append(_NULL)

    def _KW_NAMES(self, arg: tuple) -> None:
        self.kw_names = tuple(arg)

    def _PRECALL(self, arg: int) -> None:
        pass

    def _CALL(self, arg: int) -> None:
        args = self._pop(arg)
        first, second = self._pop(2)
        if first == _NULL:
            fn = second
        elif second == _NULL:
            fn = first
        else:
            fn, args = first, [second, *args]
        if self.kw_names:
            k = len(self.kw_names)
            args = args[:-k] + [f"{n}={v}" for n, v in zip(self.kw_names, args[-k:])]
            self.kw_names = ()
        self.stack.append(f"{fn}({', '.join(args)})")

    def _STORE_FAST(self, arg: str) -> None:
        (value,) = self._pop()
        if value == _NULL:
            return
        if arg.startswith("___tmp_") and _SIMPLE.fullmatch(value):
            self.aliases[arg] = value  # shown where it is used
            return
        self._line(f"{arg} = {value}")

    def _STORE_SUBSCR(self, arg: Any) -> None:
        value, obj, key = self._pop(3)
        self._line(f"{obj}[{key}] = {value}")

    def _STORE_ATTR(self, arg: str) -> None:
        value, obj = self._pop(2)
        self._line(f"{obj}.{arg} = {value}")

    def _DELETE_ATTR(self, arg: str) -> None:
        (obj,) = self._pop()
        self._line(f"del {obj}.{arg}")

    def _STORE_GLOBAL(self, arg: str) -> None:
        (value,) = self._pop()
        self._line(f"{arg} = {value}  # global")

    def _STORE_DEREF(self, arg: Any) -> None:
        (value,) = self._pop()
        self._line(f"{getattr(arg, 'name', arg)} = {value}  # nonlocal")

    def _POP_TOP(self, arg: Any) -> None:
        (value,) = self._pop()
        if value != "<value>":  # (a loop's exit after a label)
            self._line(value)

    def _END_FOR(self, arg: Any) -> None:
        pass

    def _RETURN_VALUE(self, arg: Any) -> None:
        (value,) = self._pop()
        self._line(f"return {value}")

    def _COPY(self, arg: int) -> None:
        self.stack.append(self.stack[-arg])

    def _SWAP(self, arg: int) -> None:
        self.stack[-1], self.stack[-arg] = self.stack[-arg], self.stack[-1]

    def _GET_ITER(self, arg: Any) -> None:
        (value,) = self._pop()
        self.stack.append(f"iter({value})")

    def _RESUME(self, arg: Any) -> None:
        pass

    _COPY_FREE_VARS = _NOP = _RESUME

    # -- anything else: an instruction of the user's, run for real at a graph break ---------
    def _opaque(self, name: str, arg: Any, note: str) -> None:
        import dis  # noqa: PLC0415 - rare path

        shown = getattr(arg, "name", arg)
        if arg is not None and type(arg).__name__ == "Label":
            shown = self.label_name(arg)
        opcode = dis.opmap.get(name)
        pops = pushes = 0
        if opcode is not None:
            effect = dis.stack_effect(opcode, arg if isinstance(arg, int) else (0 if opcode >= dis.HAVE_ARGUMENT else None),
                                      jump=False) if opcode >= dis.HAVE_ARGUMENT else dis.stack_effect(opcode)
            pops, pushes = (-effect, 0) if effect < 0 else (0, effect)
        operands = self._pop(min(pops, len(self.stack)))
        text = f"{name} {shown}" if arg is not None else name
        if operands:
            text += " on " + ", ".join(o for o in operands if o != _NULL)
        self._line(f"{text}  # {note}" if note else text)
        self.stack += ["<result>"] * pushes
