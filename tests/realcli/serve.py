"""Run the scripted model server by hand, to reproduce a failure without spending:

    python -m tests.realcli.serve --home /tmp/fc-repro [--plan write|shell|repair|refused|silent]
                                  [--fault KIND[:MATCH[:TIMES]]]...

It writes every CLI's settings into a private HOME, prints the `env.sh` to source in another
shell (then run `flamechase exec ...` or a CLI as usual), logs each exchange on stderr, and
serves on 127.0.0.1 until Ctrl-C. KIND is rate_limit, overloaded, usage_limit, cut,
server_error or hang; MATCH picks conversations whose prompts contain it (default: all).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from tests.realcli import script
from tests.realcli.clis import realcli_env
from tests.realcli.server import ModelServer

PLANS = {
    "write": script.write_report,
    "shell": script.shell_report,
    "repair": script.repair_once,
    "refused": script.refused_then_write,
    "silent": script.silent,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="a private HOME to set up")
    parser.add_argument("--plan", choices=sorted(PLANS), default="write")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        help="KIND[:MATCH[:TIMES]], e.g. usage_limit:first_chaser:3",
    )
    args = parser.parse_args(argv)
    with ModelServer() as server:
        server.script.default = PLANS[args.plan]
        for spec in args.fault:
            kind, _, rest = spec.partition(":")
            match, _, times = rest.partition(":")
            server.script.fault(
                match,
                script.Fault(kind, retry_after=0),  # type: ignore[arg-type]
                int(times or 1),
            )
        env = realcli_env(args.home.absolute(), server.url)
        keep = {k: v for k, v in env.items() if k not in ("PATH", "PWD", "OLDPWD", "SHLVL", "_")}
        lines = [f"export {k}={shlex.quote(v)}" for k, v in sorted(keep.items())]
        lines.append(f"export PATH={shlex.quote(env['PATH'])}")
        env_file = args.home / "env.sh"
        env_file.write_text("\n".join(lines) + "\n")
        print(f"scripted model server on {server.url}; in another shell: . {env_file}", flush=True)
        seen = 0
        try:
            while True:
                time.sleep(0.5)
                for e in server.log[seen:]:
                    what = e.fault.kind if e.fault else type(e.step).__name__
                    print(f"{e.method} {e.path} -> {e.status} {what}", file=sys.stderr, flush=True)
                seen = len(server.log)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
