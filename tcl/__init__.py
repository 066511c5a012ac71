"""tcl, the torch.compile linter."""

__version__ = "0.1.0"
