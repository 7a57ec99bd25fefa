"""The PEP 517 build backend of the ``portico`` package (pyproject.toml), standard library only.

One wheel, made the same way for ``pip install packages/server/python`` and for the gateway's
``GET /v1/python/portico-<version>-py3-none-any.whl`` (which runs ``python portico_build.py DIR``):
every file of ``portico/`` but bytecode, ``*.dist-info`` with METADATA, WHEEL and RECORD.
Reproducible: the files in sorted order with a fixed time and mode, so a version's wheel has one
sha256 wherever it is built. The sdist holds this folder's sources and builds the same wheel.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import sys
import tarfile
import zipfile

NAME = "portico"
HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = "Drive a Portico gateway's Python interfaces from notebooks and scripts (standard library only)."
REQUIRES_PYTHON = ">=3.10"
#: The time every member of the wheel and the sdist carries (zip's earliest).
EPOCH = (1980, 1, 1, 0, 0, 0)


def version() -> str:
    """``__version__`` of ``portico/__init__.py``, read as text (nothing is imported)."""
    with open(os.path.join(HERE, NAME, "__init__.py"), encoding="utf-8") as stream:
        found = re.search(r'^__version__ = "([^"]+)"$', stream.read(), re.M)
    if not found:
        raise RuntimeError("portico/__init__.py sets no __version__")
    return found.group(1)


def sources() -> list[str]:
    """The package's files, relative to this folder with ``/``, sorted; bytecode left out."""
    found = []
    for folder, dirs, files in os.walk(os.path.join(HERE, NAME)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if not name.endswith((".pyc", ".pyo")):
                found.append(os.path.relpath(os.path.join(folder, name), HERE).replace(os.sep, "/"))
    return sorted(found)


def metadata() -> str:
    return f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version()}\nSummary: {SUMMARY}\nRequires-Python: {REQUIRES_PYTHON}\n"


def wheel_name() -> str:
    return f"{NAME}-{version()}-py3-none-any.whl"


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{path},sha256={digest},{len(data)}"


def _member(archive: zipfile.ZipFile, path: str, data: bytes) -> None:
    info = zipfile.ZipInfo(path, EPOCH)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def wheel_bytes() -> bytes:
    """The wheel, whole."""
    dist_info = f"{NAME}-{version()}.dist-info"
    members: list[tuple[str, bytes]] = []
    for path in sources():
        with open(os.path.join(HERE, path), "rb") as stream:
            members.append((path, stream.read()))
    members.append((f"{dist_info}/METADATA", metadata().encode("utf-8")))
    members.append((f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: portico_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(_record_line(path, data) + "\n" for path, data in members) + f"{dist_info}/RECORD,,\n"
    members.append((f"{dist_info}/RECORD", record.encode("utf-8")))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in members:
            _member(archive, path, data)
    return buffer.getvalue()


# -- PEP 517 hooks --------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: dict | None = None) -> list[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    name = wheel_name()
    with open(os.path.join(wheel_directory, name), "wb") as stream:
        stream.write(wheel_bytes())
    return name


def build_sdist(sdist_directory: str, config_settings: dict | None = None) -> str:
    base = f"{NAME}-{version()}"
    name = f"{base}.tar.gz"
    files = ["pyproject.toml", "portico_build.py", *sources()]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as archive:
        pkg_info = metadata().encode("utf-8")
        for path, data in [("PKG-INFO", pkg_info)] + [(p, open(os.path.join(HERE, p), "rb").read()) for p in files]:
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size, info.mode, info.mtime = len(data), 0o644, 315532800
            archive.addfile(info, io.BytesIO(data))
    return name


if __name__ == "__main__":
    # The gateway's way: `python portico_build.py DIR` writes the wheel into DIR and prints its name.
    if len(sys.argv) != 2:
        sys.exit("usage: python portico_build.py DIR")
    print(build_wheel(sys.argv[1]))
