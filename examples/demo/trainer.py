"""A trainer: an interface with a run (``__call__``), dispatched as an Execution."""
import time

from portico import Interface


class Trainer(Interface):
    """Trains for a few epochs, printing its progress; the result is kept in its data folder."""

    class Config:
        epochs: int = 3
        "How many epochs to run."
        delay: float = 0.0
        "Seconds per epoch."
        fail_at: int | None = None
        "Raise at this epoch (to see a failed run)."

    def __call__(self) -> None:
        loss = 1.0
        for epoch in range(1, self.config.epochs + 1):
            time.sleep(self.config.delay)
            loss /= 2
            print(f"epoch {epoch}/{self.config.epochs} loss={loss:.4f}", flush=True)
            self.emit({"epoch": epoch, "loss": loss})
            if self.config.fail_at == epoch:
                raise RuntimeError(f"diverged at epoch {epoch}")
        self.save_file("result.json", {"loss": loss, "epochs": self.config.epochs})

    def result(self) -> dict | None:
        """The saved result of the last finished run, if any."""
        return self.load_file("result.json")
