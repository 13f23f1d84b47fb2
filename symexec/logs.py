"""Debug artifacts: one switch each, ``SYMEXEC_LOGS=graph_code,guards`` or ``set_logs(...)``.

Every artifact is a ``logging`` logger named ``symexec.<artifact>``. Switching one on sets its
level to INFO and gives it a handler on stderr; switched off, it sits at WARNING, and callers
check ``enabled(name)`` before they format anything, so an artifact that is off costs a dict
lookup.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

from .exc import ConfigWarning

ARTIFACTS = (
    "graph_code",
    "guards",
    "recompiles",
    "bytecode",
    "graph_breaks",
    "trace",
    "graph_sizes",
    "fallbacks",
    "debug",
    "progress",
)
# On when SYMEXEC_LOGS is not set: a compile that runs past a second says so (a 12-layer model's
# first call, an inductor compile), and how long it took.
DEFAULT_ARTIFACTS = ("progress",)

_loggers = {name: logging.getLogger(f"symexec.{name}") for name in ARTIFACTS}
_enabled: dict[str, bool] = dict.fromkeys(ARTIFACTS, False)
class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (Jupyter and pytest replace it)."""

    @property  # type: ignore[override]
    def stream(self):  # noqa: ANN201
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def _make_handler() -> logging.Handler:
    """stderr (whatever it is at the time), or the file ``SYMEXEC_LOGS_FILE`` names (appended to)."""
    path = os.environ.get("SYMEXEC_LOGS_FILE")
    return logging.FileHandler(path, mode="a", encoding="utf-8", delay=True) if path else _StderrHandler()


_handler = _make_handler()
_handler.setFormatter(logging.Formatter("[symexec.%(name_short)s] %(message)s"))


class _ShortName(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.name_short = record.name.removeprefix("symexec.")
        return True


_handler.addFilter(_ShortName())


def set_logs(spec: str | list[str] | tuple[str, ...] | None = None, **artifacts: bool) -> None:
    """Switch log artifacts on; every other one off.

    Args:
        spec: the names, as a comma-separated string (``"graph_code,guards"``, as
            ``SYMEXEC_LOGS`` takes them) or a list; ``"all"`` for every artifact. None or ""
            (and no keywords) turns every artifact off.
        **artifacts: torch's spelling, ``set_logs(graph_code=True, guards=True)``
            (``torch._logging.set_logs``): each name given True is on.

    The artifacts: ``graph_code``, ``guards``, ``recompiles``, ``bytecode``, ``graph_breaks``,
    ``trace``, ``graph_sizes``, ``fallbacks``, ``debug`` and ``progress`` (a compile past a second
    says so; the one on where ``SYMEXEC_LOGS`` is not set). README.md says what each prints. Each
    is a ``logging`` logger (``symexec.graph_code``...) printing to stderr, or appending to the
    file ``SYMEXEC_LOGS_FILE`` names.

    Raises:
        TypeError: ``spec`` is neither a string nor a list of strings, or a keyword's value is
            not a bool.
        ValueError: a name is not an artifact (the message lists them).
    """
    wrong = [name for name, on in artifacts.items() if not isinstance(on, bool)]
    if wrong:
        raise TypeError(f"set_logs() keywords take True or False: {', '.join(wrong)}")
    names = ([] if spec is None else _names(spec)) + [name for name, on in artifacts.items() if on]
    unknown = list(dict.fromkeys(name for name in [*names, *artifacts] if name not in ARTIFACTS and name != "all"))
    if unknown:
        raise ValueError(f"unknown log artifact(s) {unknown}; known: {', '.join(ARTIFACTS)}")
    if "all" in names:
        names = list(ARTIFACTS)
    for name, logger in _loggers.items():
        on = name in names
        _enabled[name] = on
        logger.setLevel(logging.INFO if on else logging.WARNING)
        if on and _handler not in logger.handlers:
            logger.addHandler(_handler)
            logger.propagate = False
        elif not on and _handler in logger.handlers:
            logger.removeHandler(_handler)
            logger.propagate = True


def _names(spec: object) -> list[str]:
    """The names of ``set_logs``'s spec: a comma-separated string or a list of strings."""
    if isinstance(spec, str):
        return [part.strip() for part in spec.split(",") if part.strip()]
    if isinstance(spec, (list, tuple)) and all(isinstance(part, str) for part in spec):
        return list(spec)
    raise TypeError(f"set_logs() takes a comma-separated string or a list of names, not {spec!r}")


def active() -> list[str]:
    """The artifacts switched on by ``set_logs`` or ``SYMEXEC_LOGS``, in ``ARTIFACTS`` order."""
    return [name for name in ARTIFACTS if _enabled[name]]


def enabled(name: str) -> bool:
    """Is this artifact on? Checked before any formatting work."""
    return _enabled[name] or _loggers[name].isEnabledFor(logging.INFO)


def log(name: str, message: str, *args: object) -> None:
    _loggers[name].info(message, *args)


def get_logger(name: str) -> logging.Logger:
    return _loggers[name]


def _from_environment() -> None:
    """``SYMEXEC_LOGS``'s artifacts on (``DEFAULT_ARTIFACTS`` where it is not set); names it
    does not know are ignored with one warning line (``import symexec`` must not fail on a
    misspelt variable), the rest applies."""
    if "SYMEXEC_LOGS" not in os.environ:
        set_logs(list(DEFAULT_ARTIFACTS))
        return
    names = _names(os.environ["SYMEXEC_LOGS"])
    unknown = [name for name in names if name not in ARTIFACTS and name != "all"]
    if unknown:
        warnings.warn(f"SYMEXEC_LOGS: unknown log artifact(s) {', '.join(unknown)} ignored; "
                      f"known: all, {', '.join(ARTIFACTS)}", ConfigWarning, stacklevel=2)
    set_logs([name for name in names if name not in unknown])


# Loggers sit at WARNING unless switched on, so a user's ``basicConfig(level=INFO)`` does not
# turn every artifact on by accident.
_from_environment()
