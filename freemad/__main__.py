"""`python -m freemad` runs the CLI."""

from freemad._entry import main

main()
