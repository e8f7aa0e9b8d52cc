"""`python -m tempo.bench` entry point."""

from tempo.bench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
