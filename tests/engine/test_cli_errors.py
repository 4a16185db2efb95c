"""The CLI turns the kit's errors, subclasses included, into one line and an exit status."""

from mptcplab.places import guest
from mptcplab.cli import main
from mptcplab.commands import uml as uml_command


def test_a_subclass_of_a_kit_error_is_reported_not_a_traceback(monkeypatch, capsys):
    def times_out(_args):
        raise guest.TimedOut("the command inside UML timed out")

    monkeypatch.setattr(uml_command, "_status", times_out)
    assert main(["uml", "status"]) == guest.TimedOut.exit_status
    assert "cannot run here: the command inside UML timed out" in capsys.readouterr().err
