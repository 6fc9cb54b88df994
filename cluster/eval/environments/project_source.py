"""The project under test, imported from the workspace: never from the environment.

An environment is shared by every task that asks for the same recipe, so it cannot hold
the project itself — an installed copy would shadow the workspace's source (a `src/`
layout), an editable one would point at the build's own checkout. The build therefore
installs the project (its dependencies and extras come with it), finds what it installed
from the checkout — a `direct_url.json` naming it (pip, editable or not) or an
`.egg-link` (`setup.py develop`) — uninstalls exactly that, and leaves in its place a
`.pth` file and a small module that, at each interpreter start, put the project's source
root as the workspace in use has it (the nearest directory at or above the working
directory holding the project's top-level package, under `src/` in a src layout) at the
*end* of sys.path: after the standard library and the installed packages, so the
workspace adds the project and can replace nothing.

`SCRIPT` runs inside the build's sandbox, under the environment's own interpreter
(Python 3.6 and later: no f-strings with `=`, no walrus, no importlib.metadata):

    python -I -c SCRIPT installed CHECKOUT   prints the distributions installed from CHECKOUT
    python -I -c SCRIPT source CHECKOUT      writes the .pth and module for CHECKOUT's layout
"""

from __future__ import annotations

__all__ = ["MODULE_NAME", "SCRIPT"]

MODULE_NAME = "_workingset_project"

SCRIPT = r'''
import json, os, sys, sysconfig
mode, checkout = sys.argv[1], os.path.realpath(sys.argv[2])
site = sysconfig.get_paths()["purelib"]

def installed():
    names = []
    for entry in sorted(os.listdir(site)):
        path = os.path.join(site, entry)
        if entry.endswith(".dist-info") and os.path.isfile(os.path.join(path, "direct_url.json")):
            with open(os.path.join(path, "direct_url.json")) as f:
                url = json.load(f).get("url", "")
            if url.startswith("file://") and os.path.realpath(url[len("file://"):]) == checkout:
                names.append(entry[: -len(".dist-info")].rsplit("-", 1)[0])
        elif entry.endswith(".egg-link"):
            with open(path) as f:
                if os.path.realpath(f.readline().strip()) == checkout:
                    names.append(entry[: -len(".egg-link")])
    return names

def tops(root):
    found = []
    for entry in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, entry)
        if entry.startswith((".", "_")) or entry in ("tests", "test", "docs", "build", "dist", "src", "setup.py"):
            continue
        if os.path.isfile(os.path.join(path, "__init__.py")):
            found.append(entry)
        elif entry.endswith(".py") and os.path.isfile(path):
            found.append(entry[:-3])
    return found

def source():
    packages = tops(os.path.join(checkout, "src"))
    root = "src" if packages else ""
    packages = packages or tops(checkout)
    with open(os.path.join(site, "%s.py" % MODULE), "w") as f:
        f.write(BODY % json.dumps([[root, p] for p in packages]))
    with open(os.path.join(site, "%s.pth" % MODULE), "w") as f:
        f.write("import %s\n" % MODULE)
    print("the project is imported from the workspace's %s (%s)" % (root or "top", ", ".join(packages) or "nothing"))

MODULE = "@MODULE@"
BODY = """# Written by Workingset's environment build (cluster/eval/environments/project_source.py).
import os, sys
ROOTS = %s

def _add():
    here = os.getcwd()
    while True:
        for root, top in ROOTS:
            base = os.path.join(here, root) if root else here
            if os.path.isdir(os.path.join(base, top)) or os.path.isfile(os.path.join(base, top + ".py")):
                if base not in sys.path:
                    sys.path.append(base)
                return
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent

try:
    _add()
except OSError:
    pass
"""

if mode == "installed":
    print("\n".join(installed()))
else:
    source()
'''.replace("@MODULE@", MODULE_NAME)
