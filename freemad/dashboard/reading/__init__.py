"""Where the dashboards read runs from, and only read: debate transcript folders (`sources`,
which also makes the sources a command names), task and evolve stores and the GitHub state
branch (`stored_runs`), evaluation folders (`eval_folders`), the reference implementation's
transcripts (`reference_transcripts`), and why a run started from the browser failed
(`failed_starts`).
"""
