"""FREE-MAD: consensus-free multi-agent debate, autonomous tasks and evolve for agent CLIs."""

__version__ = "0.1.0"
