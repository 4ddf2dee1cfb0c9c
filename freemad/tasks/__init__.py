"""The tasks runtime: persisted, resumable plan and code tasks with reviewers, arbiters and people."""
