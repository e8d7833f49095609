"""What the contract scripts share (Tests/Contract/*_contract.py): importing the processor's own package, failing with
exit 2 and the install hint when it is missing (the Swift contract test then fails rather than skips), and the
arguments that point a script at the simulator as one user."""
import argparse
import importlib
import sys


def require(module, hint):
    """`module` imported, or exit 2 naming what to install (`hint`, e.g. "pip install opp==1.3.1")."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        print(f"{module.split('.')[0]} is missing ({error}): run scripts/bootstrap ({hint})", file=sys.stderr)
        sys.exit(2)


def simulator_arguments(description):
    """A parser with `--url` (the simulator's base URL), `--user` and `--password`, for the script to extend."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--url", required=True, help="the simulator's base URL, http://127.0.0.1:PORT")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    return parser
