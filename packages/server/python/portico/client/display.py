"""``Display``: a remote method's rich result, shown in the notebook cell as Jupyter shows it.

A call whose answer carries ``display`` (docs/writing/rich-results.md: a figure, an image, a DataFrame
returned by the method) returns one: IPython displays it through ``_repr_mimebundle_``, and
``payload`` is the JSON value the method's result had, or None.
"""

from __future__ import annotations

import base64
from typing import Any, Mapping


class Display:
    """What a remote method returned, as a MIME bundle: ``data`` (MIME type → data, binary data as
    base64 text as in Jupyter's messages), ``metadata`` (by MIME type) and ``payload`` (its JSON
    value, or None). In a notebook the cell shows it (an image, a table); elsewhere its repr is the
    text/plain representation."""

    __slots__ = ("data", "metadata", "payload")

    def __init__(self, data: Mapping[str, Any], metadata: Mapping[str, Any] | None = None, payload: Any = None) -> None:
        self.data = dict(data)
        self.metadata = dict(metadata or {})
        self.payload = payload

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> Any:
        """A call's answer (REST body or WebSocket result frame): a Display when it has
        ``display``, else its payload."""
        display = answer.get("display")
        if not isinstance(display, dict):
            return answer.get("payload")
        return cls(display, answer.get("metadata") if isinstance(answer.get("metadata"), dict) else None, answer.get("payload"))

    def bytes(self, mime: str) -> bytes:
        """The data of a binary MIME type (``"image/png"``) as bytes; KeyError when the bundle lacks it."""
        return base64.b64decode(self.data[mime])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        data = {k: v for k, v in self.data.items() if (not include or k in include) and (not exclude or k not in exclude)}
        return data, {k: v for k, v in self.metadata.items() if k in data}

    def __repr__(self) -> str:
        text = self.data.get("text/plain")
        return text if isinstance(text, str) else f"<portico.client.Display {', '.join(self.data)}>"
