"""FREE-MAD on GitHub: events, the router, the forge port, state between workflow runs."""
