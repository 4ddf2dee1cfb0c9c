"""The evolve runtime: worktrees, the sandboxed judge, lineage and the supervisor."""
