"""Old names kept working for a while: :func:`deprecated_alias` makes a function (or method) under its old name
that warns, then does what the new one does."""

from __future__ import annotations

import functools
import warnings
from typing import Any

__all__ = ["deprecated_alias"]


def deprecated_alias[T](new: T, old: str) -> T:
    """``new`` under the old name ``old``: each call emits a :class:`DeprecationWarning` naming the new name,
    attributed to the caller, then calls ``new`` with the same arguments.

    ``new`` is a function, or a method (a :class:`classmethod` or :class:`staticmethod` too) given in its class
    body; ``old`` is the bare old name (``"read"``, not ``"Tracking.read"``): a method's messages name its class.

    Examples
    --------
    >>> import warnings
    >>> def save_thing(x):
    ...     return x + 1
    >>> write_thing = deprecated_alias(save_thing, "write_thing")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     write_thing(1)
    2
    >>> str(caught[0].message)
    'write_thing is deprecated: use save_thing (it takes the same arguments)'
    """
    wrapper = type(new) if isinstance(new, (classmethod, staticmethod)) else None
    func: Any = new.__func__ if isinstance(new, (classmethod, staticmethod)) else new
    owner, _, new_name = func.__qualname__.rpartition(".")
    prefix = f"{owner}." if owner and "<locals>" not in owner else ""
    message = f"{prefix}{old} is deprecated: use {prefix}{new_name} (it takes the same arguments)"

    @functools.wraps(func)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return func(*args, **kwargs)

    alias.__name__ = old
    alias.__qualname__ = f"{owner}.{old}" if owner else old
    alias.__doc__ = f"Deprecated: use ``{prefix}{new_name}``, which takes the same arguments."
    return wrapper(alias) if wrapper is not None else alias  # type: ignore[return-value]
