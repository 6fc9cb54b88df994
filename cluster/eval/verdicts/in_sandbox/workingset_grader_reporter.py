"""The grader's pytest plugin (runs inside the sandbox; Python 3.6 dialect).

Registered by the boot module before pytest reads any conftest, it writes what
happened — not what the exit code says — to the report file:

    start      pytest's version, the configuration file it used, its rootdir, the plugins
    hooks      implementations, outside pytest itself and this plugin, of the hooks that
               decide or rewrite an outcome (a conftest's makereport wrapper, say)
    collected  the test ids collected
    collect-error   a file or directory that failed to collect, with pytest's message
    test       one phase (setup, call, teardown) of one test: its outcome as reported,
               whether it was an expected failure, and whether the call raised
    finish     pytest's session-finish, with its exit status

`raised` is read from the call itself, not from the report, by the outermost makereport
wrapper, so a report rewritten to "passed" after the test raised is seen for what it is.
"""

import inspect
import os
import sys

import pytest

_report = None
_raised = {}
_OUTCOME_HOOKS = (
    "pytest_runtest_protocol",
    "pytest_runtest_call",
    "pytest_pyfunc_call",
    "pytest_runtest_makereport",
    "pytest_report_teststatus",
    "pytest_runtest_logreport",
    "pytest_collection_modifyitems",
)


def attach(report):
    global _report
    _report = report


def _short(text):
    import workingset_grader_boot

    return workingset_grader_boot.short(text)


def _source(plugin):
    """The file a plugin comes from: a module's own, or its class's module's."""
    module = plugin if inspect.ismodule(plugin) else sys.modules.get(type(plugin).__module__)
    return getattr(module, "__file__", None) or repr(plugin)


def _outside_pytest(plugin):
    if plugin is None or getattr(plugin, "__name__", "") == __name__:
        return False
    path = _source(plugin)
    return not (os.sep + "_pytest" + os.sep in path or os.sep + "pluggy" + os.sep in path)


def pytest_configure(config):
    inifile = getattr(config, "inipath", None) or getattr(config, "inifile", None)
    rootdir = getattr(config, "rootpath", None) or getattr(config, "rootdir", None)
    plugins = sorted(str(name) for name, plugin in config.pluginmanager.list_name_plugin() if plugin is not None)
    _report.write(
        {
            "event": "start",
            "pytest": pytest.__version__,
            "inifile": str(inifile or ""),
            "rootdir": str(rootdir or ""),
            "plugins": plugins,
        }
    )


def pytest_collectreport(report):
    if report.failed:
        _report.write({"event": "collect-error", "id": report.nodeid, "error": _short(report.longrepr)})


def pytest_collection_finish(session):
    hooks = []
    for name in _OUTCOME_HOOKS:
        caller = getattr(session.config.hook, name, None)
        for impl in caller.get_hookimpls() if caller is not None else ():
            if _outside_pytest(impl.plugin):
                hooks.append({"hook": name, "plugin": _source(impl.plugin)})
    if hooks:
        _report.write({"event": "hooks", "hooks": hooks})
    _report.write({"event": "collected", "ids": [item.nodeid for item in session.items]})


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    yield
    # After the other implementations: unittest's fills call.excinfo in there; a plugin
    # that rewrites the report's outcome leaves the call's exception where it was.
    _raised[(item.nodeid, call.when)] = call.excinfo is not None


def pytest_runtest_logreport(report):
    record = {
        "event": "test",
        "id": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "xfail": hasattr(report, "wasxfail"),
        "raised": _raised.pop((report.nodeid, report.when), False),
    }
    _report.write(record)


def pytest_sessionfinish(session, exitstatus):
    _report.write({"event": "finish", "exitstatus": int(exitstatus), "collected": int(session.testscollected)})
