"""Agents: the port every runtime calls, and the subprocess adapter for agent CLIs."""
