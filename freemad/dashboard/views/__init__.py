"""Runs as pages, pure: no I/O, no clock. View data (plain dicts and lists) from a run's
transcript or events (`run_views` for tasks, evolve runs and the index, `debate_views`,
`eval_views`, `agent_views`, `summary_views`, over the defensive readers of `viewdata`), the
debate's score chart (`debate_chart`), highlighted code (`fenced_code`), and the HTML pages
they render to (`html_pages`), for the static site and the live server alike.
"""
