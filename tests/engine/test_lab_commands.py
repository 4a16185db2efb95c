"""A lab adds its own subcommands to the CLI (`Lab.commands`, commands/lab_commands.py): Lab 2's
`mptcplab cc` lives in its package, and a fourth lab's tool needs no edit outside its own."""

from mptcplab import cli
from mptcplab.commands import lab_commands
from mptcplab.run.lab import Lab


def test_lab2s_congestion_controls_are_its_own_command():
    args = cli.build_parser().parse_args(["cc", "list"])
    assert args.func.__module__ == "mptcplab.labs.lab2.cc.command"


def test_a_new_labs_command_reaches_the_cli(monkeypatch):
    def register(sub):
        sub.add_parser("toy-tool", help="the toy lab's own tool").set_defaults(func=lambda args: 7)

    toy = Lab(id="toy", slug="00-toy", title="toy", topology=None, points=None, measure=None, finish=None,
              analysis=None, commands=(register,))
    monkeypatch.setattr(lab_commands, "all_labs", lambda: {"toy": toy})
    assert cli.main(["toy-tool"]) == 7
