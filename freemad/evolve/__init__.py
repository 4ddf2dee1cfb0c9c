"""The evolve runtime: iterations of variation and judgement on a git lineage, one durable step
at a time. What it decides is `freemad.core.evolve`'s (pure); here is what it does, one concern a
module:

- `evolve_runner`: `EvolveRunner`, the loop: folds the events, takes the next action, stores it.
- `generations`: a population's generation: candidates worked and judged at once, then decided.
- `matrix`: a generation judged across GitHub Actions jobs (plan, work, admit), with the same code.
- `variation`: the variation operator and the supervisor's debates: everything the agents do.
- `debaters`: who takes part in those debates.
- `worker_protocol`: what a worker is told (prompt and request) and what a directions debate answers.
- `context_budget`: the cap on a worker's prompt, and what is cut first.
- `judging`: a candidate's worktree made ready and the judge's stages run in the sandbox.
- `call_costs`: what the agent calls cost, for the run's cost cap.
- `validate`: `freemad evolve validate`, every problem found before a run starts.
- `run_report`: the run report (markdown) and `chart`: its score chart (SVG), from the events.

Elsewhere: the `evolve:` config section is `freemad.config.evolve_section`; the lineage's git
work is `freemad.workspace.lineage`; the commands are `freemad.cli.evolve_commands`; on GitHub,
`freemad.github.evolve_pr` (the run's pull request) and `freemad.github.evolve_matrix`; in the
live dashboard, `freemad.dashboard.steering.evolve_steering`."""
