"""Auto-grading of student notebooks with Otter-Grader's tests, run in a sandbox.

- `autograder`: `otter assign` on the masters in solutions/, the student notebooks, the autograder zips;
- `sandbox`: namespaces + unprivileged user + rlimits + hidden paths for untrusted code;
- `execute`: runs a submission's cells in the sandbox and saves the values it computed;
- `checker`: runs the autograder's tests on those values in a fresh sandboxed process;
- `batch`: the per-student reports and the gradebook CSV.
"""
