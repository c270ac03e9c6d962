"""Programs the runtime runs on a flow's behalf (`Run` commands), and the machine-work helpers
agents call from inside their jails (`flamechase job`, `flamechase lock`).

Each module is a small command-line program (`python -m flamechase.tools.NAME ...`) or the
library behind one: it works on the directory it is given and prints a machine-readable last
line. They run jailed like the place they work in, so they must not assume more than that
place, their lane's directory and what the jail lets them read. Imports: `fsutil`, `errors`
and `globs` only (leaves: a tool starts in a tenth of a second).
"""
