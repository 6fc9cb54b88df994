"""The grader's interpreter entry (runs inside the sandbox; Python 3.6 dialect).

Started as `python -I -S -c "<add this directory to sys.path; main()>" PYTEST-ARGS`:
- `-I`: no PYTHON* variable, no user site, and neither the working directory nor a
  script's directory on sys.path, so nothing in the workspace can stand in for the
  standard library or pytest;
- `-S`: the `site` module is not run at start; `_site()` below does its work (the
  environment's site-packages and their .pth files) but never imports `sitecustomize`
  or `usercustomize`, which a .pth file pointing into the workspace would otherwise
  let the workspace provide.
Then pytest is imported — from the environment only — with plugin autoload off, and
only after that are the workspace paths the command asked for put on sys.path (the
working directory for `python -m pytest`, PYTHONPATH), before site-packages as Python
would order them but after the standard library.
"""

import json
import os
import sys

_MAX_TEXT = 4000


class Report:
    """The report file: one JSON object per line, one write per record."""

    def __init__(self, path):
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        self.fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)

    def write(self, record):
        os.write(self.fd, (json.dumps(record, sort_keys=True) + "\n").encode("utf-8", "backslashreplace"))


def short(text):
    text = str(text)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT // 2] + "\n[…]\n" + text[-_MAX_TEXT // 2 :]


def _site():
    """What `site.main()` does for a non-interactive run, minus the customize hooks."""
    import site

    known = site.removeduppaths()
    if hasattr(site, "venv"):
        known = site.venv(known)
    site.addsitepackages(known)


def _is_site_dir(entry):
    name = os.path.basename(entry.rstrip(os.sep))
    return name in ("site-packages", "dist-packages") or entry.endswith(".egg") or "site-packages" in entry


def _workspace_paths():
    """The paths the test command would have put first: its working directory (for
    `python -m pytest`) and PYTHONPATH, made absolute."""
    cwd = os.getcwd()
    paths = [cwd] if os.environ.pop("_WORKINGSET_GRADER_CWD", "") == "1" else []
    pythonpath = os.environ.pop("_WORKINGSET_GRADER_PYTHONPATH", None)
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = pythonpath  # what the tests' own subprocesses inherit
        paths += [os.path.join(cwd, p) for p in pythonpath.split(os.pathsep) if p]
    return paths


def main():
    here = sys.path.pop(0)  # this directory: searched again only for the reporter below
    report = Report(os.environ.pop("_WORKINGSET_GRADER_REPORT"))
    _site()
    report.write(
        {
            "event": "boot",
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "isolated": bool(sys.flags.isolated),
            "no_site": bool(sys.flags.no_site),
        }
    )
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    paths = _workspace_paths()
    try:
        import pytest
    except Exception as exc:  # the environment has no usable pytest: no verdict
        report.write({"event": "error", "stage": "import pytest", "error": short(repr(exc))})
        sys.exit(4)
    sys.path.insert(0, here)
    try:
        import workingset_grader_reporter as reporter
    finally:
        sys.path.remove(here)
    reporter.attach(report)
    at = next((i for i, entry in enumerate(sys.path) if _is_site_dir(entry)), len(sys.path))
    sys.path[at:at] = [p for p in paths if p not in sys.path]
    args = sys.argv[1:]
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + args
    code = pytest.main(args, plugins=[reporter])
    report.write({"event": "exit", "code": int(code)})
    sys.exit(int(code))
