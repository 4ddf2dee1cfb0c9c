"""Starting and steering runs from the live dashboard's pages (`--allow-start`), every POST
behind the start token and the CSRF check (`starter`): debates (`starter`), tasks
(`task_steering`), evolve runs (`evolve_start`, `evolve_steering`), their per-run overrides
(`run_overrides`, `evolve_overrides`), the configs they start with (`start_configs`), the
config editor and its saved versions (`config_editor`, `config_history`), and deleting a
debate's transcript (`transcript_deleting`).
"""
