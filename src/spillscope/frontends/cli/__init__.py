"""The `spillscope` command: argument parsing and exit codes in `main`, one module per
command body that is more than a few lines (`cat`, `grep`, `prune`, `watch`), and the
progress bar. JSON output is the stable interface (docs/cli.md)."""
