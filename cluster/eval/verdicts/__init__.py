"""Per-test verdicts: what a grade checked, from a reporter the harness supplies.

    command.py    a pytest test command recognised and rewritten (anything else: exit code)
    config.py     the pytest configuration a grade runs with: the base's, never the patch's
    files.py      the in-sandbox modules, copied where a sandbox can read them
    in_sandbox/   the boot module and the reporter plugin (run under the task's Python)
    pytest_run.py one run: the rewritten line in the sandbox, the records read back
    outcomes.py   records -> each test's outcome -> the reasons a verdict fails
"""
