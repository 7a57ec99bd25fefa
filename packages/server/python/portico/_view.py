"""The read-only view of a resolved config that interface code sees as ``self.config``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["ConfigView"]


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return value if isinstance(value, ConfigView) else ConfigView(value)
    if isinstance(value, (list, tuple)):
        # Tuples, so that `self.config.layers.append(...)` fails instead of mutating shared state.
        return tuple(_freeze(item) for item in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, ConfigView):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


class ConfigView(Mapping[str, Any]):
    """Read-only mapping with attribute access: ``config.start == config["start"]``.

    Nested dicts are views too (``config.optimizer.lr``) and lists come back as tuples.
    Names that clash with mapping methods (``keys``, ``items``, ``get``, ...) need item access.
    Assignment raises AttributeError (attributes) or TypeError (items).
    """

    __slots__ = ("_data",)
    _data: dict[str, Any]

    def __init__(self, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_data", {key: _freeze(value) for key, value in data.items()})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"config has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("config is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("config is read-only")

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"ConfigView({self.to_dict()!r})"

    def to_dict(self) -> dict[str, Any]:
        """A mutable deep copy as plain dicts and lists (the JSON form)."""
        return {key: _thaw(value) for key, value in self._data.items()}
