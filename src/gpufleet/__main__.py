"""`python -m gpufleet ...`: the `gpufleet` command (the same as the console script)."""

from gpufleet.cli import main

if __name__ == "__main__":
    main()
