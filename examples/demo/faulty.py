"""A module whose methods fail, to show how failures look to a client."""
from portico import Interface


class Faulty(Interface):
    """Fails on purpose."""

    def explode(self, message: str = "boom"):
        """Raises ValueError(message)."""
        raise ValueError(message)

    def not_json(self):
        """Returns something that is not JSON."""
        return object()

    def _secret(self):
        return "never reachable remotely"
