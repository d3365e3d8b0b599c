"""`python -m dataaudit.cli ...`: the `dataaudit` command run from a checkout (the output digest and the tests
use it, so the code of the current folder is what runs)."""
from dataaudit.cli import main

if __name__ == "__main__":
    main()
