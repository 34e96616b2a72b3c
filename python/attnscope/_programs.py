"""Where attnscope's programs are: $ATTNSCOPE_CLI / $ATTNSCOPE_APP, else beside this package in a
checkout (build/attnscope-cli when PYTHONPATH=python), else in the bin/ of the prefix it is installed
in (the Debian package and `make install`: PREFIX/lib/python3…/dist-packages/attnscope), else on the
PATH."""
import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))


def _find(env, name):
    given = os.environ.get(env)
    if given:
        if not os.access(given, os.X_OK):
            raise FileNotFoundError(f"${env} names {given}, which is not an executable program")
        return given
    checkout = os.path.join(_HERE, "..", "..", "build", name)
    if os.access(checkout, os.X_OK):
        return os.path.abspath(checkout)
    installed = os.path.join(_HERE, "..", "..", "..", "..", "bin", name)  # PREFIX/lib/python3…/dist-packages/attnscope
    if os.access(installed, os.X_OK):
        return os.path.abspath(installed)
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"{name} is not installed: install attnscope (its Debian package or make install), "
                            f"build it in this checkout (make), or set ${env}")


def cli():
    return _find("ATTNSCOPE_CLI", "attnscope-cli")


def app():
    return _find("ATTNSCOPE_APP", "attnscope")
