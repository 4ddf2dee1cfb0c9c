"""What FREE-MAD does on GitHub, one module per behaviour: `debate`, `review`, `tasks`, `evolve`,
`approve_publish`.

Each module holds handler functions that take a `freemad.github.thread.Thread` (the issue or pull
request, its clients and the comment helpers) and return an `Outcome`; the verb table
(`freemad.github.verbs`) says which handler carries out each `/freemad` verb and label, and the
router (`freemad.github.router`) looks it up. A behaviour never imports the router.
"""
