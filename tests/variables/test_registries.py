"""Issue 21 (5): the tables families register their handlers in refuse a duplicate (one used to
replace the other silently, so behaviour depended on import order)."""

import pytest


def test_a_handler_registered_twice_is_refused():
    from symexec.variables.base import Registry
    from symexec.variables.builtins import HANDLERS
    from symexec.variables.constant import COMPUTED_WRAPPERS
    assert isinstance(HANDLERS, Registry) and isinstance(COMPUTED_WRAPPERS, Registry)
    with pytest.raises(ValueError, match="registered twice"):
        HANDLERS[len] = lambda tx, obj: None
    with pytest.raises(ValueError, match="registered twice"):
        COMPUTED_WRAPPERS.update({dict: lambda v: None})
