"""Auto-grading of student notebooks with Otter-Grader's tests, run in a sandbox.

- `autograder`: `otter assign` on the masters in solutions/, the student notebooks, the autograder zips
  (and the Gradescope zip with the kit inside);
- `sandbox`: namespaces + size-limited tmpfs + the submission's own UID + rlimits + an allowlisted new root;
- `identity`: one UID per submission, leased from a reserved range (no per-user limit shared), its
  kernel keyrings cleared when the lease starts and ends;
- `cgroup`: one cgroup per submission (memory, TCP buffers, pids, CPU of its whole process tree);
- `reference`: the kit's own reference tables (and held-out inputs) the checks compare with;
- `answer_keys`: the kit functions and columns that compute graded answers, hidden while a notebook runs;
- `execute`: runs a submission's cells in the sandbox and sends back the values it computed;
- `checker`: runs the autograder's tests on those values in a second sandbox (allowlisted unpickler);
- `files`: submissions read as data (no link, FIFO, device, directory or second name) and the
  grader's own output files, never through a link;
- `intake`: a batch as handed in, sorted by lab; every file a row, whatever it is;
- `leftovers`: the batch's locked work directory, and what a killed grader left, removed;
- `report`: what the student reads and what the instructor keeps;
- `batch`: grading many submissions in parallel, and the gradebook CSV.
"""
