"""``python -m chalicelib.cli``: the ``metro`` command without installing its console script."""

from chalicelib.cli.main import run

if __name__ == "__main__":
    run()
