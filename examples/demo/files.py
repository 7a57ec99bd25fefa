"""A file drop: uploads land in the interface's folder; read() streams them back."""
import os

from portico import Interface, NotFound


class Files(Interface):
    """Keeps uploaded files; ``read({"name": ...})`` streams one back, ``listing()`` names them."""

    class Config:
        bucket: str = "default"

    def listing(self) -> dict:
        """Every stored file with its size in bytes."""
        root = self.local_directory(create=True)
        out = {}
        for folder, _dirs, names in os.walk(root):
            for name in names:
                if name.startswith(".") or (folder == root and name == "interface.json"):
                    continue
                path = os.path.join(folder, name)
                out[os.path.relpath(path, root)] = os.path.getsize(path)
        return out

    def read(self, params: dict):
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("read needs params {'name': <file>}")
        try:
            return open(self.local_directory(name), "rb")
        except IsADirectoryError:
            raise NotFound(f"'{name}' is a folder") from None
