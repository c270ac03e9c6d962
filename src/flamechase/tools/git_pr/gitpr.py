"""The runtime's git work for pull-request flows, one subcommand per job:

    init-central --source DIR --run RUN         (in the central repository's place) seed it
                                                with the baseline of the source
    clone --central DIR --name NAME [--outbox]  (in an empty place) a working clone
    export --central DIR --bundle FILE          (in a lane's clone, jailed as the lane) bundle
                                                what the lane pushed since the refs in
                                                FLAMECHASE_GIT_SEEN (JSON) were forwarded
    forward --central DIR --lane L [--bundle F] [--update REF=SHA]... [--delete REF]...
                                                (in the central repository) push a lane's ref
                                                updates through the hook, as that lane
    checkout --central DIR --commit SHA [--main SHA] [--allow GLOB]...
             [--baseline SHA --frozen PATH=SHA256... --named PATH... --watch GLOB...]
                                                (in an empty place) a clean checkout, the
                                                evaluator's frozen files judged and put back
    merge --pr ID --lane L --title T --head SHA --main SHA
                                                (in the integration clone) the runtime's merge
    push-main --central DIR --merge SHA --main SHA
                                                (in the central repository) main -> the merge

Policies for the hook come in FLAMECHASE_GIT_POLICY (see `tools.git_pr.hook`). Each prints one JSON
line: the result, or {"error": ...} with exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

from flamechase.tools.git_pr import central, clones
from flamechase.tools.git_pr.git import GitError, done, fail


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flamechase.tools.git_pr.gitpr")
    sub = p.add_subparsers(dest="job", required=True)
    s = sub.add_parser("init-central")
    s.add_argument("--source", type=Path, required=True)
    s.add_argument("--run", default="")
    s = sub.add_parser("clone")
    s.add_argument("--central", type=Path, required=True)
    s.add_argument("--name", required=True)
    s.add_argument("--outbox", action="store_true")
    s = sub.add_parser("export")
    s.add_argument("--central", type=Path, required=True)
    s.add_argument("--bundle", type=Path, required=True)
    s = sub.add_parser("forward")
    s.add_argument("--central", type=Path, required=True)
    s.add_argument("--lane", required=True)
    s.add_argument("--bundle", type=Path)
    s.add_argument("--update", action="append", default=[])
    s.add_argument("--delete", action="append", default=[])
    s = sub.add_parser("checkout")
    s.add_argument("--central", type=Path, required=True)
    s.add_argument("--commit", required=True)
    s.add_argument("--main")
    s.add_argument("--allow", action="append", default=[])
    s.add_argument("--baseline")
    s.add_argument("--frozen", action="append", default=[])
    s.add_argument("--named", action="append", default=[])
    s.add_argument("--watch", action="append", default=[])
    s = sub.add_parser("merge")
    for name in ("--pr", "--lane", "--title", "--head", "--main"):
        s.add_argument(name, required=True)
    s = sub.add_parser("push-main")
    s.add_argument("--central", type=Path, required=True)
    s.add_argument("--merge", required=True)
    s.add_argument("--main", required=True)
    return p


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    here = Path.cwd()
    policy = os.environ.get("FLAMECHASE_GIT_POLICY", "")
    try:
        if args.job == "init-central":
            done(central.init_central(here, args.source, args.run))
        if args.job == "clone":
            done(clones.clone(here, args.central, args.name, outbox=args.outbox))
        if args.job == "export":
            seen = json.loads(os.environ.get("FLAMECHASE_GIT_SEEN") or "{}")
            done(clones.export(here, args.central, args.bundle, seen))
        if args.job == "forward":
            # A ref name may hold "="; a commit id never does.
            updates = dict(u.rsplit("=", 1) for u in args.update)
            done(
                central.forward(args.central, args.lane, args.bundle, updates, args.delete, policy)
            )
        if args.job == "checkout":
            # A path may hold "="; a SHA-256 never does.
            frozen = dict(f.rsplit("=", 1) for f in args.frozen)
            done(
                clones.checkout(
                    here,
                    args.central,
                    args.commit,
                    args.main,
                    args.allow,
                    args.baseline,
                    frozen,
                    args.named,
                    args.watch,
                )
            )
        if args.job == "merge":
            done(clones.merge(here, args.pr, args.lane, args.title, args.head, args.main, policy))
        if args.job == "push-main":
            done(central.push_main(args.central, args.merge, args.main, policy))
    except (GitError, OSError, ValueError) as exc:
        fail(f"{args.job}: {exc}")


if __name__ == "__main__":
    main()
