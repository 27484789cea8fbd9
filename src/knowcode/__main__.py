"""`python -m knowcode` runs the CLI."""

from knowcode.cli import main

main()
