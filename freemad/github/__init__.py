"""FREE-MAD on GitHub: events, the router and its verb table, the behaviours (debate, tasks, evolve,
publish), the forge port and its adapters, state between workflow runs."""
