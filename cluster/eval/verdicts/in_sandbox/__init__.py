"""What runs inside the grader's sandbox, under the task's own interpreter.

These two modules are copied, read-only, into a directory the sandbox can see
(`GraderFiles`) and are never imported by the harness itself. They must run on every
Python a task environment may have (3.6 and later) and import nothing but the standard
library and pytest, so they are written in the Python 3.6 dialect.

    workingset_grader_boot.py      the interpreter's entry: site set up without any
                                   customize hook, pytest imported before any
                                   workspace path is on sys.path, plugin autoload off
    workingset_grader_reporter.py  the pytest plugin that writes one JSON record per
                                   event to the report file the harness reads
"""
