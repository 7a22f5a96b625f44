"""python -m envcheck.train [flags]: the same as envcheck train [flags]."""

import sys

from envcheck.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
