"""Dashboards: every debate, task and evolve run as a page, on a static site or a live server.

Four sub-packages, by job, each importing only the ones listed after it:

- `live`: the live server (`freemad-dashboard`): the Flask app, its settings, the gunicorn
  config and the app gunicorn loads, the stream of changes and its limits, the start token's
  way to the workers;
- `steering`: starting and steering runs from the browser (`--allow-start`): debates, tasks
  and evolve runs, their per-run overrides, the configs they start with and the config editor,
  deleting a transcript;
- `reading`: reading runs (only reading): transcript folders, task and evolve stores, the
  GitHub state branch, evaluation folders, the reference implementation's transcripts, why a
  run started from the browser failed;
- `views`: pure view data and rendering: a run in, plain data out (`run_views`,
  `debate_views`, `eval_views`, `agent_views`, `summary_views`), HTML pages from it
  (`html_pages`).

Beside them: `static_site` builds the static site (over `reading` and `views`), `run_records`
is what every part knows of a run, and `http_errors` is how the live server answers when it
serves no page (the live server's and the steering requests' errors and refusals).
"""
