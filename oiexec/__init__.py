"""oiexec: the headless runner behind `interpreter exec`."""

__version__ = "0.1.0"
