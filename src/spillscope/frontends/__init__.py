"""The front ends: thin layers over the core that only present it — the command line
(`cli`), the Textual app (`tui`), notebook objects (`notebook`), the browser server
(`serve`) and the demo writer. The core never imports anything from here
(tests/test_boundary.py checks it)."""
