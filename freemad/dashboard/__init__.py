"""Dashboards: every debate, task and evolve run as a page, on a static site or a live server.

`views` turns a run's data into plain view data and `render` turns that into HTML (both pure);
`sources` reads runs from transcript folders, SQLite stores and the GitHub state branch; `site`
builds the static site and `server` serves the same pages live.
"""
