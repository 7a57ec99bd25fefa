"""``GatewayError``: every failure the client reports, with the gateway's stable ``code``."""

from __future__ import annotations

import json
from typing import Any, Mapping


class GatewayError(Exception):
    """A failure reported by the gateway (or met on the way to it).

    ``code`` is the stable error code, ``status`` the HTTP status (None over the WebSocket and for
    client-side failures), ``message`` the text, ``issues`` a list of ``{"path", "message"}`` (per
    config field or request location), ``exception`` the Python exception class for
    ``call_failed``.
    """

    def __init__(
        self,
        code: str,
        status: int | None,
        message: str,
        issues: list[dict[str, Any]] | None = None,
        exception: str | None = None,
    ) -> None:
        self.code = code
        self.status = status
        self.message = message
        self.issues = list(issues or [])
        self.exception = exception
        text = f"{code}: {message}"
        for issue in self.issues[:10]:
            path = issue.get("path") if isinstance(issue, Mapping) else None
            text += f"\n  {path or '(root)'}: {issue.get('message') if isinstance(issue, Mapping) else issue}"
        super().__init__(text)

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any], status: int | None = None) -> GatewayError:
        """Builds the error from an ErrorDetail object (REST ``detail`` or an error frame's payload)."""
        return cls(
            str(detail.get("code") or "error"),
            status,
            str(detail.get("message") or ""),
            detail.get("issues") if isinstance(detail.get("issues"), list) else None,
            detail.get("exception") if isinstance(detail.get("exception"), str) else None,
        )

    @classmethod
    def from_response(cls, status: int, body: bytes) -> GatewayError:
        """Builds the error from an HTTP error response.

        The gateway sends ``{"detail": "<message>", "code", "message", "issues"?, "exception"?}``,
        on a 400 and on every failure of the call endpoint
        ``{"detail": {"code", "message", "issues"?, "exception"?}, "code", "message"}``
        and on a 422 ``{"detail": [{"loc", "msg", "type"}], …}``; a server that sends only
        ``{"detail": "<message>"}`` (FastAPI, the reference server) gives code ``http_<status>``.
        """
        try:
            parsed = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError):
            parsed = None
        detail = parsed.get("detail") if isinstance(parsed, dict) else None
        if isinstance(detail, Mapping):
            return cls.from_detail(detail, status)
        if isinstance(detail, list):  # HTTPValidationError: [{loc, msg, type}]
            issues = [
                {"path": ".".join(str(part) for part in item.get("loc", [])) or None, "message": str(item.get("msg", ""))}
                for item in detail
                if isinstance(item, Mapping)
            ]
            message = "; ".join(f"{i['path']}: {i['message']}" if i["path"] else i["message"] for i in issues)
            return cls("validation_error", status, message or "validation failed", issues)
        if isinstance(parsed, dict) and isinstance(parsed.get("code"), str):
            return cls.from_detail({**parsed, "message": parsed.get("message") or detail}, status)
        if isinstance(detail, str):
            return cls(f"http_{status}", status, detail)
        text = body.decode("utf-8", "replace").strip()[:500]
        return cls(f"http_{status}", status, text or f"HTTP {status}")


def closed_error(reason: str) -> GatewayError:
    """The error of everything that waited on a socket that went away."""
    return GatewayError("connection_closed", None, reason)
