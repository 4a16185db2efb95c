"""A kernel build's progress bar (UML's and the box's) has a total from kbuild's own dry run, and so an ETA."""

import stat

from mptcplab.places import kernel_build

# A stand-in for `make`: with -n it prints what kbuild's dry run prints (the echo commands, then
# the error where the final link needs what was not built); without, what a real build prints.
FAKE_MAKE = """#!/bin/sh
case " $* " in
  *" -n "*) case " $* " in *" -j"*) exit 2 ;; esac  # the dry run must be serial
            printf "%s\\n" "set -e; echo '  CC      init/main.o'; gcc -c init/main.c" \\
                   "set -e; echo '  AS      arch/x86/um/setjmp_64.o'; gcc -c x.S" \\
                   "set -e; echo '  AR      init/built-in.a'; ar x" \\
                   "set -e; echo '  HOSTCC  scripts/kallsyms'; cc x"
            echo "make[2]: *** No rule to make target 'vmlinux.a', needed by 'vmlinux.o'.  Stop." >&2
            exit 2 ;;
esac
printf "%s\\n" "  HOSTCC  scripts/kallsyms" "  CC      init/main.o" "  AS      arch/x86/um/setjmp_64.o" \\
       "  AR      init/built-in.a" "  LD      vmlinux" "  OBJCOPY linux"
"""


def _fake_make(tmp_path):
    make = tmp_path / "make"
    make.write_text(FAKE_MAKE)
    make.chmod(make.stat().st_mode | stat.S_IEXEC)
    return make


def test_object_lines_of_a_build_and_of_its_dry_run():
    for line in ("  CC      net/mptcp/protocol.o", "  AS      arch/x86/um/setjmp_64.o", "  LD      vmlinux",
                 "set -e;  echo '  CC      net/mptcp/protocol.o'; gcc ..."):
        assert len(kernel_build.OBJECT_LINE.findall(line)) == 1, line
    for line in ("  CC      net/mptcp/protocol.o", "  LD      vmlinux"):
        assert kernel_build.OBJECT_LINE.match(line), line  # how the build's own lines are matched
    # Two commands in one line (blocks of parallel sub-makes interleave): both counted.
    merged = "gcc -o a.o a.c; set -e; echo '  CC      b.o'; gcc -c b.c echo '  AS      c.o'"
    assert len(kernel_build.OBJECT_LINE.findall(merged)) == 2
    for line in ("  HOSTCC  scripts/kallsyms", "  AR      net/built-in.a", "make[1]: Entering directory",
                 "  GEN     Makefile", "set -e; echo '  HOSTCC  scripts/kallsyms'; cc"):
        assert not kernel_build.OBJECT_LINE.findall(line), line


def test_the_bar_has_a_total_and_an_eta_and_grows_past_the_dry_run(tmp_path, capsys):
    kernel_build.make_with_progress([str(_fake_make(tmp_path)), "-j2"], quiet=False, desc="[uml build] compiling", what="UML kernel")
    bar = capsys.readouterr().err.strip().splitlines()[-1].split("\r")[-1]
    # The dry run counted 2 objects; the build made 3 (the final link comes after the dry run's stop).
    assert "3/3 [" in bar and "<" in bar, bar


def test_in_a_log_each_redraw_is_its_own_line(tmp_path, capsys):
    # capsys's stderr is no terminal, as in CI or under nohup: no carriage returns, one line per redraw.
    kernel_build.make_with_progress([str(_fake_make(tmp_path)), "-j2"], quiet=False, desc="[uml build] compiling", what="UML kernel")
    err = capsys.readouterr().err
    assert "\r" not in err, repr(err)
    assert err.splitlines()[-1].startswith("[uml build] compiling: 100%"), err


def test_a_known_total_skips_the_dry_run_and_an_unknown_one_counts_without_eta(tmp_path, capsys):
    make = str(_fake_make(tmp_path))
    # The box kernel's last count: the bar's total (no dry run, which would have said 2).
    assert kernel_build.make_with_progress([make, "-j2"], quiet=False, desc="[box]", what="box kernel", total=10) == 3
    assert "3/10 [" in capsys.readouterr().err
    # No count yet: the bar counts what was made and promises no ETA.
    assert kernel_build.make_with_progress([make, "-j2"], quiet=False, desc="[box]", what="box kernel", total=None) == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "3obj" in last and "/" not in last.split("]")[1].split("[")[0], last
